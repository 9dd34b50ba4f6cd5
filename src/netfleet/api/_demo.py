"""``demo``: the whole pipeline on an emulated fleet."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from netfleet.demo import DemoResult
    from netfleet.runner.events import Reporter


@dataclass(frozen=True)
class SteadyCheck:
    """The steady host's average in one direction against its shaper's goodput."""

    direction: str
    #: the lab's figures (Gbit/s goodput), as its shaper gives them
    measured_gbps: float
    expected_gbps: float
    ok: bool
    #: the measured average as the cloud figure it stands for (None: the lab is not scaled)
    cloud_gbps: float | None = None

    @property
    def delta(self) -> float:
        return self.measured_gbps / self.expected_gbps - 1


@dataclass
class DemoOutcome:
    result: DemoResult
    steady: list[SteadyCheck] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        """A run failed or the steady host missed its shaper: exit status 3."""
        return bool(self.result.campaign.failed) or not self.result.steady_ok


def demo(
    *,
    dir: Path = Path("netfleet-demo"),
    state_dir: Path | None = None,
    reporter: Reporter | None = None,
    say: Callable[[str], None] | None = None,
) -> DemoOutcome:
    """Lab up (steady, credit-burst and asymmetric hosts + a big server), a campaign over both
    directions and 1 vs 2 streams, ingest, cheat sheet, study report, lab down. Needs root.
    Results, catalog and report go under ``dir``."""
    from netfleet.api._aio import run_sync
    from netfleet.demo import TOLERANCE, run_demo

    res = run_demo(dir, reporter, state_dir, run_async=run_sync, say=say or (lambda _m: None))
    checks = [
        SteadyCheck(
            direction,
            got,
            res.steady_expected_gbps,
            abs(got / res.steady_expected_gbps - 1) <= TOLERANCE,
            res.steady_cloud_gbps.get(direction),
        )
        for direction, got in sorted(res.steady_measured_gbps.items())
    ]
    return DemoOutcome(res, checks)
