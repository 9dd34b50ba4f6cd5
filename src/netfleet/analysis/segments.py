"""Segment a 1 s rate series into levels and classify it.

Method (docs/analysis.md has the reasoning):

1. Work on log rates: shaping noise is relative, and a drop from 10 to 0.75 Gbit/s is then a
   step like any other.
2. Noise σ from the first differences: MAD(Δ log x)/√2, floored at ``noise_floor``.
3. Despike: a centered running median (``despike_width`` = 5 removes dips of one or two
   intervals and keeps steps between longer runs exactly).
4. Change points by ruptures ``Pelt`` (L2 cost, ``jump=1``, ``min_size``) with a BIC-like
   penalty β = ``penalty_factor`` · ln n · σ² — tied to the measured noise, no absolute
   threshold.
5. Adjacent segments whose levels differ by less than ``min_relative_change`` are merged (a real
   but irrelevant shift).
6. The result is always compared with the no-change model: the segmented fit must lower the cost
   by more than k · β. Otherwise the series is ``steady``.

Classes: ``steady`` (no change point accepted), ``burst-then-baseline`` (every change is a
drop), ``erratic`` (a level rises again, or no stable level: σ above ``erratic_noise``), and
``inconclusive`` (too little data, with the reason).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import ruptures as rpt
from ruptures.base import BaseCost

from netfleet.analysis.series import Series
from netfleet.analysis.stats import (
    FloatArray,
    diff_autocorrelation,
    diff_noise,
    hampel,
    mean_interval,
)

#: φ is capped here: beyond it the series is a random walk, not noise around levels
MAX_AUTOCORRELATION = 0.8
Classification = Literal["steady", "burst-then-baseline", "erratic", "inconclusive"]


@dataclass(frozen=True)
class SegmentationConfig:
    """Tuning, all relative to the data: sample counts, noise multiples and ratios."""

    #: the shortest level, in intervals (also: fewer than 2 × min_size samples is inconclusive)
    min_size: int = 3
    #: β = penalty_factor · ln(n) · σ²; 2 is BIC for a change (its place and its new level)
    penalty_factor: float = 3.0
    #: levels closer than this (relative) are one level
    min_relative_change: float = 0.05
    #: running-median width used to despike before change-point search (odd, ≥ 1)
    despike_width: int = 5
    #: the noise estimate never goes below this relative σ (counters have finite resolution)
    noise_floor: float = 0.002
    #: a series whose relative 1 s noise exceeds this has no stable level: erratic
    erratic_noise: float = 0.25
    #: a sample further than this many σ from its level is an outlier, not part of the level
    outlier_sigmas: float = 4.0

    @property
    def min_samples(self) -> int:
        return 2 * self.min_size


@dataclass(frozen=True)
class Segment:
    """One level: samples ``[first, stop)`` of the series."""

    first: int
    stop: int
    start_s: float  # start time of the first interval (series time, lead excluded)
    end_s: float  # end time of the last interval
    level: float  # mean rate of the core samples, bits/s
    err: float  # half-width of the 95 % interval of ``level``
    core: int  # samples used for the level
    outliers: int  # samples left out: spikes and dips, partial (transition) intervals

    @property
    def n(self) -> int:
        return self.stop - self.first


@dataclass(frozen=True)
class NoChangeTest:
    """The segmented fit against the no-change model, in units of σ² (log-rate domain)."""

    cost_no_change: float
    cost_segmented: float
    penalty_per_change: float
    changes: int
    accepted: bool

    @property
    def improvement(self) -> float:
        return self.cost_no_change - self.cost_segmented

    @property
    def margin(self) -> float:
        """Cost reduction left after paying the penalty: > 0 means the changes are real."""
        return self.improvement - self.changes * self.penalty_per_change

    def summary(self) -> str:
        if self.changes == 0:
            return "no change point proposed: the no-change model stands"
        verdict = "accepted" if self.accepted else "rejected: no-change model kept"
        return (
            f"{self.changes} change(s) lower the cost by {self.improvement:.1f} σ² vs a penalty "
            f"of {self.changes * self.penalty_per_change:.1f} σ² — {verdict}"
        )


@dataclass(frozen=True)
class Segmentation:
    classification: Classification
    segments: tuple[Segment, ...] = ()
    #: relative 1 s noise (σ of log rate)
    noise: float = 0.0
    test: NoChangeTest | None = None
    reason: str = ""
    notes: tuple[str, ...] = field(default=())

    @property
    def changes(self) -> int:
        return max(0, len(self.segments) - 1)


def _ssr(y: FloatArray, bounds: list[int]) -> float:
    total, first = 0.0, 0
    for stop in bounds:
        part = y[first:stop]
        total += float(((part - part.mean()) ** 2).sum())
        first = stop
    return total


def _merge_close(y: FloatArray, bounds: list[int], min_log_step: float) -> list[int]:
    """Merge the closest adjacent levels while any two differ by less than ``min_log_step``.
    Levels are medians: a partial interval at a change does not make a level of its own."""
    bounds = list(bounds)
    while len(bounds) > 1:
        firsts = [0, *bounds[:-1]]
        means = [float(np.median(y[a:b])) for a, b in zip(firsts, bounds, strict=True)]
        steps = [abs(means[i + 1] - means[i]) for i in range(len(means) - 1)]
        i = int(np.argmin(steps))
        if steps[i] >= min_log_step:
            break
        del bounds[i]
    return bounds


def _level(
    series: Series, y: FloatArray, first: int, stop: int, noise: float, cfg: SegmentationConfig
) -> Segment:
    """Mean rate of a segment from its core samples: outliers (> outlier_sigmas · σ from the
    segment's median, in log rate) are left out — spikes, dips and partial intervals at a
    change."""
    part = y[first:stop]
    centre = float(np.median(part))
    keep = np.abs(part - centre) <= cfg.outlier_sigmas * noise
    if not keep.any():
        keep[:] = True
    rates = series.rate[first:stop][keep]
    level, err = mean_interval(rates, noise * float(np.exp(centre)))
    if keep.sum() < 2:  # no two samples agree: the level is only known to lie in their range
        every = series.rate[first:stop]
        level = float(np.median(every))
        err = max(err, float(every.max() - level), float(level - every.min()))
    return Segment(
        first=first,
        stop=stop,
        start_s=float(series.start[first]),
        end_s=float(series.end[stop - 1]),
        level=level,
        err=err,
        core=int(keep.sum()),
        outliers=int((~keep).sum()),
    )


class CumulativeL2(BaseCost):
    """ruptures' L2 cost (squared deviations from the segment mean) from cumulative sums: O(1)
    per segment instead of O(length), which keeps Pelt fast on hour-long 1 s series."""

    model = "l2-cumulative"
    min_size = 2

    def fit(self, signal: FloatArray) -> CumulativeL2:
        x = np.asarray(signal, dtype=np.float64).reshape(-1)
        self.signal = x.reshape(-1, 1)
        self.s1 = np.concatenate(([0.0], np.cumsum(x)))
        self.s2 = np.concatenate(([0.0], np.cumsum(x * x)))
        return self

    def error(self, start: int, end: int) -> float:
        total = self.s1[end] - self.s1[start]
        return float(max(self.s2[end] - self.s2[start] - total * total / (end - start), 0.0))


def log_rates(series: Series) -> FloatArray:
    """log of each interval's rate, stalls clamped at 1/1000 of the median rate."""
    rate = series.rate
    floor = max(float(np.median(rate)) * 1e-3, 1.0)
    return np.log(np.maximum(rate, floor))


def segment(series: Series, config: SegmentationConfig | None = None) -> Segmentation:
    """Find the levels of ``series`` and classify it (see the module docstring)."""
    cfg = config or SegmentationConfig()
    n = series.n
    if n < cfg.min_samples:
        return Segmentation(
            "inconclusive",
            reason=f"too little data: {n} interval(s); at least {cfg.min_samples} are needed to "
            f"tell a level change from noise (levels of ≥ {cfg.min_size} intervals each side)",
        )
    if float(np.median(series.rate)) <= 0.0:
        return Segmentation("inconclusive", reason="no data received in most intervals")
    y = log_rates(series)
    noise = max(diff_noise(y), cfg.noise_floor)
    clean, spikes = hampel(y, cfg.despike_width, cfg.outlier_sigmas * noise)
    phi = min(max(diff_autocorrelation(clean), 0.0), MAX_AUTOCORRELATION)
    # long-run variance of AR(1) noise: runs of correlated noise must not pass for levels
    scale = noise**2 * (1 + phi) / (1 - phi) ** 2
    penalty = cfg.penalty_factor * math.log(n)
    cost = CumulativeL2()
    cost.min_size = cfg.min_size
    algo = rpt.Pelt(custom_cost=cost, min_size=cfg.min_size, jump=1).fit(clean)
    bounds = [int(b) for b in algo.predict(pen=penalty * scale)]
    bounds = _merge_close(y, bounds, math.log1p(cfg.min_relative_change))
    test = NoChangeTest(
        cost_no_change=_ssr(clean, [n]) / scale,
        cost_segmented=_ssr(clean, bounds) / scale,
        penalty_per_change=penalty,
        changes=len(bounds) - 1,
        accepted=False,
    )
    accepted = test.changes > 0 and test.margin > 0
    test = NoChangeTest(**{**test.__dict__, "accepted": accepted})
    if not accepted:
        bounds = [n]
    firsts = [0, *bounds[:-1]]
    segments = tuple(
        _level(series, y, a, b, noise, cfg) for a, b in zip(firsts, bounds, strict=True)
    )
    notes = (
        [f"{int(spikes.sum())} spike(s)/dip(s) of 1–2 intervals ignored"] if spikes.any() else []
    )
    if phi > 0.05:
        notes.append(f"1 s noise is autocorrelated (φ = {phi:.2f}): penalty raised to match")
    if noise > cfg.erratic_noise:
        return Segmentation(
            "erratic",
            segments,
            noise,
            test,
            reason=f"no stable level: 1 s rates vary by ±{noise:.0%} (σ of log rate) "
            f"> {cfg.erratic_noise:.0%}",
            notes=tuple(notes),
        )
    if len(segments) == 1:
        return Segmentation("steady", segments, noise, test, notes=tuple(notes))
    rises = [i for i in range(1, len(segments)) if segments[i].level > segments[i - 1].level]
    if rises:
        return Segmentation(
            "erratic",
            segments,
            noise,
            test,
            reason=f"{len(segments)} levels and the rate rises {len(rises)} time(s): not a "
            "single burst that ends",
            notes=tuple(notes),
        )
    return Segmentation("burst-then-baseline", segments, noise, test, notes=tuple(notes))
