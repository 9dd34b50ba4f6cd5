"""Plots from a well-kept library: matplotlib (Agg backend, imported lazily), SVG or PNG bytes.

::

    burst_plot(analysis, fmt="png")            # series + levels ± band + τ* + A(t) vs envelope
    analysis_figure(analyses, fmt="svg")       # what ``analyze --plot`` draws (1 run: burst_plot,
                                               # several: small multiples, runs without series
                                               # left out and counted)
    overlay_series(analyses)                   # several types' series on one axis
    inout_bars([("m5.large", out_bps, in_bps)])  # grouped bars with the out/in ratio
    rate_cdf({"m5.large out": rates_bps})      # CDF of interval rates
    price_scatter([(label, usd_per_hour, sustained_bps, peak_bps)])
    latency_bars([(label, p50_us, p99_us, p999_us)])

Titles name what was measured (instance type, direction, test, repeat), never a run id; rates
carry their unit and basis (goodput / wire); numbers get 3 significant digits.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from netfleet.analysis import RunAnalysis
from netfleet.analysis.credit import RateKind
from netfleet.report.numbers import pm, sig
from netfleet.units import rate_unit as unit_scale

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

Fmt = Literal["svg", "png"]
COLORS = {
    "series": "#4c78a8",
    "level": "#f58518",
    "peak": "#54a24b",
    "baseline": "#e45756",
    "end": "#b279a2",
    "omitted": "#eeeeee",
    "out": "#4c78a8",
    "in": "#f58518",
}
#: at most this many panels in small multiples
MAX_PANELS = 12
WIDTH_IN = 9.0
DPI = 110


def _figure(rows: int = 1, cols: int = 1, height: float = 3.6, **kw: Any) -> tuple[Figure, Any]:
    import matplotlib

    matplotlib.use("Agg", force=True)
    matplotlib.rcParams["svg.hashsalt"] = "netfleet"  # stable SVG ids: same input, same bytes
    from matplotlib.figure import Figure

    fig = Figure(figsize=(WIDTH_IN, height * rows), dpi=DPI, layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False, **kw)
    return fig, axes


def to_bytes(fig: Figure, fmt: Fmt = "svg") -> bytes:
    """The figure as SVG or PNG bytes (metadata without dates: same input, same bytes)."""
    if fmt not in ("svg", "png"):
        raise ValueError(f"plot format must be svg or png, not {fmt!r}")
    buf = io.BytesIO()
    meta: dict[str, Any] = {"Date": None} if fmt == "svg" else {"Software": None}
    fig.savefig(buf, format=fmt, metadata=meta)
    return buf.getvalue()


def run_title(a: RunAnalysis) -> str:
    """``lab-burst-40m-300m · out · burst · repeat 2`` — what was measured, not the run id."""
    info = a.run
    repeat = info.row.get("repeat")
    parts = [
        str(info.labels.get("instance_type") or info.subject or info.row.get("client") or ""),
        info.direction or "",
        info.test or "",
        f"repeat {repeat}" if repeat is not None else "",
    ]
    return " · ".join(p for p in parts if p) or "run"


def _factor(a: RunAnalysis, rate: RateKind) -> float:
    if rate == "wire" and a.credit.wire_factor is not None:
        return a.credit.wire_factor
    return 1.0


def _fastest(analyses: Sequence[RunAnalysis]) -> float:
    rates = [float(a.series.rate.max()) for a in analyses if a.series is not None and a.series.n]
    return max(rates, default=0.0)


def _rate_axes(
    ax: Axes, a: RunAnalysis, rate: RateKind, scale: float, unit: str, title: str | None = None
) -> None:
    """Series (steps), levels with their ± band, peak/baseline, the burst end τ* ± err."""
    series, est = a.series, a.estimate(rate)
    ax.set_title(title or run_title(a), loc="left", fontsize=10, fontweight="bold")
    if series is None or series.n == 0:
        ax.text(0.5, 0.5, "no series to draw", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return
    f = _factor(a, rate)
    lead = series.lead_seconds
    if lead > 0:
        ax.axvspan(0, lead, color=COLORS["omitted"], label="omitted (-O)")
    x = np.concatenate(([lead + series.start[0]], lead + series.end))
    y = series.rate * f / scale
    ax.stairs(y, x, color=COLORS["series"], linewidth=1.6, label="interval rate", baseline=None)
    for i, seg in enumerate(a.segmentation.segments):
        if seg.core < 2:
            continue
        x0, x1 = lead + seg.start_s, lead + seg.end_s
        lv, err = seg.level * f / scale, seg.err * f / scale
        ax.fill_between([x0, x1], lv - err, lv + err, color=COLORS["level"], alpha=0.25, lw=0)
        ax.plot(
            [x0, x1],
            [lv, lv],
            color=COLORS["level"],
            lw=3,
            label="level ± 95 %" if i == 0 else None,
        )
    if est.peak is not None:
        ge = "≥ " if est.peak.lower_bound else ""
        ax.axhline(
            est.peak.value / scale,
            color=COLORS["peak"],
            ls="--",
            lw=1.2,
            label=f"peak C {ge}{sig(est.peak.value / scale)} {unit}/s",
        )
    if est.baseline is not None:
        ax.axhline(
            est.baseline.value / scale,
            color=COLORS["baseline"],
            ls="--",
            lw=1.2,
            label=f"baseline ρ {sig(est.baseline.value / scale)} {unit}/s",
        )
    if est.kind == "burst" and est.burst_seconds is not None:
        at, err = est.burst_seconds.value, est.burst_seconds.err
        ax.axvspan(at - err, at + err, color=COLORS["end"], alpha=0.15, lw=0)
        ax.axvline(
            at,
            color=COLORS["end"],
            ls=":",
            lw=1.5,
            label=f"burst ends τ* {pm(at, err)} s",
        )
    ax.set_xlim(0, series.duration)
    ax.set_ylim(0, max(float(y.max()), 1e-12) * 1.15)
    ax.set_xlabel("seconds since the test began")
    ax.set_ylabel(f"{unit}/s ({rate})")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper right", framealpha=0.85)


def _cumulative_axes(ax: Axes, a: RunAnalysis, rate: RateKind, scale: float, unit: str) -> None:
    """A(t) received against the token-bucket envelope min(C·t, σ + ρ·t)."""
    series, est = a.series, a.estimate(rate)
    assert series is not None
    f = _factor(a, rate)
    t = np.concatenate(([0.0], series.times()))
    cum = np.concatenate(([0.0], series.cumulative())) * f / scale
    ax.plot(t, cum, color=COLORS["series"], lw=3, alpha=0.6, label="A(t) measured")
    envelope = est.kind == "burst" and est.peak and est.baseline and est.bucket
    if envelope:
        assert est.peak and est.baseline and est.bucket
        c, rho = est.peak.value / scale, est.baseline.value / scale
        sigma = est.bucket.value / scale
        grid = np.linspace(0.0, float(t[-1]), 200)
        ax.plot(
            grid,
            np.minimum(c * grid, sigma + rho * grid),
            color="#222",
            ls="--",
            lw=1.2,
            label="envelope min(C·t, σ + ρ·t)",
        )
        at = est.burst_seconds.value if est.burst_seconds else 0.0
        ax.plot(
            [at, at],
            [rho * at, sigma + rho * at],
            color=COLORS["end"],
            lw=2,
            label=f"σ = {sig(sigma)} {unit} (bucket)",
        )
    ax.set_title(
        "cumulative received A(t)" + (" vs the token-bucket envelope" if envelope else ""),
        loc="left",
        fontsize=10,
        fontweight="bold",
    )
    ax.set_xlim(0, float(t[-1]))
    ax.set_ylim(0, float(cum.max()) * 1.08 or 1.0)
    ax.set_xlabel("seconds since the test began")
    ax.set_ylabel(f"{unit} received ({rate})")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right", framealpha=0.85)


def burst_plot(
    a: RunAnalysis, rate: RateKind = "goodput", unit: str = "auto", fmt: Fmt = "svg"
) -> bytes:
    """Seed 004's picture for one run: the rate panel and the A(t) panel."""
    scale, label = unit_scale(unit, _fastest([a]))
    panels = 2 if a.series is not None and a.series.n else 1
    fig, axes = _figure(panels, 1, height=3.4)
    _rate_axes(axes[0][0], a, rate, scale, label)
    if panels == 2:
        _cumulative_axes(axes[1][0], a, rate, scale, label)
    return to_bytes(fig, fmt)


