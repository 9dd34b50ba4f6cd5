"""The library facade: one function per thing the CLI does, for use from Python.

The CLI modules parse arguments, call these and render what they return. Each function imports
what it needs when called, so ``import netfleet.api`` is cheap.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from netfleet.plan.matrix import PlannedRun
    from netfleet.spec.models import CampaignSpec


@dataclass(frozen=True)
class Plan:
    """A campaign expanded into its runs, with the estimated wall time."""

    spec: CampaignSpec
    runs: list[PlannedRun]
    concurrency: int
    estimated_seconds: float


def plan(spec_path: Path | str) -> Plan:
    """Expand a campaign spec into its runs and estimate the wall time. Runs nothing."""
    from netfleet.plan import estimate_seconds, expand
    from netfleet.runner.scheduler import Limits, estimate_wall_seconds
    from netfleet.spec import load_spec

    spec = load_spec(Path(spec_path))
    runs = expand(spec)
    limits = Limits.of(spec)
    est = (
        estimate_wall_seconds(runs, limits)
        if limits.concurrency > 1
        else estimate_seconds(spec, runs)
    )
    return Plan(spec, list(runs), limits.concurrency, est)


def run(spec_path: Path | str, results: str, **kwargs: Any) -> Any:
    """Run a campaign (see :func:`netfleet.runner.run_campaign` for the keyword arguments)."""
    import asyncio

    from netfleet.runner import run_campaign
    from netfleet.spec import load_spec
    from netfleet.store import open_root

    spec = load_spec(Path(spec_path))
    return asyncio.run(run_campaign(spec, open_root(results), **kwargs))


def ingest(results: str, catalog: Path, **kwargs: Any) -> Any:
    """Turn raw result files into the Parquet catalog (idempotent)."""
    from netfleet.catalog import ingest as run_ingest
    from netfleet.store import open_root

    return run_ingest(open_root(results), catalog, **kwargs)


def cheatsheet(catalog: Path, **kwargs: Any) -> Any:
    """Min / p5 / avg / p50 / p95 / max of interval goodput per group."""
    from netfleet.catalog import cheatsheet as build

    return build(catalog, **kwargs)


def doctor(spec_path: Path | str, **kwargs: Any) -> Any:
    """Check every host and client→server pair of a campaign before running it."""
    from netfleet.doctor import doctor as run_doctor
    from netfleet.spec import load_spec

    return run_doctor(load_spec(Path(spec_path)), **kwargs)


def lab_up(lab: str, **kwargs: Any) -> Any:
    """Bring an emulated lab up (namespaces, switch, shapers). Needs root."""
    from netfleet import lab as labmod

    return labmod.up(lab, **kwargs)


def lab_down(name: str, **kwargs: Any) -> Any:
    """Tear a lab down (only what netfleet created)."""
    from netfleet import lab as labmod

    return labmod.down(name, **kwargs)
