"""What a finished run's line says about its rate: one average where the run held one level,
both levels where it held two (issue 36: a credit host's 12 s run is "379 → 47.8 Mbit/s after
6.1 s", never the 215 Mbit/s average that no interval had)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from netfleet.report.numbers import sig

#: what the run lines' words mean, printed once before them (``netfleet run``, ``demo``)
RUN_LINE_LEGEND = (
    "run lines: status, test, client→server (data flows client→server for 'out', "
    "server→client for 'in'), direction, P<streams>, <measured>+<omitted> s, #<repeat>, then "
    "the received rate ('A → B after T s': a burst at A, then B from T s on)"
)


#: a run whose intervals (but the lowest and the highest) span less than this never gets the
#: analysis: it held one level
MAY_CHANGE_LEVEL = 1.25


def levels_text(credit: Any) -> str | None:
    """``379 → 47.8 Mbit/s after 6.1 s`` for a run the analysis found burst then baseline
    (:class:`netfleet.analysis.credit.CreditEstimate` of kind "burst"), else None."""
    peak, base, secs = credit.peak, credit.baseline, credit.burst_seconds
    if credit.kind != "burst" or peak is None or base is None or secs is None:
        return None
    scale, unit = (1e9, "Gbit/s") if peak.value >= 1e9 else (1e6, "Mbit/s")
    return f"{sig(peak.value / scale)} → {sig(base.value / scale)} {unit} after {secs.value:.1f} s"


def run_levels(doc: Mapping[str, Any]) -> str | None:
    """:func:`levels_text` of a stored run (an envelope as JSON), or None when it is no
    throughput run with intervals, or held one level."""
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
    return levels_text(analyze_rows(info, rows).credit)
