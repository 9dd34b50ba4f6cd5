"""What a finished run's line says about its rate: one average where the run held one level,
both levels where it held two (issue 36: a credit host's 12 s run is "379 → 47.8 Mbit/s after
6.1 s", never the 215 Mbit/s average that no interval had)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from netfleet.report.numbers import sig
from netfleet.units import fmt_rate

if TYPE_CHECKING:
    from netfleet.report.labscale import LabScale

#: what the run lines' words mean, printed once before them (``netfleet run``, ``demo``)
RUN_LINE_LEGEND = (
    "run lines: status, test, client→server (data flows client→server for 'out', "
    "server→client for 'in'), direction, P<streams>, <measured>+<omitted> s, #<repeat>, then "
    "the received rate ('A → B after T s': a burst at A, then B from T s on; a scaled lab's "
    "run adds the cloud figures it stands for: '(lab ×0.05; cloud …)', the lab's ÷ its "
    "lab_scale)"
)


#: a run whose intervals (but the lowest and the highest) span less than this never gets the
#: analysis: it held one level
MAY_CHANGE_LEVEL = 1.25


def _levels(peak: float, base: float, secs: float) -> str:
    scale, unit = (1e9, "Gbit/s") if peak >= 1e9 else (1e6, "Mbit/s")
    return f"{sig(peak / scale)} → {sig(base / scale)} {unit} after {secs:.1f} s"


def levels_text(credit: Any, scale: LabScale | None = None) -> str | None:
    """``379 → 47.8 Mbit/s after 6.1 s`` for a run the analysis found burst then baseline
    (:class:`netfleet.analysis.credit.CreditEstimate` of kind "burst"), else None. With the
    ``scale`` of a scaled lab, the cloud figures follow: ``(lab ×0.05; cloud 7.58 → 0.956
    Gbit/s after 122.0 s)``."""
    peak, base, secs = credit.peak, credit.baseline, credit.burst_seconds
    if credit.kind != "burst" or peak is None or base is None or secs is None:
        return None
    text = _levels(peak.value, base.value, secs.value)
    if scale is None:
        return text
    cloud = _levels(
        scale.cloud_rate(peak.value), scale.cloud_rate(base.value), scale.cloud_seconds(secs.value)
    )
    lab = f"lab ×{scale.rate:g}" + (f", time ×{scale.time:g}" if scale.time != scale.rate else "")
    return f"{text} ({lab}; cloud {cloud})"


def _scale(labels: Any) -> LabScale | None:
    """A scaled lab's :class:`~netfleet.report.labscale.LabScale` from a run's labels (the
    analysis, and its start-up, only for such a run)."""
    if not isinstance(labels, Mapping) or labels.get("lab_scale") is None:
        return None
    from netfleet.report.labscale import scale_of

    return scale_of(labels)


def rate_line(bps: float, text: str, labels: Mapping[str, Any]) -> str:
    """An engine's one-line ``text`` of its received rate ``bps``, with the cloud figure a
    scaled lab's rate stands for (``287 Mbit/s (lab ×0.05; cloud 5.74 Gbit/s)``)."""
    scale = _scale(labels)
    if scale is None:
        return text
    return f"{text} (lab ×{scale.rate:g}; cloud {fmt_rate(scale.cloud_rate(bps))})"


def run_levels(doc: Mapping[str, Any]) -> str | None:
    """:func:`levels_text` of a stored run (an envelope as JSON), with the cloud figures of a
    scaled lab's run (its ``lab_scale`` label), or None when it is no throughput run with
    intervals, or held one level."""
    from netfleet.catalog.build import RowError, envelope_rows

    try:
        columns = envelope_rows(doc).intervals
    except (RowError, TypeError, KeyError):
        return None
    rates = sorted(
        float(bps)
        for kind, omitted, bps in zip(
            columns.column("kind"),
            columns.column("omitted"),
            columns.column("bits_per_second"),
            strict=True,
        )
        if kind == "sum" and not omitted and bps
    )
    # one level (an outlier at either end aside): no analysis (numpy and its start-up) needed
    if len(rates) < 4 or rates[-2] <= MAY_CHANGE_LEVEL * rates[1]:
        return None
    from netfleet.analysis.analyze import analyze_rows
    from netfleet.analysis.series import run_from_envelope

    info, rows = run_from_envelope(doc)
    labels = doc.get("labels")
    return levels_text(analyze_rows(info, rows).credit, _scale(labels))
