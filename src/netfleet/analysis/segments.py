"""Segment a 1 s rate series into levels and classify it.

Method (docs/analysis.md has the reasoning):

1. Work on log rates: shaping noise is relative, and a drop from 10 to 0.75 Gbit/s is then a
   step like any other.
2. Noise σ from the first differences: MAD(Δ log x)/√2, floored at ``noise_floor``.
3. Despike (Hampel): a value further than ``outlier_sigmas`` · σ from the running median of
   ``despike_width`` (5) values is replaced by that median — dips of one or two intervals go,
   steps between longer runs stay, the other values keep their own noise. The first intervals
   are kept when they are *above* the rest: that is a short burst, not a spike.
4. Change points by ruptures ``Binseg`` (L2 cost from cumulative sums, ``jump=1``,
   ``min_size``) with a BIC-like penalty β = ``penalty_factor`` · ln n · σ²·(1 + φ)/(1 − φ)² —
   tied to the measured noise (its long-run variance), no absolute threshold. (``Pelt`` finds
   the same changes here but is O(n²) when changes are few: 8 s for an hour of 1 s samples.)
5. Adjacent segments whose median levels differ by less than ``min_relative_change`` (10 %)
   are merged: a real but irrelevant shift, or a partial interval at a change.
6. The result is always compared with the no-change model: the segmented fit must lower the cost
   by more than k · β. Otherwise the series is ``steady``.
7. A second pass, when needed, with σ of the noisiest level (if over 1.5 × the overall σ) and φ,
   the lag-1 autocorrelation of the noise around the levels of the first pass.

Classes: ``steady`` (no change point accepted), ``burst-then-baseline`` (every change is a
drop), ``erratic`` (a level rises again, or no stable level: σ above ``erratic_noise``), and
``inconclusive`` (too little data, with the reason).
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from netfleet.analysis.series import Series
from netfleet.analysis.stats import FloatArray, diff_noise, hampel, mad, mean_interval

#: φ is capped here: beyond it the series is a random walk, not noise around levels
MAX_AUTOCORRELATION = 0.8
Classification = Literal["steady", "burst-then-baseline", "erratic", "inconclusive"]


@dataclass(frozen=True)
class SegmentationConfig:
    """Tuning, all relative to the data: sample counts, noise multiples and ratios."""

    #: the shortest level, in intervals (also: fewer than 2 × min_size samples is inconclusive)
    min_size: int = 3
    #: β = penalty_factor · ln(n) · σ²: 2 would be BIC for a change (its place and new level);
    #: BIC over-segments (a change's place is not a regular parameter), 3 keeps false changes
    #: on steady noise under ~2 % (docs/analysis.md, "Calibration")
    penalty_factor: float = 3.0
    #: levels closer than this (relative) are one level: cloud 1 s rates wobble by a few %,
    #: and no credit mechanism has a baseline within 10 % of its peak
    min_relative_change: float = 0.10
    #: window of the Hampel despiking filter (odd; 5 removes dips of one or two intervals)
    despike_width: int = 5
    #: the noise estimate never goes below this relative σ (counters have finite resolution)
    noise_floor: float = 0.002
    #: a series whose relative 1 s noise exceeds this has no stable level: erratic
    erratic_noise: float = 0.25
    #: a run noisier than ``erratic_noise`` whose levels only drop is still burst-then-baseline
    #: when its cumulative bits stay this close (relative) to the token-bucket envelope
    envelope_tolerance: float = 0.05
    #: a sample further than this many σ from its level is an outlier, not part of the level
    outlier_sigmas: float = 4.0
    #: a burst whose level wanders (a CPU-starved sender) before one drop to a clean baseline:
    #: its levels lie within this ratio of each other, every one this many × the baseline
    wander_ratio: float = 2.0
    wander_above_baseline: float = 2.0

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
        medians = [float(np.median(y[a:b])) for a, b in zip(firsts, bounds, strict=True)]
        steps = [abs(b - a) for a, b in itertools.pairwise(medians)]
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


@functools.cache
def _cumulative_l2() -> type[Any]:
    """ruptures' L2 cost class from cumulative sums (:func:`_fit` makes one a series).
    ruptures, and the SciPy it loads (~1.5 s of CPU), are imported when a series is first
    segmented, not with this package: the credit calculator, a scaled lab's run summary and
    the reports that segment nothing import it too."""
    from ruptures.base import BaseCost

    class CumulativeL2(BaseCost):
        """ruptures' L2 cost (squared deviations from the segment mean) from cumulative sums:
        O(1) per segment instead of O(length), which keeps Pelt fast on hour-long 1 s
        series."""

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

    return CumulativeL2


def log_rates(series: Series) -> FloatArray:
    """log of each interval's rate, stalls clamped at 1/1000 of the median rate."""
    rate = series.rate
    floor = max(float(np.median(rate)) * 1e-3, 1.0)
    return np.log(np.maximum(rate, floor))


