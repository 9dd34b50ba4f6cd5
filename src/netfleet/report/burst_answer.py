"""The answer seed 004 was written for, per credit ("up to") host: it bursts at X for τ s, then
gives Y; its bucket is about Z — in the cloud's units when the run was a scaled lab's, with the
lab's figures beside them — and the calculator command that answers the next question.

Read from the group's combined burst analysis (runs that show a burst then a baseline), never
from a mean over runs at different levels.
"""

from __future__ import annotations

from dataclasses import dataclass

from netfleet.analysis import GroupAnalysis
from netfleet.analysis.calculator import BucketModel
from netfleet.analysis.estimate import Estimate
from netfleet.errors import InputError
from netfleet.report.labscale import LabScale, bits_text, common_scale, rate_text, seconds_text
from netfleet.report.numbers import sig

BURST_KINDS = ("burst", "burst-unfinished")


@dataclass(frozen=True)
class BurstAnswer:
    label: str
    peak: Estimate
    baseline: Estimate | None
    seconds: Estimate | None
    bucket: Estimate | None
    scale: LabScale | None

    def sentence(self) -> str:
        s = self.scale
        parts = [f"{self.label}: bursts at {rate_text(self.peak.value, s)}"]
        if self.seconds is not None:
            at_least = "at least " if self.baseline is None else ""
            parts.append(f" for {at_least}{seconds_text(self.seconds.value, s)}")
        if self.baseline is not None:
            parts.append(f", then gives {rate_text(self.baseline.value, s)}")
        else:
            parts.append(", and the run ended before the baseline (a longer run would show it)")
        if self.bucket is not None:
            approx = "≥" if self.bucket.lower_bound else "≈"
            parts.append(f"; bucket {approx} {bits_text(self.bucket.value, s)}")
        return "".join(parts) + "."

    def cloud(self) -> BucketModel | None:
        """ρ, C, σ in the cloud's units (the lab's when unscaled), or None when incomplete."""
        if self.baseline is None or self.bucket is None:
            return None
        s = self.scale
        rate = 1.0 if s is None else 1 / s.rate
        size = 1.0 if s is None else 1 / (s.rate * s.time)
        try:
            return BucketModel(
                self.baseline.scaled(rate), self.peak.scaled(rate), self.bucket.scaled(size)
            )
        except InputError:
            return None

    def calc_command(self) -> str | None:
        m = self.cloud()
        if m is None:
            return None
        return (
            f"netfleet credit calc --baseline {_mbit(m.baseline.value)} "
            f"--peak {_mbit(m.peak.value)} --bucket {sig(m.bucket.value / 1e9)}gbit"
        )


def _mbit(bps: float) -> str:
    return f"{sig(bps / 1e9)}gbit" if bps >= 1e9 else f"{sig(bps / 1e6)}mbit"


def burst_answer(group: GroupAnalysis) -> BurstAnswer | None:
    """The group's answer, or None when its runs show no burst."""
    c = group.combined()
    if c.kind not in BURST_KINDS or c.peak is None:
        return None
    seconds = c.burst_seconds
    if seconds is None and c.bucket is not None and c.baseline is not None:
        gap = c.peak.value - c.baseline.value
        if gap > 0:
            seconds = Estimate(c.bucket.value / gap)
    label = " · ".join(str(v) for v in group.keys.values() if v is not None)
    return BurstAnswer(
        label,
        c.peak,
        c.baseline if c.kind == "burst" else None,
        seconds,
        c.bucket,
        common_scale(a.run.labels for a in group.runs),
    )
