"""The picture seed 004 shows from CloudWatch, from our own data: the 1 s rate series with its
levels, the peak and baseline, the end of the burst — and, for one run, the cumulative bits A(t)
under the token-bucket envelope min(C·t, σ + ρ·t)."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

import numpy as np

from netfleet.analysis.analyze import RunAnalysis
from netfleet.analysis.credit import CreditEstimate, RateKind
from netfleet.report.analysis_tables import unit_scale
from netfleet.report.svg import Frame, Svg

WIDTH = 860
PANEL = 300
LEFT, RIGHT, TOP, BOTTOM = 78, 24, 60, 46
COLORS = {
    "series": "#4c78a8",
    "level": "#f58518",
    "peak": "#54a24b",
    "baseline": "#e45756",
    "end": "#b279a2",
    "omitted": "#f2f2f2",
}
#: at most this many runs are drawn in one file
MAX_PANELS = 24


def _title(a: RunAnalysis) -> str:
    who = a.run.labels.get("instance_type")
    parts = [a.run.run_id, str(who) if who else "", a.run.direction or ""]
    return " · ".join(p for p in parts if p)


def _factor(a: RunAnalysis, rate: RateKind) -> float:
    if rate == "wire" and a.credit.wire_factor is not None:
        return a.credit.wire_factor
    return 1.0


def _rate_panel(
    svg: Svg, top: float, a: RunAnalysis, rate: RateKind, scale: float, label: str
) -> None:
    series = a.series
    est = a.estimate(rate)
    frame_h = PANEL - TOP - BOTTOM
    svg.text(LEFT, top + 18, _title(a), font_weight="bold")
    verdict = a.segmentation.classification + (f" — {est.reason}" if est.reason else "")
    for i, line in enumerate(textwrap.wrap(verdict, 125, max_lines=2, placeholder=" …")):
        svg.text(LEFT, top + 33 + 14 * i, line, fill="#444")
    if series is None or series.n == 0:
        svg.text(LEFT, top + TOP + frame_h / 2, "no series to draw", fill="#999")
        return
    f = _factor(a, rate)
    values = series.rate * f / scale
    lead = series.lead_seconds
    t_end = series.duration
    levels = [s.level * f / scale for s in a.segmentation.segments]
    y_max = max(float(values.max()), *levels, 1e-12) * 1.12
    frame = Frame(LEFT, top + TOP, WIDTH - LEFT - RIGHT, frame_h, 0.0, t_end, 0.0, y_max)
    if lead > 0:
        svg.rect(
            frame.x(0), frame.top, frame.x(lead) - frame.x(0), frame.height, fill=COLORS["omitted"]
        )
        svg.text(frame.x(lead / 2), frame.top + 14, "omitted", text_anchor="middle", fill="#999")
    frame.axes(svg, "seconds since the test began", f"{label}/s ({rate})")
    _burst_end(svg, frame, est, f)
    for seg in a.segmentation.segments:
        if seg.core < 2:  # no two intervals agree: no level to draw
            continue
        x0, x1 = frame.x(lead + seg.start_s), frame.x(lead + seg.end_s)
        lv, err = seg.level * f / scale, seg.err * f / scale
        svg.rect(
            x0,
            frame.y(lv + err),
            x1 - x0,
            max(frame.y(lv - err) - frame.y(lv + err), 1.0),
            fill=COLORS["level"],
            fill_opacity=0.25,
        )
        svg.line(x0, frame.y(lv), x1, frame.y(lv), stroke=COLORS["level"], stroke_width=3)
    _reference_lines(svg, frame, est, scale, label)
    points: list[tuple[float, float]] = []
    for s, e, v in zip(series.start, series.end, values, strict=True):
        points += [(frame.x(lead + s), frame.y(v)), (frame.x(lead + e), frame.y(v))]
    svg.polyline(points, stroke=COLORS["series"], stroke_width=1.5)
    _legend(svg, frame)


def _burst_end(svg: Svg, frame: Frame, est: CreditEstimate, f: float) -> None:
    if est.kind != "burst" or est.burst_seconds is None:
        return
    at, err = est.burst_seconds.value, est.burst_seconds.err
    lo, hi = frame.x(max(at - err, frame.x0)), frame.x(min(at + err, frame.x1))
    svg.rect(lo, frame.top, hi - lo, frame.height, fill=COLORS["end"], fill_opacity=0.15)
    svg.line(
        frame.x(at),
        frame.top,
        frame.x(at),
        frame.top + frame.height,
        stroke=COLORS["end"],
        stroke_width=1.5,
        stroke_dasharray="2 3",
    )
    svg.text(
        frame.x(at) + 4,
        frame.top + 14,
        f"burst ends τ* = {at:.1f} ± {err:.1f} s",
        fill=COLORS["end"],
    )


def _reference_lines(svg: Svg, frame: Frame, est: CreditEstimate, scale: float, unit: str) -> None:
    refs = []
    if est.peak is not None:
        sign = "≥ " if est.peak.lower_bound else ""
        refs.append(("peak", est.peak.value, f"peak C {sign}{est.peak.text(scale)}"))
    if est.baseline is not None:
        refs.append(("baseline", est.baseline.value, f"baseline ρ {est.baseline.text(scale)}"))
    if est.kind in ("steady", "erratic") and est.rate is not None:
        refs.append(("level", est.rate.value, f"rate {est.rate.text(scale)}"))
    if est.kind == "no-drop" and est.rate is not None:
        # a flat level that may still be a burst: say so on the line itself
        refs.append(("level", est.rate.value, f"{est.reason}: level {est.rate.text(scale)}"))
    for key, value, text in refs:
        py = frame.y(value / scale)
        svg.line(
            frame.left,
            py,
            frame.left + frame.width,
            py,
            stroke=COLORS[key],
            stroke_width=1.2,
            stroke_dasharray="6 4",
        )
        svg.text(
            frame.left + frame.width - 4,
            py - 5,
            f"{text} {unit}/s".replace("≥ ≥", "≥"),
            text_anchor="end",
            fill=COLORS[key],
        )


def _legend(svg: Svg, frame: Frame) -> None:
    x = frame.left + frame.width - 230
    y = frame.top + frame.height + 32
    for key, text in (("series", "1 s rate"), ("level", "levels (± 95 %)")):
        svg.line(x, y - 4, x + 18, y - 4, stroke=COLORS[key], stroke_width=3)
        svg.text(x + 22, y, text, fill="#333")
        x += 100


def _cumulative_panel(
    svg: Svg, top: float, a: RunAnalysis, rate: RateKind, scale: float, label: str
) -> None:
    series = a.series
    est = a.estimate(rate)
    assert series is not None
    f = _factor(a, rate)
    t = np.concatenate(([0.0], series.times()))
    cum = np.concatenate(([0.0], series.cumulative())) * f / scale
    frame = Frame(
        LEFT,
        top + TOP,
        WIDTH - LEFT - RIGHT,
        PANEL - TOP - BOTTOM,
        0.0,
        float(t[-1]),
        0.0,
        float(cum.max()) * 1.08 or 1.0,
    )
    envelope = est.kind == "burst" and est.peak and est.baseline and est.bucket
    title = "cumulative received A(t)" + (" and the token-bucket envelope" if envelope else "")
    svg.text(LEFT, top + 18, title, font_weight="bold")
    frame.axes(svg, "seconds since the test began", f"{label} received ({rate})")
    svg.polyline(
        [(frame.x(x), frame.y(v)) for x, v in zip(t, cum, strict=True)],
        stroke=COLORS["series"],
        stroke_width=3,
        stroke_opacity=0.6,
    )
    if est.kind == "burst" and est.peak and est.baseline and est.bucket:
        c, rho, sigma = est.peak.value / scale, est.baseline.value / scale, est.bucket.value / scale
        grid = np.linspace(0.0, float(t[-1]), 200)
        env = np.minimum(c * grid, sigma + rho * grid)
        svg.polyline(
            [(frame.x(x), frame.clip_y(v)) for x, v in zip(grid, env, strict=True)],
            stroke="#222",
            stroke_width=1.2,
            stroke_dasharray="6 4",
        )
        at = est.burst_seconds.value if est.burst_seconds else 0.0
        x = frame.x(at)
        svg.line(
            x, frame.y(rho * at), x, frame.y(sigma + rho * at), stroke=COLORS["end"], stroke_width=2
        )
        svg.text(
            x + 6,
            frame.y(sigma / 2 + rho * at),
            f"σ = max[A(t) − ρt] = {est.bucket.text(scale)} {label}",
            fill=COLORS["end"],
        )
        svg.text(
            frame.left + 8,
            frame.top + 16,
            "blue: A(t) measured; dashed: min(C·t, σ + ρ·t)",
            fill="#444",
        )


def plot_svg(
    analyses: Sequence[RunAnalysis], rate: RateKind = "goodput", unit: str = "auto"
) -> str:
    """One rate panel per run (at most :data:`MAX_PANELS`); with a single run, also the
    cumulative panel. Returns the SVG text."""
    scale, label = unit_scale(unit, _fastest(analyses))
    shown = list(analyses)[:MAX_PANELS]
    single = len(shown) == 1 and shown[0].series is not None
    height = PANEL * (len(shown) + (1 if single else 0)) + (20 if len(analyses) > len(shown) else 0)
    svg = Svg(WIDTH, max(height, PANEL))
    for i, a in enumerate(shown):
        _rate_panel(svg, i * PANEL, a, rate, scale, label)
    if single:
        _cumulative_panel(svg, PANEL, shown[0], rate, scale, label)
    if len(analyses) > len(shown):
        svg.text(LEFT, height - 6, f"{len(analyses) - len(shown)} more runs not drawn", fill="#999")
    return svg.render()


def _fastest(analyses: Sequence[RunAnalysis]) -> float:
    rates = [float(a.series.rate.max()) for a in analyses if a.series is not None and a.series.n]
    return max(rates, default=0.0)
