"""A campaign expanded into its runs, with its estimated wall time (what ``netfleet plan``
shows; built by :func:`netfleet.api.plan`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from netfleet.plan.matrix import PlannedRun
from netfleet.spec.models import CampaignSpec
from netfleet.tabular import Tabular


@dataclass(frozen=True)
class Plan:
    """A campaign expanded into its runs, with the estimated wall time."""

    spec: CampaignSpec
    runs: list[PlannedRun]
    concurrency: int
    estimated_seconds: float
    #: what launching the campaign's cloud machines would cost (None: no cloud hosts, or not
    #: asked for)
    cost: Tabular | None = None
    #: host name → its labels as known before any run (spec, a lab's shapers): an adaptive
    #: run's expected time adds its hosts' burst σ / (C − ρ) from them
    host_labels: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: burstable hosts a burst test would use within their refill time (one line each)
    refill: list[str] = field(default_factory=list)
