"""The latency-under-load plot: the probe's round trips over time, each phase shaded and labelled
with its p50 inflation over idle (matplotlib through :mod:`netfleet.report.plots`).

::

    loaded_latency_plot(samples, phases, "a → deep · repeat 0", fmt="png")

``samples``: ``(t seconds, rtt µs or None when lost)``; ``phases``: ``(name, start s, end s,
inflation_p50 µs or None)`` — the windows the statistics used (after ``settle``).
"""

from __future__ import annotations

from collections.abc import Sequence

from netfleet.report.numbers import sig
from netfleet.report.plots import Fmt, _figure, to_bytes

#: one shade per phase kind (idle is the reference: grey)
PHASE_COLORS = {"idle": "#dddddd", "up": "#9ecae9", "down": "#ffbf79", "both": "#b5d99c"}

#: phase labels stay readable over the points
LABEL_BOX = {"facecolor": "white", "alpha": 0.7, "lw": 0}

Sample = tuple[float, float | None]
PhaseWindow = tuple[str, float, float, float | None]


def loaded_latency_plot(
    samples: Sequence[Sample], phases: Sequence[PhaseWindow], title: str, fmt: Fmt = "svg"
) -> bytes:
    """RTT (ms, log scale when it spans more than 20×) against time, phases shaded, lost
    packets as ticks on the x axis."""
    fig, axes = _figure(1, 1, height=3.4)
    ax = axes[0][0]
    for name, start, end, inflation in phases:
        ax.axvspan(start, end, color=PHASE_COLORS.get(name, "#eeeeee"), alpha=0.6, lw=0)
        words = (
            name
            if inflation is None or name == "idle"
            else f"{name}\n{'+' if inflation >= 0 else '−'}{sig(abs(inflation) / 1000)} ms"
        )
        ax.text((start + end) / 2, 1.0, words, transform=ax.get_xaxis_transform(), ha="center",
                va="top", fontsize=8, bbox=LABEL_BOX)  # fmt: skip
    got = [(t, r / 1000) for t, r in samples if r is not None]
    lost = [t for t, r in samples if r is None]
    if got:
        ax.plot([t for t, _ in got], [r for _, r in got], ".", ms=2, color="#4c78a8", label="RTT")
        lo, hi = min(r for _, r in got), max(r for _, r in got)
        if lo > 0 and hi / lo > 20:
            ax.set_yscale("log")
    if lost:
        ax.plot(lost, [0] * len(lost), "|", color="#e45756", ms=8, label="lost",
                transform=ax.get_xaxis_transform())  # fmt: skip
    ax.set_xlabel("seconds since the probe started")
    ax.set_ylabel("round trip (ms)")
    ax.set_title(title, loc="left", fontsize=11, fontweight="bold")
    ax.grid(alpha=0.3)
    return to_bytes(fig, fmt)