def _drawable(analyses: Sequence[RunAnalysis]) -> list[RunAnalysis]:
    """The runs that have an interval series to draw (not latency or ping runs)."""
    return [a for a in analyses if a.series is not None and a.series.n]


def small_multiples(
    analyses: Sequence[RunAnalysis],
    rate: RateKind = "goodput",
    unit: str = "auto",
    fmt: Fmt = "svg",
) -> bytes:
    """One rate panel per run that has a series (at most :data:`MAX_PANELS`), shared y axis."""
    shown = _drawable(analyses)[:MAX_PANELS]
    scale, label = unit_scale(unit, _fastest(shown))
    cols = 1 if len(shown) <= 2 else 2
    rows = max(1, math.ceil(len(shown) / cols))
    fig, axes = _figure(rows, cols, height=2.8 if cols == 2 else 3.2)
    for i in range(rows * cols):
        ax = axes[i // cols][i % cols]
        if i < len(shown):
            _rate_axes(ax, shown[i], rate, scale, label)
        else:
            ax.set_axis_off()
    left = len(analyses) - len(shown)
    if left:
        fig.suptitle(
            f"{len(shown)} runs drawn; {left} left out (no series, e.g. latency or ping runs, "
            f"or beyond {MAX_PANELS})",
            fontsize=9,
        )
    return to_bytes(fig, fmt)


def analysis_figure(
    analyses: Sequence[RunAnalysis],
    rate: RateKind = "goodput",
    unit: str = "auto",
    fmt: Fmt = "svg",
) -> bytes:
    """What ``netfleet analyze --plot`` draws: one run → :func:`burst_plot`, several → small
    multiples."""
    drawable = _drawable(analyses)
    if len(drawable) == 1 and len(analyses) == 1:
        return burst_plot(drawable[0], rate, unit, fmt)
    return small_multiples(analyses, rate, unit, fmt)


def overlay_series(
    analyses: Sequence[RunAnalysis],
    labels: Sequence[str] | None = None,
    title: str = "Interval rate over time",
    rate: RateKind = "goodput",
    unit: str = "auto",
    fmt: Fmt = "svg",
) -> bytes:
    """Several runs (e.g. one per instance type) on one time axis."""
    drawable = [(i, a) for i, a in enumerate(analyses) if a.series is not None and a.series.n]
    scale, label = unit_scale(unit, _fastest([a for _, a in drawable]))
    fig, axes = _figure(1, 1, height=4.0)
    ax = axes[0][0]
    for n, (i, a) in enumerate(drawable):
        s = a.series
        assert s is not None
        x = np.concatenate(([s.lead_seconds + s.start[0]], s.lead_seconds + s.end))
        name = labels[i] if labels is not None else run_title(a)
        ax.stairs(
            s.rate * _factor(a, rate) / scale,
            x,
            lw=1.8,
            label=name,
            color=series_style(n)["color"],
            linestyle=series_style(n)["linestyle"],
            baseline=None,  # no drop to 0 at the ends: the run did not stop at 0
        )
    ax.set_title(title, loc="left", fontsize=11, fontweight="bold")
    ax.set_xlabel("seconds since the test began")
    ax.set_ylabel(f"{label}/s ({rate})")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    if drawable:
        _legend_outside(ax)
    return to_bytes(fig, fmt)


def inout_bars(
    rows: Sequence[tuple[str, float | None, float | None]],
    title: str = "Out vs in per instance type",
    basis: str = "goodput",
    fmt: Fmt = "svg",
) -> bytes:
    """Grouped bars (out, in) per configuration, each pair annotated with out ÷ in."""
    fastest = max((v for _, o, i in rows for v in (o, i) if v is not None), default=0.0)
    scale, unit = unit_scale("auto", fastest)
    fig, axes = _figure(1, 1, height=max(3.0, 0.55 * len(rows) + 1.6))
    ax = axes[0][0]
    y = np.arange(len(rows))
    h = 0.38
    outs = [(o or 0.0) / scale for _, o, _ in rows]
    ins = [(i or 0.0) / scale for _, _, i in rows]
    ax.barh(y - h / 2, outs, h, color=COLORS["out"], label="out (host sends)")
    ax.barh(y + h / 2, ins, h, color=COLORS["in"], label="in (host receives)")
    top = max([*outs, *ins, 1e-12])
    for k, (_, o, i) in enumerate(rows):
        for dy, v in ((-h / 2, o), (h / 2, i)):
            if v is not None:
                ax.text(v / scale + top * 0.01, k + dy, sig(v / scale), va="center", fontsize=8)
        if o and i:
            ax.text(
                top * 1.22,
                k,
                f"out ÷ in {o / i:.2f}",
                va="center",
                ha="right",
                fontsize=8,
                color="#444",
            )
    ax.set_yticks(y, [name for name, _, _ in rows])
    ax.invert_yaxis()
    ax.set_xlim(0, top * 1.25)
    ax.set_xlabel(f"{unit}/s ({basis}, mean of runs)")
    ax.set_title(title, loc="left", fontsize=11, fontweight="bold")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, frameon=False)
    return to_bytes(fig, fmt)


