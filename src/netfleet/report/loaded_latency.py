"""Latency under load per run — a table of every phase (p50/p90/p99/max RTT, inflation over idle,
responsiveness in round trips per minute, one-way medians, loss, the load's goodput and whether
it reached the link): :func:`loaded_table` (``netfleet report loaded``, every output format) and
the study report's ``loaded`` section (the same table and, for the first few runs, latency over
time with the phases shaded).

Reads the catalog's ``latency_phases`` and ``latency_samples`` tables (the
``latency-under-load`` engine fills them).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from netfleet.catalog import query
from netfleet.report.cheatsheet import Scale, scaled_runs
from netfleet.report.document import Figure, Paragraph, Section, Table
from netfleet.report.loaded_plots import loaded_latency_plot
from netfleet.tabular import Tabular

#: at most this many runs get a plot
MAX_PLOTS = 6
COLUMNS = (
    "p.phase, p.samples, p.loss_percent, p.p50_us / 1000 AS p50_ms, p.p90_us / 1000 AS p90_ms, "
    "p.p99_us / 1000 AS p99_ms, p.max_us / 1000 AS max_ms, "
    "p.inflation_p50_us / 1000 AS inflation_p50_ms, p.inflation_p99_us / 1000 AS inflation_p99_ms, "
    "p.rpm, "
    "p.send_p50_us / 1000 AS up_p50_ms, p.receive_p50_us / 1000 AS down_p50_ms, "
    "p.up_bps / 1e6 AS up_mbps, p.down_bps / 1e6 AS down_mbps, p.reached, p.warning"
)


def _filter(campaigns: Sequence[str]) -> tuple[str, list[Any]]:
    if not campaigns:
        return "", []
    return f" AND r.campaign IN ({', '.join('?' for _ in campaigns)})", list(campaigns)


#: what the table's figures are, said once (the section's text and the table's notes)
ABOUT = (
    "The same probe idle, then while iperf3 loads the path up (client → server), down and both "
    "ways. Inflation = the phase's percentile − idle's: what a full queue adds to every packet. "
    "ms; goodput in Mbit/s (receiver side); up/down p50 are irtt's one-way delays (as good as the "
    "hosts' clock agreement). rpm: responsiveness in round trips per minute (IETF IPPM "
    "responsiveness draft, Apple's networkQuality): 60 s ÷ the trimmed mean of the phase's round "
    "trips (slowest 5 % left out), from the probe's own flow — the draft's foreign probes only "
    "(iperf3's load connections carry none)."
)


#: the columns a scaled lab's cloud figures divide (the load's goodput; latency is not scaled)
RATES = ("up_mbps", "down_mbps")


def _rows(catalog: str | os.PathLike[str], campaigns: Sequence[str]) -> Tabular:
    cond, params = _filter(campaigns)
    return query(
        catalog,
        "SELECT r.run_id, r.test, r.client, r.server, r.repeat, "  # noqa: S608 (cond: placeholders)
        "json_extract_string(r.labels, '$.lab_scale') AS lab_scale, "
        "json_extract_string(r.labels, '$.lab_time_scale') AS lab_time_scale, "
        f"{COLUMNS} FROM runs r JOIN latency_phases p USING (run_id) "
        f"WHERE r.status IN ('ok', 'failed'){cond} ORDER BY r.started_at, p.start_s",
        params,
    )


def _titles(t: Tabular) -> dict[str, str]:
    titles: dict[str, str] = {}
    for run_id, test, client, server, repeat, *_ in t.rows:
        titles.setdefault(str(run_id), f"{test} · {client} → {server} · repeat {repeat}")
    return titles


#: where the phase's own columns start (after the run's, and its lab_scale labels)
FIRST = 7


def _warnings(t: Tabular) -> list[str]:
    return sorted({f"{r[1]} · {r[FIRST]}: {r[-1]}" for r in t.rows if r[-1]})


def _phase_table(t: Tabular, titles: dict[str, str], scale: Scale = "lab") -> Tabular:
    """One row per phase: the run's title, then the phase's figures (the warning apart), and a
    scaled lab's ``scale`` (``scale`` cloud: its goodput as the cloud figures it stands for)."""
    rows, columns, notes = scaled_runs(
        [[titles[str(r[0])], *r[FIRST:-1]] for r in t.rows],
        ["run", *t.columns[FIRST:-1]],
        RATES,
        [(str(r[1]), r[5], r[6]) for r in t.rows],
        scale,
    )
    if notes:
        notes.append(
            "a scaled lab's latency (ms, rpm) is the lab's own in every scale: only rates are "
            "scaled (up_mbps, down_mbps)."
        )
    return Tabular(columns, rows, title="Latency under load", notes=notes)


def loaded_table(
    catalog: str | os.PathLike[str], campaigns: Sequence[str] = (), scale: Scale = "lab"
) -> Tabular:
    """Every phase of every latency-under-load run (``campaigns``: only those), with the notes
    that say what the figures are and each phase's warning. ``scale``: a scaled lab's goodput
    as measured (``lab``) or as the cloud figures it stands for (``cloud``)."""
    t = _rows(catalog, campaigns)
    table = _phase_table(t, _titles(t), scale)
    table.notes = [ABOUT, *table.notes, *_warnings(t)] if t.rows else ["no latency-under-load runs"]
    return table


def loaded_section(catalog: str | os.PathLike[str], campaigns: Sequence[str]) -> Section | None:
    """The section, or None when no run measured latency under load."""
    t = _rows(catalog, campaigns)
    if not t.rows:
        return None
    s = Section("loaded", "Latency under load")
    s.add(Paragraph(ABOUT))
    for text in _warnings(t):
        s.add(Paragraph(text, "warn"))
    titles = _titles(t)
    for k, (run_id, title) in enumerate(list(titles.items())[:MAX_PLOTS]):
        s.add(
            Figure(f"loaded-{k + 1}", f"latency over time: {title}", _plot(catalog, run_id, title))
        )
    if len(titles) > MAX_PLOTS:
        s.add(Paragraph(f"plots for the first {MAX_PLOTS} of {len(titles)} runs", "note"))
    return s.add(Table(_phase_table(t, titles, "cloud")))  # the study report's figures


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
