"""The study report's ``loaded`` section: latency under load per run — a table of every phase
(p50/p90/p99/max RTT, inflation over idle, one-way medians, loss, the load's goodput and whether
it reached the link) and, for the first few runs, latency over time with the phases shaded.

Reads the catalog's ``latency_phases`` and ``latency_samples`` tables (the
``latency-under-load`` engine fills them).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from netfleet.catalog import query
from netfleet.report.document import Figure, Paragraph, Section, Table
from netfleet.report.loaded_plots import loaded_latency_plot

#: at most this many runs get a plot
MAX_PLOTS = 6
COLUMNS = (
    "p.phase, p.samples, p.loss_percent, p.p50_us / 1000 AS p50_ms, p.p90_us / 1000 AS p90_ms, "
    "p.p99_us / 1000 AS p99_ms, p.max_us / 1000 AS max_ms, "
    "p.inflation_p50_us / 1000 AS inflation_p50_ms, p.inflation_p99_us / 1000 AS inflation_p99_ms, "
    "p.send_p50_us / 1000 AS up_p50_ms, p.receive_p50_us / 1000 AS down_p50_ms, "
    "p.up_bps / 1e6 AS up_mbps, p.down_bps / 1e6 AS down_mbps, p.reached, p.warning"
)


def _filter(campaigns: Sequence[str]) -> tuple[str, list[Any]]:
    if not campaigns:
        return "", []
    return f" AND r.campaign IN ({', '.join('?' for _ in campaigns)})", list(campaigns)


def loaded_section(catalog: str | os.PathLike[str], campaigns: Sequence[str]) -> Section | None:
    """The section, or None when no run measured latency under load."""
    cond, params = _filter(campaigns)
    t = query(
        catalog,
        "SELECT r.run_id, r.test, r.client, r.server, r.repeat, "  # noqa: S608 (cond: placeholders)
        f"{COLUMNS} FROM runs r JOIN latency_phases p USING (run_id) "
        f"WHERE r.status IN ('ok', 'failed'){cond} ORDER BY r.started_at, p.start_s",
        params,
    )
    if not t.rows:
        return None
    s = Section("loaded", "Latency under load")
    s.add(
        Paragraph(
            "The same probe idle, then while iperf3 loads the path up (client → server), down "
            "and both ways. Inflation = the phase's percentile − idle's: what a full queue adds "
            "to every packet. ms; goodput in Mbit/s (receiver side); up/down p50 are irtt's "
            "one-way delays (as good as the hosts' clock agreement)."
        )
    )
    for text in sorted({f"{r[1]} · {r[5]}: {r[-1]}" for r in t.rows if r[-1]}):
        s.add(Paragraph(text, "warn"))
    titles: dict[str, str] = {}
    for run_id, test, client, server, repeat, *_ in t.rows:
        titles.setdefault(str(run_id), f"{test} · {client} → {server} · repeat {repeat}")
    for k, (run_id, title) in enumerate(list(titles.items())[:MAX_PLOTS]):
        s.add(
            Figure(f"loaded-{k + 1}", f"latency over time: {title}", _plot(catalog, run_id, title))
        )
    if len(titles) > MAX_PLOTS:
        s.add(Paragraph(f"plots for the first {MAX_PLOTS} of {len(titles)} runs", "note"))
    t.rows = [[titles[str(r[0])], *r[5:-1]] for r in t.rows]
    t.columns = ["run", *t.columns[5:-1]]
    return s.add(Table(t))


def _plot(catalog: str | os.PathLike[str], run_id: str, title: str) -> bytes:
    """One run's latency over time, its phases (the windows the statistics used) shaded."""
    samples = query(
        catalog,
        "SELECT t, rtt_us FROM latency_samples WHERE run_id = ? ORDER BY t",
        [run_id],
    ).rows
    windows = query(
        catalog,
        "SELECT phase, start_s, end_s, inflation_p50_us FROM latency_phases WHERE run_id = ? "
        "ORDER BY start_s",
        [run_id],
    ).rows
    phases = [(str(p), float(a), float(b), i) for p, a, b, i in windows]
    points = [(float(t), None if r is None else float(r)) for t, r in samples]
    return loaded_latency_plot(points, phases, title, fmt="png")