@dataclass(frozen=True)
class _Fit:
    bounds: list[int]
    clean: FloatArray
    spikes: NDArray[np.bool_]
    phi: float
    test: NoChangeTest

    def spans(self) -> list[tuple[int, int]]:
        return list(zip([0, *self.bounds[:-1]], self.bounds, strict=True))


#: a level needs this many intervals for its own noise estimate
OWN_NOISE_MIN = 10


def _own_noise(y: FloatArray, first: int, stop: int, cfg: SegmentationConfig) -> float:
    """A level's own 1 s noise (its differences' MAD); 0 when it is too short to tell."""
    if stop - first < max(OWN_NOISE_MIN, 2 * cfg.min_size):
        return 0.0
    return max(diff_noise(y[first:stop]), cfg.noise_floor)


def _residual_autocorrelation(fit: _Fit) -> float:
    """Lag-1 autocorrelation of the noise around the levels found (pairs inside one level
    only; residuals clipped at 4 MAD), in [0, MAX_AUTOCORRELATION]."""
    pairs: list[tuple[float, float]] = []
    for a, b in fit.spans():
        r = fit.clean[a:b] - float(np.median(fit.clean[a:b]))
        pairs += list(itertools.pairwise(r))
    if len(pairs) < 8:
        return 0.0
    x = np.array(pairs)
    spread = 4 * mad(x[:, 0])
    if spread == 0.0:
        return 0.0
    x = np.clip(x, -spread, spread)
    x -= x.mean(axis=0)
    denom = math.sqrt(float((x[:, 0] ** 2).sum() * (x[:, 1] ** 2).sum()))
    phi = float((x[:, 0] * x[:, 1]).sum()) / denom if denom else 0.0
    return min(max(phi, 0.0), MAX_AUTOCORRELATION)


def _fit(y: FloatArray, noise: float, phi: float, cfg: SegmentationConfig) -> _Fit:
    """Despike, find change points, merge close levels, compare with the no-change model."""
    n = y.size
    clean, spikes = hampel(y, cfg.despike_width, cfg.outlier_sigmas * noise)
    # the first one or two intervals above the rest are a short burst, not a spike: keep them
    lead = 0
    while lead < n and spikes[lead] and y[lead] > clean[lead]:
        lead += 1
    clean[:lead], spikes[:lead] = y[:lead], False
    # long-run variance of AR(1) noise: runs of correlated noise must not pass for levels
    scale = noise**2 * (1 + phi) / (1 - phi) ** 2
    penalty = cfg.penalty_factor * math.log(n)
    import ruptures as rpt

    cost = _cumulative_l2()()
    cost.min_size = cfg.min_size
    algo = rpt.Binseg(custom_cost=cost, min_size=cfg.min_size, jump=1).fit(clean)
    bounds = [int(b) for b in algo.predict(pen=penalty * scale)]
    bounds = _merge_close(clean, bounds, math.log1p(cfg.min_relative_change))
    changes = len(bounds) - 1
    no_change, segmented = _ssr(clean, [n]) / scale, _ssr(clean, bounds) / scale
    accepted = changes > 0 and no_change - segmented > changes * penalty
    test = NoChangeTest(no_change, segmented, penalty, changes, accepted)
    return _Fit(bounds if accepted else [n], clean, spikes, phi, test)


def _envelope_error(series: Series, segments: tuple[Segment, ...]) -> float:
    """How far the cumulative received bits stray from the token-bucket envelope
    A(t) = min(C·t, σ + ρ·t) with C and ρ the first and last levels and σ = max[A(t) − ρt]:
    the largest gap over the run, relative to the bits received. Cumulative sums average the
    1 s noise out; a series that is not one bucket draining stays far from any envelope."""
    t = series.times()
    a = series.cumulative()
    if a.size == 0 or a[-1] <= 0:
        return math.inf
    peak, base = segments[0].level, segments[-1].level
    sigma = float(np.max(np.concatenate(([0.0], a - base * t))))
    model = np.minimum(peak * t, sigma + base * t)
    return float(np.max(np.abs(a - model)) / a[-1])


