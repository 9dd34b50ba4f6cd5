"""A watch's checked settings (the facade builds them from the flags and the spec)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from netfleet.spec.models import CampaignSpec
from netfleet.watch.alerts import Webhook
from netfleet.watch.baseline import Settings


@dataclass(frozen=True)
class WatchConfig:
    spec: CampaignSpec
    results: str
    catalog: Path
    state_dir: Path
    every: float
    settings: Settings
    #: rounds to run (None: until interrupted)
    rounds: int | None = None
    metrics_file: Path | None = None
    webhook: Webhook | None = None
    listen: tuple[str, int] | None = None
    lab_state_dir: Path | None = None
    metrics: tuple[str, ...] = ("goodput", "rr_p50", "rr_p99", "ping_mean")
