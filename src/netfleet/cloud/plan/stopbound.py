"""How long a type's runs may last, bounded by its catalogue figures (issue 25.2, 27.8).

The adaptive stop ends a run once its level is steady *with evidence* (netfleet.engines.
burstable). In the cloud the evidence often exists before the first byte: DescribeInstanceTypes
gives each type's baseline and peak Gbit/s. A type whose baseline equals its peak has no credits
to spend, so a short steady window answers min/avg/p95; a burstable type bursts for
τ = bucket ÷ (peak − baseline) (the calculator's burst time) and then needs a few seconds at
baseline after the drop. Without a bucket, the longest burst AWS documents (60 min) bounds it.
:func:`bound` says how long and why, so a plan names the types that will be long.
"""

from __future__ import annotations

from dataclasses import dataclass

from netfleet.cloud.seam import Advertised
from netfleet.engines.burstable import LONGEST_DOCUMENTED_BURST_S, burst_seconds

#: a steady level's window: min/avg/p95 over this many 1-s intervals
STEADY_S = 60.0
#: seconds at baseline after the drop (the adaptive stop's τ + 30 s)
AFTER_DROP_S = 30.0
#: margin on a burst time derived from a bucket (a bucket is an estimate: ± its spread)
BURST_MARGIN = 0.25


@dataclass(frozen=True)
class Bound:
    seconds: float  #: the run's maximum
    why: str
    long: bool  #: longer than a steady window: the plan names it


def bound(
    info: Advertised | None,
    *,
    bucket_gbit: float | None = None,
    longest_burst_s: float | None = None,
    steady_s: float = STEADY_S,
) -> Bound:
    """The longest a type's run needs: see the module doc. ``bucket_gbit`` (a measured or
    calculator bucket) or ``longest_burst_s`` (the user's longest plausible burst) shorten a
    burstable type's bound."""
    if info is None or info.baseline_gbps is None or info.peak_gbps is None:
        if longest_burst_s is not None:
            return Bound(longest_burst_s + AFTER_DROP_S,
                         f"no catalogue figures: the longest plausible burst given "
                         f"({longest_burst_s:.0f} s) + {AFTER_DROP_S:.0f} s", True)  # fmt: skip
        return Bound(
            LONGEST_DOCUMENTED_BURST_S + AFTER_DROP_S,
            f"no catalogue figures: the longest documented burst (60 min) + {AFTER_DROP_S:.0f} s",
            True,
        )
    base, peak = info.baseline_gbps, info.peak_gbps
    if peak <= base or not info.burstable:
        return Bound(
            steady_s,
            f"catalogue: baseline = peak = {base:g} Gbit/s, no credits: "
            f"{steady_s:.0f} s steady answers min/avg/p95",
            False,
        )
    if bucket_gbit is not None:
        tau = burst_seconds(bucket_gbit, base, peak)
        secs = tau * (1 + BURST_MARGIN) + AFTER_DROP_S
        return Bound(
            secs,
            f"burstable {base:g}→{peak:g} Gbit/s, bucket ≈ {bucket_gbit:,.0f} Gbit: burst "
            f"τ ≈ {tau:.0f} s (+{BURST_MARGIN:.0%}) + {AFTER_DROP_S:.0f} s at baseline",
            True,
        )
    if longest_burst_s is not None:
        return Bound(
            longest_burst_s + AFTER_DROP_S,
            f"burstable {base:g}→{peak:g} Gbit/s: the longest plausible burst given "
            f"({longest_burst_s:.0f} s) + {AFTER_DROP_S:.0f} s",
            True,
        )
    return Bound(
        LONGEST_DOCUMENTED_BURST_S + AFTER_DROP_S,
        f"burstable {base:g}→{peak:g} Gbit/s, bucket unknown: the longest documented burst "
        f"(60 min) + {AFTER_DROP_S:.0f} s",
        True,
    )
