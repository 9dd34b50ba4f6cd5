"""What a report is about: the complete throughput runs of some campaigns (or the whole catalog),
grouped per instance type and direction and analysed for burst vs baseline once, shared by the
price table, the HTML report and its plots."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass

from netfleet.analysis import GroupAnalysis, analyze_group, analyzed_raw, catalog_runs, group_runs
from netfleet.analysis.credit import CreditEstimate
from netfleet.analysis.estimate import Estimate
from netfleet.analysis.stats import t975
from netfleet.catalog.topology import THROUGHPUT_ENGINES
from netfleet.errors import InputError

GROUP_KEYS = ("instance_type", "direction")
#: engines whose runs are analysed from their raw file (their series are phases)
RAW_ONLY = frozenset({"credit"})


@dataclass(frozen=True)
class Rates:
    """A group's sustained and peak rate (bits/s, goodput) and how they were read."""

    kind: str
    sustained: Estimate | None
    peak: Estimate | None


def throughput_groups(
    catalog_dir: str | os.PathLike[str],
    campaigns: Sequence[str] = (),
    by: Sequence[str] = GROUP_KEYS,
) -> list[GroupAnalysis]:
    """Complete throughput runs of ``campaigns`` (all when empty), analysed per group."""
    runs = []
    chosen: list[str | None] = list(campaigns) or [None]
    for campaign in chosen:
        runs += catalog_runs(catalog_dir, campaign)
    if campaigns and not runs:
        raise InputError(
            f"no complete runs for campaign(s) {', '.join(campaigns)}",
            hint="netfleet sql 'SELECT DISTINCT campaign FROM runs' lists the campaigns",
        )
    engines = {*THROUGHPUT_ENGINES, *RAW_ONLY}
    runs = [(i, r) for i, r in runs if i.row.get("engine") in engines]
    prepared = analyzed_raw(
        catalog_dir, [i.run_id for i, rows in runs if not rows and i.row.get("engine") in RAW_ONLY]
    )
    return [
        analyze_group(dict(zip(by, key, strict=True)), members, prepared=prepared)
        for key, members in group_runs(runs, by).items()
    ]


def rates_of(group: GroupAnalysis) -> Rates:
    """Sustained = the baseline of a credit host, the level of a steady one; peak = the burst
    level, or the steady level."""
    c = group.combined()
    if c.kind in ("burst", "baseline-only"):
        return Rates(c.kind, c.baseline, c.peak or c.baseline)
    if c.kind == "burst-unfinished":
        return Rates(c.kind, None, c.peak)
    if c.kind in ("steady", "erratic") and c.rate is not None:
        return Rates(c.kind, c.rate, c.rate)
    level = mean_level(group)
    if level is not None:  # runs too short to tell a burst from noise: their mean level
        return Rates("level (too short for burst detection)", level, level)
    return Rates(c.kind, None, None)


def mean_level(group: GroupAnalysis) -> Estimate | None:
    """The mean of the runs' mean rates, ± t·s/√k over runs (± 0 for one run)."""
    means = [
        float(a.series.bits.sum() / a.series.seconds.sum())
        for a in group.runs
        if a.series is not None and a.series.n and a.series.seconds.sum() > 0
    ]
    if not means:
        return None
    k = len(means)
    mean = sum(means) / k
    if k == 1:
        return Estimate(mean, 0.0)
    sd = math.sqrt(sum((m - mean) ** 2 for m in means) / (k - 1))
    return Estimate(mean, t975(k - 1) * sd / math.sqrt(k))


def burst_runs(group: GroupAnalysis) -> list[CreditEstimate]:
    return [a.credit for a in group.runs if a.credit.kind in ("burst", "burst-unfinished")]