def rate_cdf(
    groups: Mapping[str, Sequence[float]],
    title: str = "Distribution of interval rates",
    basis: str = "goodput",
    fmt: Fmt = "svg",
) -> bytes:
    """Empirical CDF of each group's interval rates (bits/s)."""
    fastest = max((max(v) for v in groups.values() if len(v)), default=0.0)
    scale, unit = unit_scale("auto", fastest)
    fig, axes = _figure(1, 1, height=3.8)
    ax = axes[0][0]
    for n, (name, values) in enumerate(groups.items()):
        v = np.sort(np.asarray(values, dtype=float)) / scale
        if v.size:
            ax.step(
                v,
                np.arange(1, v.size + 1) / v.size,
                where="post",
                lw=1.8,
                label=f"{name} (n={v.size})",
                color=series_style(n)["color"],
                linestyle=series_style(n)["linestyle"],
            )
    ax.set_title(title, loc="left", fontsize=11, fontweight="bold")
    ax.set_xlabel(f"{unit}/s ({basis}, per interval)")
    ax.set_ylabel("fraction of intervals ≤ x")
    ax.set_ylim(0, 1.02)
    ax.set_xlim(left=0)
    ax.grid(alpha=0.3)
    if groups:
        _legend_outside(ax)
    return to_bytes(fig, fmt)


