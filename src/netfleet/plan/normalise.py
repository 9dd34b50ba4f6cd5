"""What ``plan`` shows beside each run: rates and sizes normalised (so ``300M`` or ``40MB/s``
cannot be misread), and the expected wall time beside the maximum."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from netfleet.engines.burstable import full_burst_s
from netfleet.plan.matrix import PlannedRun
from netfleet.units import fmt_rate, parse_rate, parse_size

#: host name → its labels (spec, lab shapers, catalogue): what is known before a run
HostLabels = Mapping[str, Mapping[str, Any]]


def run_burst_s(run: PlannedRun, labels: HostLabels) -> float | None:
    """The longest full burst σ / (C − ρ) known of the run's two ends (their labels, or the
    lab's shapers: :func:`netfleet.engines.burstable.full_burst_s`), or None."""
    ends = {run.client, run.server}
    known = [b for h in ends if (b := full_burst_s(labels.get(h, {}))) is not None]
    return max(known, default=None)


def expected_run_seconds(run: PlannedRun, labels: HostLabels | None = None) -> float:
    """How long ``run`` is expected to take: an adaptive run's first possible stop, after its
    hosts' burst when their labels or the lab's shapers give it."""
    return run.params.expected_seconds(run_burst_s(run, labels or {}))


def expected_wall_seconds(
    runs: Sequence[PlannedRun], maximum: float, labels: HostLabels | None = None
) -> float:
    """The wall time if every run takes its expected time (:func:`expected_run_seconds`),
    scaled like the maximum (the scheduler's estimate) so concurrency is accounted for the
    same way. ``plan`` and ``run`` both say this figure."""
    worst = sum(r.params.measured_seconds() for r in runs)
    likely = sum(expected_run_seconds(r, labels) for r in runs)
    return maximum * likely / worst if worst > 0 else maximum


#: params that hold a rate (bits/s) or a size (bytes), shown normalised by ``plan``
RATE_PARAMS = ("bitrate", "bandwidth", "rate", "peak", "baseline")
SIZE_PARAMS = ("window", "length", "bucket", "size", "buffer")


def normalised(params: dict[str, Any]) -> str:
    """``bitrate: 300M`` → ``bitrate=300 Mbit/s (300000000 bit/s)``; sizes in bytes."""
    out = []
    for key, value in params.items():
        if key in RATE_PARAMS and isinstance(value, str | int | float):
            bps = parse_rate(value)
            out.append(f"{key}={fmt_rate(bps)} ({bps:.0f} bit/s)")
        elif key in SIZE_PARAMS and isinstance(value, str | int | float):
            out.append(f"{key}={parse_size(value):.0f} B")
    return ", ".join(out)
