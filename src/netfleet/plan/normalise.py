"""What ``plan`` shows beside each run: rates and sizes normalised (so ``300M`` or ``40MB/s``
cannot be misread), and the expected wall time beside the maximum."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from netfleet.plan.matrix import PlannedRun
from netfleet.units import fmt_rate, parse_rate, parse_size


def expected_wall_seconds(runs: Sequence[PlannedRun], maximum: float) -> float:
    """The wall time if every run takes its expected time, scaled like the maximum (the
    scheduler's estimate) so concurrency is accounted for the same way."""
    worst = sum(r.params.measured_seconds() for r in runs)
    likely = sum(r.params.expected_seconds() for r in runs)
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