#: line styles and markers that tell apart series sharing one of the 10 colours (issue 36:
#: the 11th series was drawn as the 1st)
_DASHES = ("-", "--", ":", "-.")
_MARKERS = ("o", "s", "^", "D")


def series_style(n: int) -> dict[str, str]:
    """The ``n``-th series' colour, line style and marker: the 10 colours first, then each again
    with the next dash and marker (40 distinct series, then it repeats)."""
    turn = (n // 10) % len(_DASHES)
    return {"color": f"C{n % 10}", "linestyle": _DASHES[turn], "marker": _MARKERS[turn]}


def _legend_outside(ax: Axes) -> None:
    """The legend right of the axes: with many series no place inside is free of lines."""
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)


def price_scatter(
    points: Sequence[tuple[str, float, float | None, float | None]],
    title: str = "Price vs performance",
    fmt: Fmt = "svg",
) -> bytes:
    """$/hour against sustained (filled) and peak (hollow) rate, one label per type."""
    fastest = max((v for _, _, s, p in points for v in (s, p) if v), default=0.0)
    scale, unit = unit_scale("auto", fastest)
    fig, axes = _figure(1, 1, height=4.0)
    ax = axes[0][0]
    for n, (name, price, sustained, peak) in enumerate(points):
        style = series_style(n)
        color, marker = style["color"], style["marker"]
        if sustained:
            ax.scatter(
                [sustained / scale], [price], color=color, marker=marker, s=60, zorder=3,
                label=f"{name}",
            )  # fmt: skip
            ax.annotate(
                name,
                (sustained / scale, price),
                textcoords="offset points",
                xytext=(6, 4),
                fontsize=8,
            )
        if peak and peak != sustained:
            ax.scatter(
                [peak / scale], [price], facecolors="none", edgecolors=color, marker=marker, s=60,
                zorder=3,
            )  # fmt: skip
            if sustained:
                ax.plot(
                    [sustained / scale, peak / scale], [price, price], color=color, lw=1, ls=":"
                )
    ax.set_title(
        title + " (filled: sustained, hollow: peak)", loc="left", fontsize=11, fontweight="bold"
    )
    ax.set_xlabel(f"{unit}/s (goodput)")
    ax.set_ylabel("$ per hour")
    # room above and to the right for the point labels
    ax.set_xlim(0, max(fastest / scale, 1e-12) * 1.25)
    ax.set_ylim(0, max((p for _, p, _, _ in points), default=0.0) * 1.15 or 1.0)
    ax.grid(alpha=0.3)
    return to_bytes(fig, fmt)


