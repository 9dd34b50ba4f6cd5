"""Issue 9 case 4, the blind check's one wrong class: a CPU-starved sender's burst (two busy
loops in a 2-core host's namespace, a 1.67 Gbit/s shaper peak) wandered between 0.7 and 1.35
Gbit/s, then dropped to a clean 143 Mbit/s baseline. The segmentation cut the burst into two to
four levels, some rising, and the run was called "erratic" — credit calc refused it. It is one
bucket draining: classified burst-then-baseline, the peak the burst's mean with the levels'
spread as its ±, the bucket and baseline as tight as ever.

SERIES and RISING are two such runs' receiver goodput per 1 s interval, as measured (Mbit/s),
from ``bench/credit_accuracy.py --blind --profiles 8 --blind-max-duration 150 --pick b2
--busy-loops 2 --keep DIR`` (profile b2: 149.9 → 1665.6 Mbit/s for 13 s)."""

from __future__ import annotations

import pytest

from netfleet.analysis.analyze import analyze_series
from netfleet.analysis.segments import segment
from netfleet.analysis.series import RunInfo, Series

SERIES = [
    1352.2, 1311.9, 926.0, 791.9, 741.3, 911.6, 737.3, 810.9, 1040.7, 749.0, 871.0, 1004.0,
    1030.9, 989.0, 944.9, 949.4, 512.2, 808.6, 930.1, 840.8, 824.0, 707.5, 947.3, 877.3, 776.1,
    693.2, *[143.0, 143.5, 143.2, 143.5, 143.5, 143.0, 143.6, 143.3, 143.2, 143.1, 143.5, 143.2,
    143.3, 143.4, 143.7, 143.2, 143.3, 143.5, 143.3, 143.4] + [143.3] * 9,
]  # fmt: skip
#: the same profile again: two levels, the second higher (898 → 1181 Mbit/s), then the drop
RISING = [
    406.7, 957.5, 837.9, 964.9, 872.1, 857.5, 1161.7, 1169.8, 1073.5, 1046.5, 1155.4, 1229.5,
    1207.6, 1138.5, 1152.7, 1272.0, 1243.3, 1315.2, 1237.7, 1129.1, 928.4,
    *[143.3, 143.7, 143.0, 143.3, 143.8, 143.0, 143.6, 143.1, 143.6, 143.3, 143.3, 143.4],
    *[143.3] * 10, 143.1, 143.3, 143.6, 143.4, 143.0, 143.6, 143.3, 143.4,
]  # fmt: skip
#: the shaper: baseline 149.9 Mbit/s wire, bucket (1665.6 − 149.9) Mbit/s × 13.34 s
BASELINE_WIRE, BUCKET_BITS = 149.9e6, 20.22e9


@pytest.mark.parametrize("rates", [SERIES, RISING], ids=["wandering", "rising"])
def test_a_wandering_burst_before_one_clean_drop_is_one_burst(rates: list[float]) -> None:
    series = Series.from_rates([r * 1e6 for r in rates])
    seg = segment(series)
    assert seg.classification == "burst-then-baseline"
    assert any("the burst's level wandered" in n for n in seg.notes)
    a = analyze_series(RunInfo("b2", mtu=1500, protocol="tcp", parallel=2), series)
    wire = a.credit.as_wire()
    assert wire.kind == "burst"
    assert wire.baseline is not None and wire.baseline.contains(BASELINE_WIRE, slack=0.001)
    assert wire.bucket is not None and abs(wire.bucket.value / BUCKET_BITS - 1) < 0.01
    # the peak is the burst's mean and its ± spans the levels it wandered between
    [levels] = [n for n in seg.notes if "wandered" in n]
    low, high = (float(x) for x in levels.split(" Mbit/s")[0].split(", ")[1].split("–"))
    assert wire.peak is not None and wire.peak.err >= 0.5 * (high - low) * 1e6 * 0.99


def test_a_second_burst_after_a_refill_is_not_merged() -> None:
    """Burst, baseline, burst again, baseline: the rise is back from the baseline's level."""
    rates = [800.0] * 8 + [143.0] * 8 + [800.0] * 8 + [143.0] * 10
    seg = segment(Series.from_rates([r * 1e6 for r in rates]))
    assert seg.classification == "erratic"


def test_levels_too_far_apart_to_be_one_wandering_level_stay_erratic() -> None:
    rates = [400.0] * 8 + [1200.0] * 8 + [143.0] * 12
    seg = segment(Series.from_rates([r * 1e6 for r in rates]))
    assert seg.classification == "erratic"