def _wandering_burst(
    series: Series,
    y: FloatArray,
    segments: tuple[Segment, ...],
    noise: float,
    cfg: SegmentationConfig,
) -> tuple[tuple[Segment, Segment], str] | None:
    """A burst whose level wandered before one drop to a clean baseline, as one peak level and
    the baseline — or None. The segmentation cuts a CPU-starved sender's burst (issue 9's blind
    check: 0.7–1.35 Gbit/s, rising and falling, under a 1.67 Gbit/s shaper, then a flat
    143 Mbit/s) into several levels, some rising. A token bucket only bounds what a link
    carries from above: below the peak the sender sets the rate, so levels that wander within
    ``wander_ratio`` of each other, every one ``wander_above_baseline`` × the last level or
    more, then one drop to that last level, are one bucket draining. A return to the
    baseline's level in between (a second burst after a refill) is not merged, nor are levels
    further apart (a rise from a level to one 3× higher is not one burst)."""
    *burst, base = segments
    if len(burst) < 2 or base.level <= 0:
        return None
    levels = [s.level for s in burst]
    if min(levels) < cfg.wander_above_baseline * base.level:
        return None
    if max(levels) > cfg.wander_ratio * min(levels):
        return None
    first, stop = burst[0].first, burst[-1].stop
    peak = _level(series, y, first, stop, _own_noise(y, first, stop, cfg) or noise, cfg)
    # the levels it wandered between are the peak's ±, not only the mean's standard error
    peak = replace(peak, err=max(peak.err, (max(levels) - min(levels)) / 2))
    rises = sum(b > a for a, b in itertools.pairwise(levels))
    fit_err = _envelope_error(series, (peak, base))
    note = (
        f"the burst's level wandered ({len(burst)} levels, {min(levels) / 1e6:.1f}–"
        f"{max(levels) / 1e6:.1f} Mbit/s, rising {rises} time(s): below its peak the sender, "
        "not the shaper, sets the rate — a sender short of CPU, say) before one drop to a clean "
        f"baseline: one burst, its peak their mean with their spread as ± (one peak level is "
        f"within {fit_err:.1%} of the cumulative data)"
    )
    return (peak, base), note


def _trailing_drop(
    y: FloatArray,
    spikes: NDArray[np.bool_],
    level: Segment,
    cfg: SegmentationConfig,
) -> str | None:
    """Why the run cannot be called steady when its last 1–2 intervals (taken for a dip by the
    despiking filter) fell below its one level and it ended there; None otherwise."""
    tail = 0
    while tail < min(2, y.size - 1) and spikes[y.size - 1 - tail]:
        tail += 1
    if tail == 0:
        return None
    last = float(np.exp(y[-tail:]).mean())
    if last >= level.level * (1 - cfg.min_relative_change):
        return None
    return (
        f"the rate fell to {last / 1e6:.1f} Mbit/s in the last {tail} interval(s) from a level "
        f"of {level.level / 1e6:.1f} Mbit/s and the run ended there: a level change too close "
        "to the end to measure (a burst ending?) — run longer to see the level after it"
    )


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
    fit = _fit(y, noise, 0.0, cfg)
    notes: list[str] = []
    # the noisiest level sets the penalty: a noiseless baseline must not make a noisy burst's
    # wobble look like levels; correlated noise raises it too (its long-run variance)
    noisiest = max((_own_noise(y, a, b, cfg) for a, b in fit.spans()), default=noise)
    phi = _residual_autocorrelation(fit)
    if noisiest > 1.5 * noise:
        notes.append(
            f"noise differs between levels (±{noise:.1%} to ±{noisiest:.1%}): the noisiest "
            "sets the penalty"
        )
        noise = noisiest
    if phi > 0.05 or notes:
        fit = _fit(y, noise, phi, cfg)
    test, spikes, phi = fit.test, fit.spikes, fit.phi
    segments = tuple(
        _level(series, y, a, b, _own_noise(y, a, b, cfg) or noise, cfg) for a, b in fit.spans()
    )
    if spikes.any():
        notes.append(f"{int(spikes.sum())} spike(s)/dip(s) of 1–2 intervals ignored")
    if phi > 0.05:
        notes.append(f"1 s noise is autocorrelated (φ = {phi:.2f}): penalty raised to match")
    clean_drops = len(segments) > 1 and all(
        segments[i].level < segments[i - 1].level for i in range(1, len(segments))
    )
    wandered = None if clean_drops else _wandering_burst(series, y, segments, noise, cfg)
    if wandered is not None:
        merged, note = wandered
        notes.append(note)
        return Segmentation("burst-then-baseline", merged, noise, test, notes=tuple(notes))
    if (
        noise > cfg.erratic_noise
        and clean_drops
        and (fit_err := _envelope_error(series, segments)) <= (cfg.envelope_tolerance)
    ):
        # classify by the token-bucket fit first: noisy 1 s intervals around clean levels (a
        # busy host, a shaper's bursts) do not make a two-level run erratic
        notes.append(
            f"noisy intervals (±{noise:.0%}) around {len(segments)} clean levels: the "
            f"cumulative data fit the token-bucket envelope within {fit_err:.1%}"
        )
        return Segmentation("burst-then-baseline", segments, noise, test, notes=tuple(notes))
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
    if len(segments) == 1 and (tail := _trailing_drop(y, spikes, segments[0], cfg)):
        # the last interval(s) fell and the run ended there: that is the start of a lower
        # level the run was too short to show, not a dip to despike away — never "steady"
        return Segmentation("inconclusive", segments, noise, test, reason=tail, notes=tuple(notes))
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