def latency_bars(
    rows: Sequence[tuple[str, float | None, float | None, float | None]],
    title: str = "Request/response latency per topology",
    fmt: Fmt = "svg",
) -> bytes:
    """p50, p99, p99.9 (µs) per topology: the tail drives the mean."""
    fig, axes = _figure(1, 1, height=max(3.0, 0.6 * len(rows) + 1.6))
    ax = axes[0][0]
    y = np.arange(len(rows))
    h = 0.26
    for k, (name, color) in enumerate((("p50", "C0"), ("p99", "C1"), ("p99.9", "C3"))):
        vals = [float(r[1 + k] or 0.0) for r in rows]
        ax.barh(y + (k - 1) * h, vals, h, color=color, label=name)
        for j, v in enumerate(vals):
            if v:
                ax.text(v, j + (k - 1) * h, " " + sig(v), va="center", fontsize=8)
    ax.set_yticks(y, [r[0] for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel("µs (round trip)")
    ax.set_xlim(0, max([float(v or 0.0) for r in rows for v in r[1:]] + [1.0]) * 1.2)
    ax.set_title(title, loc="left", fontsize=11, fontweight="bold")
    ax.grid(axis="x", alpha=0.3)
    _legend_outside(ax)  # inside, it covers the longest bar's label
    return to_bytes(fig, fmt)


def compare_intervals(
    rows: Sequence[tuple[str, float, float, float, str]],
    title: str = "B − A in % of A, with its 95 % interval",
    fmt: Fmt = "svg",
) -> bytes:
    """One line per (group, metric): the difference B − A in % of A as a dot, its interval as a
    bar, a line at 0; coloured by verdict. ``rows``: (label, diff %, low %, high %, verdict)."""
    colors = {"better": "#2e7d32", "worse": "#c62828"}
    fig, axes = _figure(1, 1, height=max(2.4, 0.45 * len(rows) + 1.4))
    ax = axes[0][0]
    for k, (_, diff, low, high, verdict) in enumerate(rows):
        color = colors.get(verdict, "#555555")
        ax.plot([low, high], [k, k], color=color, lw=3, alpha=0.6, solid_capstyle="butt")
        ax.plot([diff], [k], "o", color=color, ms=7)
        ax.annotate(
            f"{verdict}: {pm(diff, (high - low) / 2)} %",
            (diff, k),
            textcoords="offset points",
            xytext=(0, 9),
            ha="center",
            fontsize=8,
            color=color,
        )
    ax.axvline(0, color="#333333", lw=1)
    ax.set_yticks(range(len(rows)), [r[0] for r in rows])
    ax.set_ylim(len(rows) - 0.4, -0.7)  # top to bottom, room above each bar for its verdict
    reach = max([abs(v) for r in rows for v in r[1:4]] + [1.0])
    ax.set_xlim(-reach * 1.3, reach * 1.3)
    ax.set_xlabel("% of A (0 = no difference)")
    ax.set_title(title, loc="left", fontsize=11, fontweight="bold")
    ax.grid(axis="x", alpha=0.3)
    return to_bytes(fig, fmt)
