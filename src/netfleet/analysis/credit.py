"""Token-bucket estimates from a segmented series: peak C, baseline ρ, burst duration τ*,
bucket σ — each with its uncertainty.

Model (ShaperProbe, network calculus): the cumulative received bits are
A(t) = min(C·t, σ + ρ·t). The bucket is read straight off the data as
σ = max_t [A(t) − ρ·t] over the interval ends (omitted lead included), with ρ the baseline.
How each ± is computed is in docs/analysis.md ("Uncertainty").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from netfleet.analysis.estimate import Estimate, fmt_bits
from netfleet.analysis.segments import Segment, Segmentation, SegmentationConfig, log_rates
from netfleet.analysis.series import Series
from netfleet.analysis.stats import Z975
from netfleet.units import DEFAULT_MTU, wire_factor

#: "no-drop": one flat level without evidence that it is not a burst still going on (an
#: adaptive run that stopped before the longest possible burst); never called "steady"
CreditKind = Literal[
    "burst", "burst-unfinished", "steady", "no-drop", "baseline-only", "erratic", "inconclusive"
]
RateKind = Literal["goodput", "wire"]


@dataclass(frozen=True)
class Drop:
    """Where one level change happened: ``at`` ± ``err`` seconds since the test began."""

    at: float
    err: float
    before: float
    after: float


@dataclass(frozen=True)
class CreditEstimate:
    """What one run says about the credit mechanism. Rates are bits/s, the bucket is bits
    (1 credit = 1 Gbit), durations seconds. ``rate_kind`` says whether the numbers are goodput
    (as measured) or wire rate (× :attr:`wire_factor`)."""

    kind: CreditKind
    peak: Estimate | None = None
    baseline: Estimate | None = None
    burst_seconds: Estimate | None = None
    bucket: Estimate | None = None
    rate: Estimate | None = None
    drops: tuple[Drop, ...] = ()
    wire_factor: float | None = None
    rate_kind: RateKind = "goodput"
    duration: float = 0.0
    reason: str = ""
    notes: tuple[str, ...] = ()

    def as_wire(self) -> CreditEstimate:
        """The same estimate as L2 wire rates and bits (what a shaper or a cloud counts)."""
        if self.rate_kind == "wire":
            return self
        f = self.wire_factor
        if f is None:
            return replace(
                self,
                kind=self.kind,
                peak=None,
                baseline=None,
                bucket=None,
                rate=None,
                rate_kind="wire",
                notes=(*self.notes, "no wire rate: not a TCP run"),
            )

        def s(e: Estimate | None) -> Estimate | None:
            return None if e is None else e.scaled(f)

        return replace(
            self,
            peak=s(self.peak),
            baseline=s(self.baseline),
            bucket=s(self.bucket),
            rate=s(self.rate),
            drops=tuple(replace(d, before=d.before * f, after=d.after * f) for d in self.drops),
            rate_kind="wire",
        )

    @property
    def seconds_at_peak_full(self) -> float | None:
        """Model time at peak from a full bucket, σ / (C − ρ) (seed 004's "maximum time")."""
        return time_at_peak(self.bucket, self.peak, self.baseline)


def time_at_peak(
    bucket: Estimate | None, peak: Estimate | None, baseline: Estimate | None
) -> float | None:
    """σ / (C − ρ): how long a full bucket lasts at the peak; None without all three."""
    if bucket is None or peak is None or baseline is None:
        return None
    gap = peak.value - baseline.value
    return bucket.value / gap if gap > 0 else None


def _estimate(seg: Segment) -> Estimate:
    return Estimate(seg.level, seg.err)


def _drop(
    series: Series, y: np.ndarray, a: Segment, b: Segment, hi: float, noise: float, sigmas: float
) -> Drop:
    """When the rate fell from level ``hi`` (segment ``a``) to ``b.level``.

    The last interval up to the boundary whose rate is clearly above the new level holds the
    end of the old one (min_size can place the boundary late; this looks back). If its rate is
    clearly below ``hi`` too, the change happened inside it: the bits it carried above the new
    level place it, τ = start + (x − L₂)·d / (L₁ − L₂), and the interval bounds it. Otherwise the
    change is at its end, to within what the noise of the two neighbours allows."""
    lo = b.level
    above = math.log(lo) + sigmas * noise
    below = math.log(hi) - sigmas * noise
    j = next((i for i in range(b.first, a.first - 1, -1) if y[i] > above), a.first)
    start, end, d = float(series.start[j]), float(series.end[j]), float(series.seconds[j])
    if y[j] < below:
        at = min(max(start + (series.rate[j] - lo) * d / (hi - lo), start), end)
        err = max(at - start, end - at)
    else:
        at = end
        err = sigmas * noise * hi / (hi - lo) * float(series.interval)
    return Drop(series.lead_seconds + at, err, hi, lo)


#: what the bucket's ± leaves out otherwise (relative): the wire rate assumes full-sized
#: segments, and a shaper's own peak bucket (tbf's ``mtu``, up to 64 KB) adds to σ. Clean blind
#: runs (no CPU contention) missed their ± by 0.03–0.05 % without it (issue 9)
BUCKET_MODEL_ERR = 0.001


def bucket_from_series(series: Series, baseline: Estimate, until: float | None = None) -> Estimate:
    """σ = max_t [A(t) − ρ·t] over the interval ends (t = 0 included), with ρ = ``baseline``.

    ± combines (a) the baseline's own ± times the time of the maximum (∂σ/∂ρ = −t*) and (b) how
    far the maximum stands above the plateau that follows it (the baseline's wobble around ρ,
    which the max picks up). ``until`` limits the search to the burst and the few intervals
    after it: beyond, A(t) − ρt only drifts with the error of ρ."""
    t = np.concatenate(([0.0], series.times()))
    g = np.concatenate(([0.0], series.cumulative())) - baseline.value * t
    if until is not None:
        keep = t <= until + 1e-9
        t, g = t[keep], g[keep]
    i = int(np.argmax(g))
    sigma, t_star = float(g[i]), float(t[i])
    plateau = g[i:]
    wobble = sigma - float(np.median(plateau)) if plateau.size > 1 else 0.0
    err = math.hypot(t_star * baseline.err, wobble, BUCKET_MODEL_ERR * sigma)
    return Estimate(sigma, err)


def estimate_credit(
    series: Series,
    segmentation: Segmentation,
    *,
    mtu: int | None = None,
    protocol: str | None = None,
    baseline_hint: Estimate | None = None,
    config: SegmentationConfig | None = None,
) -> CreditEstimate:
    """Turn a segmentation into credit estimates (goodput). ``baseline_hint`` — a baseline
    known from elsewhere (the group's burst runs, a label, ``--baseline``) — lets a run that
    never left one level say more: a burst that has not ended (bucket ≥ X) or a run that only
    ever saw the baseline."""
    cfg = config or SegmentationConfig()
    factor = wire_factor(mtu, protocol)
    notes = [*series.notes, *segmentation.notes]
    if mtu is None and factor is not None:
        notes.append(f"MTU unknown: wire rate assumes {DEFAULT_MTU}")
    base = CreditEstimate("inconclusive", wire_factor=factor, duration=series.duration)
    cls = segmentation.classification
    segs = segmentation.segments
    if cls == "inconclusive":
        return replace(base, reason=segmentation.reason, notes=tuple(notes))
    if cls == "erratic":
        levels = [s.level for s in segs]
        mean = float(series.bits.sum() / series.seconds.sum())
        spread = (max(levels) - min(levels)) / 2 if len(levels) > 1 else segs[0].err
        return replace(
            base,
            kind="erratic",
            rate=Estimate(mean, spread),
            reason=segmentation.reason,
            notes=(*notes, f"levels: {', '.join(f'{v / 1e6:.1f}' for v in levels)} Mbit/s"),
        )
    if cls == "steady":
        rate = _estimate(segs[0])
        return _steady(series, base, rate, baseline_hint, notes)
    y = log_rates(series)
    peak, baseline = _estimate(segs[0]), _estimate(segs[-1])
    if segs[0].core < 2:
        # no two intervals agree on the peak: every one of them was partly at the baseline
        top = float(series.rate[segs[0].first : segs[0].stop].max())
        peak = Estimate(top, Z975 * segmentation.noise * top, lower_bound=True)
    his = [peak.value, *(s.level for s in segs[1:-1])]
    drops = tuple(
        _drop(series, y, a, b, hi, segmentation.noise, cfg.outlier_sigmas)
        for a, b, hi in zip(segs[:-1], segs[1:], his, strict=True)
    )
    if peak.lower_bound:
        notes.append(
            f"the burst lasted about {drops[0].at:.1f} s, too short to measure its peak "
            f"(a level needs {cfg.min_size} intervals): the peak is at least the fastest interval"
        )
    last = drops[-1]
    # after the burst A(t) − ρt is flat; further on it only drifts with the error of ρ
    bucket = bucket_from_series(series, baseline, until=last.at + last.err + 2 * series.interval)
    if len(segs) > 2:
        notes.append(
            f"{len(segs) - 1} drops: first at {drops[0].at:.1f} s, baseline from {last.at:.1f} s"
        )
    model = (peak.value - baseline.value) * last.at
    gap = peak.value - baseline.value
    model_err = math.hypot(last.at * math.hypot(peak.err, baseline.err), gap * last.err)
    if (
        len(segs) == 2
        and not peak.lower_bound
        and abs(model - bucket.value) > (bucket.err + model_err)
    ):
        notes.append(
            f"(C − ρ)·τ* = {fmt_bits(model)} differs from max[A(t) − ρt] = "
            f"{fmt_bits(bucket.value)}: the burst was not flat at C (a ramp, or a mechanism that "
            "is not one token bucket)"
        )
    return replace(
        base,
        kind="burst",
        peak=peak,
        baseline=baseline,
        burst_seconds=Estimate(last.at, last.err),
        bucket=bucket,
        drops=drops,
        notes=tuple(notes),
    )


def _steady(
    series: Series,
    base: CreditEstimate,
    rate: Estimate,
    hint: Estimate | None,
    notes: list[str],
) -> CreditEstimate:
    if hint is None:
        return replace(base, kind="steady", rate=rate, notes=tuple(notes))
    if rate.low > hint.high:
        # still at a rate above the baseline when the run ended: a burst that has not ended
        conservative = Estimate(hint.value + hint.err, 0.0)
        floor = bucket_from_series(series, conservative)
        return replace(
            base,
            kind="burst-unfinished",
            peak=rate,
            baseline=hint,
            rate=rate,
            burst_seconds=Estimate(series.duration, 0.0, lower_bound=True),
            bucket=Estimate(floor.value, floor.err, lower_bound=True),
            reason=f"the burst had not ended after {series.duration:.0f} s: the bucket is at "
            "least what was sent above the baseline",
            notes=tuple(notes),
        )
    if rate.high >= hint.low:
        return replace(
            base,
            kind="baseline-only",
            baseline=rate,
            rate=rate,
            reason="the whole run at the baseline: the bucket was empty when it began",
            notes=tuple(notes),
        )
    return replace(
        base,
        kind="steady",
        rate=rate,
        notes=(*notes, "below the known baseline: another limit (CPU, path, competing flows)"),
    )
