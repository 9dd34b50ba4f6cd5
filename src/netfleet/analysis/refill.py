"""How fast a drained bucket refills, and whether it caps — from (idle time, burst) probes.

Input: a drained bucket (a run that ended at its baseline), then for each probe the idle time T
and the series of the burst that followed. The credit a probe regained is read exactly like the
bucket, max_t [A(t) − ρ·t] with the known baseline ρ (:func:`regained_credit`). Over the points
(T, regained) a straight line (rate r, offset a) is compared with a line that stops at a cap K,
min(a + r·T, K), like the change points: the cap is kept only if it lowers the cost by more than
a BIC-like penalty. Seed 004 saw the cap: after 3 h idle the r4.large burst was no longer than
the first one. docs/analysis.md ("Refill") documents the input, including the ``phases`` shape
a ``credit`` test stores.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from netfleet.analysis.credit import bucket_from_series
from netfleet.analysis.estimate import Estimate, fmt_bits
from netfleet.analysis.series import RunInfo, Series, SeriesUnavailable, series_from_rows
from netfleet.analysis.stats import Z975, t975, t_quantile, z_quantile
from netfleet.engines.iperf3_rows import result_rows


@dataclass(frozen=True)
class RefillProbe:
    """A burst measured after the drained link idled ``idle_s`` seconds."""

    idle_s: float
    series: Series


@dataclass(frozen=True)
class RefillPoint:
    """Credit regained (bits) after ``idle_s`` seconds of idle."""

    idle_s: float
    regained: Estimate


@dataclass(frozen=True)
class RefillEstimate:
    kind: Literal["linear", "capped", "inconclusive"]
    points: tuple[RefillPoint, ...] = ()
    #: credit regained per idle second (bits/s): the refill rate
    rate: Estimate | None = None
    #: regained at T = 0: the time between phases that is not in T (server start, ramp)
    offset: Estimate | None = None
    #: the most the bucket holds, when the regained credit levels off
    cap: Estimate | None = None
    comparison: str = ""
    reason: str = ""
    notes: tuple[str, ...] = ()

    @property
    def full_refill_seconds(self) -> float | None:
        """Idle time to refill the cap from empty, (K − a)/r."""
        if self.cap is None or self.rate is None or self.rate.value <= 0:
            return None
        offset = self.offset.value if self.offset else 0.0
        return (self.cap.value - offset) / self.rate.value


def regained_credit(series: Series, baseline: Estimate) -> Estimate:
    """Credit a burst spent beyond the baseline: max_t [A(t) − ρ·t] (bits, goodput)."""
    return bucket_from_series(series, baseline)


def refill_points(probes: Sequence[RefillProbe], baseline: Estimate) -> list[RefillPoint]:
    return [RefillPoint(p.idle_s, regained_credit(p.series, baseline)) for p in probes]


@dataclass(frozen=True)
class _Line:
    slope: float
    offset: float
    slope_err: float
    offset_err: float
    ssr: float


def _fit_line(t: np.ndarray, y: np.ndarray, e: np.ndarray, level: float = 0.95) -> _Line:
    """Least squares; the ± uses the larger of the residual scatter and the points' own ±
    (as a standard deviation: ± / z₀.₉₇₅), with the t quantile of ``level`` on n − 2 degrees of
    freedom (with no scatter to go by: what ``scipy.stats.linregress``'s standard errors give)."""
    n = t.size
    tm, ym = t.mean(), y.mean()
    sxx = float(((t - tm) ** 2).sum())
    slope = float(((t - tm) * (y - ym)).sum() / sxx)
    offset = float(ym - slope * tm)
    ssr = float(((y - offset - slope * t) ** 2).sum())
    own = float(np.sqrt(np.mean((e / Z975) ** 2)))
    sd = max(math.sqrt(ssr / (n - 2)) if n > 2 else 0.0, own)
    q = t_quantile(n - 2, level) if n > 2 else z_quantile(level)
    return _Line(
        slope,
        offset,
        q * sd / math.sqrt(sxx),
        q * sd * math.sqrt(1 / n + tm**2 / sxx),
        ssr,
    )


def estimate_refill(
    points: Sequence[RefillPoint],
    max_bucket: Estimate | None = None,
    penalty_factor: float = 2.0,
) -> RefillEstimate:
    """Refill rate (slope ± error) and cap from regained-credit points. ``max_bucket`` — the
    initial (full) bucket, e.g. from the drain run — is compared with a cap when one is found."""
    pts = tuple(sorted(points, key=lambda p: p.idle_s))
    base = RefillEstimate("inconclusive", pts)
    if len({p.idle_s for p in pts}) < 2:
        return replace(base, reason="need probes at two or more idle times")
    t = np.array([p.idle_s for p in pts])
    y = np.array([p.regained.value for p in pts])
    e = np.array([p.regained.err for p in pts])
    line = _fit_line(t, y, e)
    best: tuple[float, int, _Line, float] | None = None
    for k in range(2, t.size):  # the first k points rise, the rest sit at the cap
        if len(set(t[:k])) < 2:
            continue
        left = _fit_line(t[:k], y[:k], e[:k])
        cap = float(y[k:].mean())
        below = cap < left.offset + left.slope * t[k]  # a cap lies under the line's extension
        ssr = left.ssr + float(((y[k:] - cap) ** 2).sum())
        if below and (best is None or ssr < best[0]):
            best = (ssr, k, left, cap)
    own_var = float(np.mean((e / Z975) ** 2))
    notes: list[str] = []
    if t.size == 2:
        notes.append("two points: the line goes through both; linearity is not checked")
    if best is not None:
        ssr, k, left, cap = best
        var = max(ssr / (t.size - 3) if t.size > 3 else 0.0, own_var, 1e-12 * y.max() ** 2)
        improvement = (line.ssr - ssr) / var
        penalty = penalty_factor * math.log(t.size)
        comparison = (
            f"a cap after {t[k - 1]:g}–{t[k]:g} s idle lowers the cost by {improvement:.1f} σ² "
            f"vs a penalty of {penalty:.1f} σ²"
        )
        if improvement > penalty:
            m = t.size - k
            sd = max(float(np.std(y[k:], ddof=1)) if m > 1 else 0.0, math.sqrt(own_var))
            cap_est = Estimate(cap, (t975(m - 1) if m > 1 else Z975) * sd / math.sqrt(m))
            if max_bucket is not None:
                notes.append(_compare_cap(cap_est, max_bucket))
            return RefillEstimate(
                "capped",
                pts,
                Estimate(left.slope, left.slope_err),
                Estimate(left.offset, left.offset_err),
                cap_est,
                comparison + " — capped",
                notes=tuple(notes),
            )
        comparison += " — no cap: the straight line stands"
    else:
        comparison = "no point lies below the straight line's extension: no cap"
    if max_bucket is not None and max_bucket.value > 0:
        reach = (max_bucket.value - line.offset) / line.slope if line.slope > 0 else math.inf
        if reach > t.max():
            notes.append(
                f"longest idle {t.max():g} s is below the {reach:.0f} s a full bucket "
                "needs at this rate: idle longer to see whether it caps"
            )
    return RefillEstimate(
        "linear",
        pts,
        Estimate(line.slope, line.slope_err),
        Estimate(line.offset, line.offset_err),
        None,
        comparison,
        notes=tuple(notes),
    )


def _compare_cap(cap: Estimate, initial: Estimate) -> str:
    gap = abs(cap.value - initial.value)
    if gap <= cap.err + initial.err:
        return (
            f"the cap ({fmt_bits(cap.value)}) matches the initial bucket "
            f"({fmt_bits(initial.value)}): idling longer does not buy a longer burst"
        )
    return (
        f"the cap ({fmt_bits(cap.value)}) differs from the initial bucket "
        f"({fmt_bits(initial.value)})"
    )


def analyze_refill(
    drain: Series, probes: Sequence[RefillProbe], baseline: Estimate | None = None
) -> tuple[Estimate, Estimate, RefillEstimate]:
    """Baseline and initial bucket from the drain series (a full burst then the baseline), then
    the refill estimate from the probes. Returns (baseline, initial bucket, refill)."""
    from netfleet.analysis.credit import estimate_credit
    from netfleet.analysis.segments import segment

    credit = estimate_credit(drain, segment(drain))
    rho = baseline or credit.baseline
    if rho is None:
        raise SeriesUnavailable(
            f"the drain phase did not reach a baseline ({credit.kind}"
            + (f": {credit.reason}" if credit.reason else "")
            + "): drain longer"
        )
    initial = credit.bucket if credit.bucket is not None else Estimate(math.nan, math.nan)
    refill = estimate_refill(refill_points(probes, rho), max_bucket=credit.bucket)
    return rho, initial, refill


def probes_from_phases(
    run: RunInfo, phases: Sequence[Mapping[str, Any]], params: Mapping[str, Any] | None = None
) -> tuple[Series, list[RefillProbe]]:
    """The drain series and the probes of a run of the ``credit`` engine, whose result is
    ``{"phases": [{"phase": "drain" | "burst", "idle_s": T, "started_s": s, "status": ...,
    "iperf3": {client JSON}, "server_stdout": "text server output"}, ...]}``
    (docs/analysis.md, "Refill").

    The idle time of a probe is measured between the data flows when the phases carry
    ``started_s``: the burst's start − the previous phase's start − the previous series'
    duration (the server start-up delays cancel); this also counts the previous phase's
    teardown, which ``idle_s`` (the sleep) misses. Otherwise ``idle_s``."""
    drain: Series | None = None
    probes: list[RefillProbe] = []
    previous: tuple[float, Series] | None = None
    for i, phase in enumerate(phases):
        kind = phase.get("phase")
        if kind not in ("drain", "check", "burst"):
            raise SeriesUnavailable(f"phase {i}: unknown phase {kind!r}")
        if phase.get("status", "ok") != "ok":
            if kind in ("drain", "check"):
                raise SeriesUnavailable(f"the {kind} phase failed: {phase.get('reason')}")
            previous = None
            continue
        series = _phase_series(run, phase, params or {}, i)
        started = phase.get("started_s")
        if kind == "drain":
            drain = series  # the last part of a drain split by a check
        elif kind == "check":
            pass  # it ends at the baseline, like a drain: the next burst's idle counts from it
        else:
            idle = phase.get("idle_s")
            if previous is not None and isinstance(started, int | float):
                idle = float(started) - previous[0] - previous[1].duration
            if not isinstance(idle, int | float):
                raise SeriesUnavailable(f"phase {i}: a burst without its idle time (idle_s)")
            probes.append(RefillProbe(float(idle), series))
        previous = (float(started), series) if isinstance(started, int | float) else None
    if drain is None:
        raise SeriesUnavailable("no drain phase: the bucket's starting point is unknown")
    return drain, probes


@dataclass(frozen=True)
class DrainStart:
    """How a credit run's drain began (:mod:`netfleet.engines.credit`): a ``check`` phase found
    the host already at its baseline (``at_baseline``), or the drain went on after it, and
    the parts before the last drain phase (each with the idle gap before the next part) sent
    bits the last part's bucket estimate does not see."""

    at_baseline: bool = False
    #: (series, idle seconds after it) of every drain/check part before the last drain phase
    earlier: tuple[tuple[Series, float], ...] = ()

    def extra_bits(self, baseline: float) -> float:
        """What the earlier parts drew from the bucket: bits above the baseline, less what the
        idle gaps between parts refilled."""
        return sum(
            float(s.bits.sum()) - baseline * float(s.seconds.sum()) - baseline * gap
            for s, gap in self.earlier
        )


def drain_start(
    run: RunInfo, phases: Sequence[Mapping[str, Any]], params: Mapping[str, Any] | None = None
) -> DrainStart:
    """The :class:`DrainStart` of a credit run's phases (empty for runs without a check)."""
    checks = [p for p in phases if p.get("phase") == "check" and p.get("status", "ok") == "ok"]
    if not checks:
        return DrainStart()
    if checks[-1].get("at_baseline") is True:
        return DrainStart(at_baseline=True)
    drains = [i for i, p in enumerate(phases) if p.get("phase") == "drain"]
    last = drains[-1] if drains else 0
    parts = []
    for i, p in enumerate(phases[:last]):
        if p.get("phase") not in ("drain", "check"):
            continue
        series = _phase_series(run, p, params or {}, i)
        nxt, start = phases[i + 1].get("started_s"), p.get("started_s")
        gap = 0.0
        if isinstance(nxt, int | float) and isinstance(start, int | float):
            gap = max(0.0, float(nxt) - float(start) - series.duration)
        parts.append((series, gap))
    return DrainStart(earlier=tuple(parts))


def _phase_series(
    run: RunInfo, phase: Mapping[str, Any], params: Mapping[str, Any], i: int
) -> Series:
    result = phase.get("iperf3")
    if not isinstance(result, Mapping):
        raise SeriesUnavailable(f"phase {i} ({phase.get('phase')}) has no iperf3 result")
    text = phase.get("server_stdout")
    if isinstance(text, str) and "server_output_json" not in result:
        result = {**result, "server_output_text": text}  # a live text server's own report
    columns, _ = result_rows(run.run_id, result, params)
    return series_from_rows(run, columns.rows())
