"""The study report's content: which sections the data supports, their tables and figures.

::

    doc = build_document("catalog/", campaigns=["r4-burst"], compare=("before", "after"))
    write_html(doc, Path("study.html"))        # netfleet.report.html
    write_markdown(doc, Path("study.md"))      # netfleet.report.markdown (+ PNG files beside)

Sections, in order (each only when the data supports it): summary, cheat sheet (with
distribution and overlay), out vs in, measured ÷ advertised, burst vs baseline, latency per
topology, latency under load, price, compare, per-run appendix.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from netfleet.analysis import GroupAnalysis, RunAnalysis
from netfleet.analysis.calculator import plan
from netfleet.catalog import query
from netfleet.catalog.cheatsheet import LEVELS_TAG
from netfleet.errors import InputError, NetfleetError
from netfleet.pricetable import PriceTable
from netfleet.report import plots
from netfleet.report.analysis_tables import calc_table, estimate_text, groups_table
from netfleet.report.burst_answer import burst_answer
from netfleet.report.cheatsheet import cheatsheet
from netfleet.report.document import Bullets, Document, Figure, Paragraph, Section, Table
from netfleet.report.labscale import LabScale, common_scale, goodput_basis_note, scale_of
from netfleet.report.loaded_latency import loaded_section
from netfleet.report.numbers import sig
from netfleet.report.price import price_performance
from netfleet.report.study import rates_of, throughput_groups
from netfleet.tabular import Tabular
from netfleet.units import parse_rate

ADVERTISED_LABELS = {"out": "advertised_out", "in": "advertised_in"}
ADVERTISED_LABEL = "advertised"
BURST_KINDS = ("burst", "burst-unfinished")
#: at most this many burst hosts get a plot and calculator answers
MAX_BURST_HOSTS = 8
#: a level whose ± exceeds this fraction of it is not a headline number
WIDE = 0.25
#: a cheat-sheet row whose runs the analysis finds burst then baseline (the sheet's own rule,
#: :func:`netfleet.catalog.cheatsheet.levels_flag`, cannot tell which level is which)
BURST_ROW_FLAG = (
    "burst then baseline in one row: min ≈ the baseline, max ≈ the burst, avg and p50 are "
    "neither; see Burst vs baseline"
)
#: appendix columns left out (and said once) when every run has the same value
SAID_ONCE = frozenset({"campaign", "test", "server", "engine", "status", "repeat"})


def _campaign_filter(campaigns: Sequence[str]) -> tuple[str, list[Any]]:
    if not campaigns:
        return "", []
    return f" AND campaign IN ({', '.join('?' for _ in campaigns)})", list(campaigns)


def _label(g: GroupAnalysis) -> str:
    return " · ".join(str(v) for v in g.keys.values() if v is not None)


def _runs_info(catalog: str | os.PathLike[str], campaigns: Sequence[str]) -> Tabular:
    cond, params = _campaign_filter(campaigns)
    return query(
        catalog,
        "SELECT campaign, test, client, server, direction, engine, engine_version, status, "  # noqa: S608
        "started_at, duration_s, labels, run_id, source, netfleet_version, repeat, parallel "
        f"FROM runs WHERE true{cond} ORDER BY started_at",
        params,
    )


def summary_section(
    runs: Tabular,
    groups: Sequence[GroupAnalysis],
    advice: Sequence[Any],
    advice_note: Paragraph | None,
) -> Section:
    recs = runs.records()
    s = Section("summary", "Summary")
    campaigns = sorted({str(r["campaign"]) for r in recs})
    started = [r["started_at"] for r in recs if r["started_at"] is not None]
    types = sorted(
        {str(json.loads(r["labels"] or "{}").get("instance_type") or r["client"]) for r in recs}
    )
    engines = sorted({f"{r['engine']} {r['engine_version'] or '(version unknown)'}" for r in recs})
    nf = sorted({str(r["netfleet_version"]) for r in recs if r["netfleet_version"]})
    ok = sum(1 for r in recs if r["status"] == "ok")
    when = f"{min(started):%Y-%m-%d %H:%M} to {max(started):%Y-%m-%d %H:%M} UTC" if started else "?"
    s.add(
        Bullets(
            (
                f"What: {len(recs)} runs ({ok} complete) of campaign(s) {', '.join(campaigns)}.",
                f"On what: {', '.join(types)}.",
                f"When: {when}.",
                f"Engines: {'; '.join(engines)}; netfleet {', '.join(nf) or '?'}.",
            )
        )
    )
    heads = []
    for g in groups:
        r = rates_of(g)
        if r.sustained is None and r.peak is None:
            continue
        answer = burst_answer(g)
        lab = common_scale(a.run.labels for a in g.runs)
        if answer is not None:
            heads.append(answer.sentence())
        elif r.sustained is not None and r.sustained.err > WIDE * r.sustained.value:
            heads.append(
                f"{_label(g)}: the runs disagree widely — no single level (see the cheat sheet "
                "and the appendix; a mean over them would describe none of them)."
            )
        elif r.sustained is not None:
            heads.append(f"{_label(g)}: {_level_text(r.sustained, lab)} ({r.kind}).")
    if heads:
        labs = [common_scale(a.run.labels for a in g.runs) for g in groups]
        scaled = any(labs)
        goodput = [
            _label(g) for g, lab in zip(groups, labs, strict=True) if lab and lab.basis == "goodput"
        ]
        if goodput:  # compared with the seed, its figures land under it: said here
            heads.append(goodput_basis_note(", ".join(goodput)))
        s.add(
            Paragraph(
                "Headline numbers (receiver goodput"
                + (
                    "; a scaled lab's figures as the cloud figures they stand for, the lab's "
                    "beside them"
                    if scaled
                    else ""
                )
                + "):"
            ),
            Bullets(tuple(heads)),
        )
    if advice:
        rows = [
            [
                a.severity,
                a.message,
                a.fix,
                a.evidence,
                ", ".join(a.run_ids[:4])
                + (f" (+{len(a.run_ids) - 4})" if len(a.run_ids) > 4 else ""),
            ]
            for a in advice
        ]
        s.add(
            Paragraph("Advice, each with its evidence:"),
            Table(Tabular(["severity", "finding", "fix", "evidence", "runs"], rows)),
        )
    if advice_note is not None:
        s.add(advice_note)
    return s


def _level_text(e: Any, lab: LabScale | None) -> str:
    scale, unit = (1e9, "Gbit/s") if e.value >= 1e9 else (1e6, "Mbit/s")
    if lab is None:
        return estimate_text(e, unit, scale)
    cloud = lab.cloud_rate(e.value)
    cs, cu = (1e9, "Gbit/s") if cloud >= 1e9 else (1e6, "Mbit/s")
    return (
        f"{estimate_text(e.scaled(1 / lab.rate), cu, cs)} in the cloud "
        f"(lab {estimate_text(e, unit, scale)})"
    )


def _unit_for(groups: Sequence[GroupAnalysis], cloud: bool = False) -> str:
    """The cheat sheet's unit: Gbit/s when its fastest interval reaches 1 Gbit/s (``cloud``:
    a scaled lab's as the cloud figure it stands for)."""
    fastest = max(
        (
            float(a.series.rate.max()) / (lab.rate if cloud and lab else 1.0)
            for g in groups
            for a in g.runs
            if a.series is not None and a.series.n
            for lab in (scale_of(a.run.labels),)
        ),
        default=0.0,
    )
    return "gbit" if fastest >= 1e9 else "mbit"


def cheatsheet_section(
    catalog: str | os.PathLike[str],
    campaigns: Sequence[str],
    groups: Sequence[GroupAnalysis],
    unit: str,
) -> Section | None:
    keys = (
        ("instance_type", "direction")
        if len(campaigns) <= 1
        else ("campaign", "instance_type", "direction")
    )
    # a scaled lab's rows as the cloud figures they stand for, as the summary gives them
    scaled = any(scale_of(a.run.labels) for g in groups for a in g.runs)
    try:
        sheet = cheatsheet(
            Path(catalog),
            group_by=keys,
            campaign=campaigns[0] if len(campaigns) == 1 else None,
            unit=_unit_for(groups, cloud=True) if scaled else unit,
            scale="cloud" if scaled else "lab",
        )
    except NetfleetError as exc:
        return Section("cheatsheet", "Cheat sheet").add(Paragraph(f"no cheat sheet: {exc}", "note"))
    if len(campaigns) > 1:
        sheet.rows = [r for r in sheet.rows if r[0] in campaigns]
    if not sheet.rows:
        return None
    kinds = {
        (g.keys.get("instance_type"), g.keys.get("direction")): rates_of(g).kind for g in groups
    }
    flags: dict[int, str] = {}
    it, d = sheet.columns.index("instance_type"), sheet.columns.index("direction")
    f = sheet.columns.index("flag")
    level_rows = set()  # flagged for a level change: the sheet's rule, or the analysis's burst
    for n, row in enumerate(sheet.rows):
        own = [x for x in str(row[f] or "").split("; ") if x]
        if kinds.get((row[it], row[d])) in BURST_KINDS:  # the analysis knows which level is which
            own = [BURST_ROW_FLAG, *(x for x in own if LEVELS_TAG not in x)]
        if own:
            flags[n] = "; ".join(own)
        if any(x == BURST_ROW_FLAG or LEVELS_TAG in x for x in own):
            level_rows.add(n)
    sheet.columns = [c for i, c in enumerate(sheet.columns) if i != f]
    sheet.rows = [[v for i, v in enumerate(row) if i != f] for row in sheet.rows]
    s = Section("cheatsheet", "Cheat sheet")
    s.add(Table(sheet, flags))
    if scaled:
        s.add(
            Paragraph(
                "Rows flagged 'cloud' were measured in a scaled lab: their rates are the cloud "
                "figures the lab's stand for (the lab's ÷ its lab_scale), as in the summary; "
                "the plots below show the lab's own rates.",
                "note",
            )
        )
    if level_rows:
        s.add(
            Paragraph(
                f"{len(level_rows)} row(s) flagged because their runs change level (a credit "
                "burst), so one average misdescribes them; see Burst vs baseline.",
                "warn",
            )
        )
    cdf: dict[str, list[float]] = {}
    for g in groups:
        vals = [float(v) for a in g.runs if a.series is not None for v in a.series.rate]
        if vals:
            cdf[_label(g)] = vals
    if cdf:
        s.add(
            Figure(
                "rate-cdf",
                "Distribution of 1 s interval rates per instance type and direction",
                plots.rate_cdf(cdf, fmt="png"),
            )
        )
    firsts = [g.runs[0] for g in groups if g.runs and g.runs[0].series is not None]
    if len(firsts) > 1:
        s.add(
            Figure(
                "overlay",
                "The first run of each group, overlaid",
                plots.overlay_series(
                    firsts,
                    [_label(g) for g in groups if g.runs and g.runs[0].series is not None],
                    fmt="png",
                ),
            )
        )
    return s


def _mean_rate(g: GroupAnalysis) -> float | None:
    """The level a host keeps: a credit host's baseline, a steady host's level; None for runs
    that disagree widely (no single level: never their mean)."""
    r = rates_of(g)
    if r.sustained is None:
        return None
    if r.kind not in BURST_KINDS and r.sustained.err > WIDE * r.sustained.value:
        return None
    return r.sustained.value


def inout_section(groups: Sequence[GroupAnalysis]) -> Section | None:
    by_type: dict[str, dict[str, float | None]] = {}
    for g in groups:
        d = g.keys.get("direction")
        if d in ("out", "in"):
            by_type.setdefault(str(g.keys.get("instance_type")), {})[str(d)] = _mean_rate(g)
    if not by_type:
        return None
    rows = [(t, v.get("out"), v.get("in")) for t, v in by_type.items()]
    table_rows = [
        [t, o / 1e6 if o else None, i / 1e6 if i else None, (o / i) if o and i else None]
        for t, o, i in rows
    ]
    columns = ["instance_type", "out_mbps", "in_mbps", "out_over_in"]
    notes = [
        "goodput, Mbit/s; out = the host sends; a ratio far from 1 is an "
        "asymmetric limit (seed 000's Fargate tiers)."
    ]
    labs = {
        str(g.keys.get("instance_type")): common_scale(a.run.labels for a in g.runs) for g in groups
    }
    if any(labs.values()):  # a scaled lab: the cloud figures beside the lab's (as the summary)
        columns += ["lab_scale", "cloud_out_mbps", "cloud_in_mbps"]
        for row, (t, o, i) in zip(table_rows, rows, strict=True):
            lab = labs.get(t)
            cloud = [None if v is None else lab.cloud_rate(v) / 1e6 for v in (o, i)] if lab else []
            row += [lab.label(), *cloud] if lab else [None, None, None]
        notes += [lab.note(t) for t, lab in labs.items() if lab is not None]
    s = Section("inout", "Out vs in")
    s.add(
        Figure(
            "inout",
            "Out vs in per instance type: the level each keeps (a credit host's baseline, "
            "its burst is in Burst vs baseline; runs at levels too different to pool: none)",
            plots.inout_bars(rows, fmt="png"),
        ),
        Table(Tabular(columns, table_rows, notes=notes)),
    )
    return s


def _advertised(g: GroupAnalysis) -> float | None:
    for a in g.runs:
        labels = a.run.labels
        raw = labels.get(ADVERTISED_LABELS.get(str(g.keys.get("direction")), "")) or labels.get(
            ADVERTISED_LABEL
        )
        if raw is not None:
            try:
                return parse_rate(str(raw))
            except ValueError:
                return None
    return None


def advertised_section(groups: Sequence[GroupAnalysis]) -> Section | None:
    rows = []
    labs: list[LabScale | None] = []
    for g in groups:
        adv = _advertised(g)
        if adv is None:
            continue
        r = rates_of(g)
        # a scaled lab: the advertised figure is the cloud's, so is what it is divided into
        lab = common_scale(a.run.labels for a in g.runs)
        labs.append(lab)
        cloud = 1.0 if lab is None else 1 / lab.rate
        sus = r.sustained.value * cloud if r.sustained else None
        peak = r.peak.value * cloud if r.peak else None
        rows.append(
            [
                g.keys.get("instance_type"),
                g.keys.get("direction"),
                adv / 1e6,
                None if sus is None else sus / 1e6,
                None if peak is None else peak / 1e6,
                None if sus is None else sus / adv,
                None if peak is None else peak / adv,
                None if lab is None else lab.label(),
            ]
        )
    if not rows:
        return None
    scaled = [lab for lab in labs if lab is not None]
    notes = [
        "advertised from the hosts' advertised / advertised_out / advertised_in "
        "labels (usually a wire rate); measured = goodput, which is at most "
        "1448/1514 ≈ 0.956 of the wire rate at MTU 1500."
    ]
    if scaled:
        notes.append(
            "lab_scale rows: measured in a scaled lab; sustained_mbps and peak_mbps are the "
            "cloud figures the lab's stand for (÷ lab_scale), as the advertised figure is the "
            "cloud's."
        )
    else:
        rows = [row[:-1] for row in rows]
    return Section("advertised", "Measured ÷ advertised").add(
        Table(
            Tabular(
                [
                    "instance_type",
                    "direction",
                    "advertised_mbps",
                    "sustained_mbps",
                    "peak_mbps",
                    "sustained_ratio",
                    "peak_ratio",
                    *(["lab_scale"] if scaled else []),
                ],
                rows,
                notes=notes,
            )
        )
    )


def _cloud_cells(lab: LabScale | None, c: Any, at_peak: float | None, bound: str) -> list[Any]:
    """The cloud figures a scaled lab's baseline, peak, bucket and time at peak stand for."""
    if lab is None:
        return [None] * 5

    def gbps(e: Any) -> float | None:
        return None if e is None else lab.cloud_rate(e.value) / 1e9

    return [
        lab.label(),
        gbps(c.baseline),
        gbps(c.peak),
        None if c.bucket is None else lab.cloud_bits(c.bucket.value) / 1e9,
        bound + sig(lab.cloud_seconds(at_peak)) if at_peak else None,
    ]


def credit_table(bursts: Sequence[GroupAnalysis]) -> Tabular:
    """Seed 004's table: baseline, peak, initial/max credit, maximum time at peak — for a scaled
    lab, the cloud figures the lab's stand for beside them."""
    rows = []
    scales = [common_scale(a.run.labels for a in g.runs) for g in bursts]
    any_scaled = any(scales)
    for g, lab in zip(bursts, scales, strict=True):
        c = g.combined()
        at_peak = c.seconds_at_peak_full  # the model the calculator below answers from
        bound = "≥ " if c.bucket is not None and c.bucket.lower_bound else ""
        row = [
            g.keys.get("instance_type"),
            g.keys.get("direction"),
            len(g.runs),
            None if c.baseline is None else c.baseline.value / 1e6,
            None if c.peak is None else c.peak.value / 1e6,
            None if c.bucket is None else c.bucket.value / 1e9,
            bound + (sig(at_peak) if at_peak else "?"),
        ]
        if any_scaled:
            row += _cloud_cells(lab, c, at_peak, bound)
        rows.append(row)
    columns = [
        "instance_type",
        "direction",
        "runs",
        "baseline_mbps",
        "peak_mbps",
        "initial_max_credit_gbit",
        "max_time_at_peak_s",
    ]
    notes = [
        "goodput; credit = the bucket, in Gbit (AWS-style: 1 credit = 1 Gbit of data); "
        "initial/max credit = the largest bucket a run saw; max time at peak = σ / (C − ρ)."
    ]
    if any_scaled:
        columns = [
            c if c == "runs" or c.startswith(("instance", "direction")) else f"lab_{c}"
            for c in columns
        ]
        columns += [
            "lab_scale",
            "cloud_baseline_gbps",
            "cloud_peak_gbps",
            "cloud_credit_gbit",
            "cloud_time_at_peak_s",
        ]
        notes += [lab.note(_label(g)) for g, lab in zip(bursts, scales, strict=True) if lab]
    return Tabular(
        columns,
        rows,
        title="Network credit per instance type (seed 004's table)",
        notes=notes,
    )


def burst_section(groups: Sequence[GroupAnalysis]) -> Section | None:
    bursts = [g for g in groups if rates_of(g).kind in BURST_KINDS]
    if not bursts:
        return None
    s = Section("burst", "Burst vs baseline")
    answers = [a for a in map(burst_answer, bursts) if a is not None]
    if answers:
        s.add(
            Paragraph(
                "The answer (seed 004's question: how fast, for how long, then what, and how "
                "big is the bucket):"
            ),
            Bullets(tuple(a.sentence() for a in answers)),
        )
    per_group = groups_table(bursts, unit="mbit", units_in_cells=True)
    s.add(Table(credit_table(bursts)), Table(_without(per_group, "at_peak_s")))
    for g in bursts[:MAX_BURST_HOSTS]:
        best = _best_burst_run(g)
        if best is not None:
            s.add(
                Figure(
                    f"burst-{len(s.blocks)}",
                    f"{_label(g)}: series, levels, burst end and "
                    "A(t) against the token-bucket envelope",
                    plots.burst_plot(best, fmt="png"),
                )
            )
        ans = burst_answer(g)
        model = ans.cloud() if ans is not None else None
        if ans is not None and model is not None:
            half = model.bucket.value / (model.peak.value - model.baseline.value) / 2
            try:
                calc = plan(model, use=0.0, seconds=round(half, 1) or None, duty=0.1)
            except InputError:
                calc = plan(model)
            t = calc_table(calc, unit="auto")
            where = " (cloud figures)" if ans.scale is not None else ""
            t.title = f"{_label(g)}: what the bucket allows{where}"
            if ans.scale is not None:
                t.notes.append(ans.scale.note(_label(g)))
            t.notes.append(f"the same from a shell: {ans.calc_command()}")
            s.add(Table(t))
        else:
            s.add(
                Paragraph(
                    f"{_label(g)}: no calculator answers — the runs did not show "
                    "baseline, peak and bucket together (a longer run would).",
                    "note",
                )
            )
    return s


def _without(table: Tabular, column: str) -> Tabular:
    """``table`` less ``column``: one report gives one time at peak per group (the credit
    table's σ / (C − ρ), the calculator's), not also each run's measured burst."""
    if column not in table.columns:
        return table
    i = table.columns.index(column)
    table.columns = [c for j, c in enumerate(table.columns) if j != i]
    table.rows = [[v for j, v in enumerate(row) if j != i] for row in table.rows]
    table.notes = [n.replace("; at_peak_s: that run's burst", "") for n in table.notes]
    return table


def _best_burst_run(g: GroupAnalysis) -> RunAnalysis | None:
    runs = [a for a in g.runs if a.series is not None and a.credit.kind in BURST_KINDS]
    return max(runs, key=lambda a: a.credit.bucket.value if a.credit.bucket else 0.0, default=None)


def latency_section(catalog: str | os.PathLike[str], campaigns: Sequence[str]) -> Section | None:
    cond, params = _campaign_filter(campaigns)
    sql = (
        "SELECT coalesce(json_extract_string(r.labels, '$.topology'), "  # noqa: S608
        "json_extract_string(r.labels, '$.instance_type'), r.client) AS topology, "
        "l.kind, l.tool, count(*) AS runs, avg(l.mean_us) AS mean_us, avg(l.p50_us) AS p50_us, "
        "avg(l.p99_us) AS p99_us, avg(l.p999_us) AS p999_us, avg(l.loss_percent) AS loss_percent, "
        "bool_and(l.full_round_trip) AS full_round_trip "
        "FROM runs r JOIN latency l USING (run_id) "
        f"WHERE r.status = 'ok'{cond.replace('campaign', 'r.campaign')} "
        "GROUP BY ALL ORDER BY 1, 2"
    )
    t = query(catalog, sql, params)
    if not t.rows:
        return None
    t.notes = [
        "µs, averaged over runs; rr = request/response over one TCP connection, icmp = "
        "ping; p99.9 of ping comes from its reply lines. The tail drives the mean."
    ]
    rows = [(f"{r[0]} · {r[1]}", r[5], r[6], r[7]) for r in t.rows]
    return Section("latency", "Latency per topology").add(
        Figure("latency", "p50 / p99 / p99.9 per topology", plots.latency_bars(rows, fmt="png")),
        Table(t),
    )


def price_section(
    catalog: str | os.PathLike[str],
    groups: Sequence[GroupAnalysis],
    prices: Mapping[str, float] | None,
    target: str | None,
    table: PriceTable | None = None,
) -> Section | None:
    pp = price_performance(catalog, groups=groups, prices=prices, target=target, table=table)
    priced = [r for r in pp.rows if r.price_per_hour is not None]
    if not priced:
        return None
    s = Section("price", "Price per Gbit/s")
    shown, flags = pp.report_table()
    shown.title = None  # the section's title says it
    shown.notes = [n for n in shown.notes if n != pp.verdict]  # said below the plot
    points: dict[str, tuple[str, float, float | None, float | None]] = {}
    for r in priced:
        label = f"{r.instance_type} {r.direction}"
        points[label] = (
            label,
            float(r.price_per_hour or 0.0),
            r.sustained.value if r.sustained else None,
            r.peak.value if r.peak else None,
        )
    s.add(
        Table(shown, flags),
        Figure(
            "price",
            "Price vs sustained and peak goodput",
            plots.price_scatter(list(points.values()), fmt="png"),
        ),
    )
    if pp.verdict:
        s.add(Paragraph(pp.verdict))
    return s


def compare_section(catalog: str | os.PathLike[str], a: str, b: str) -> Section:
    from netfleet.analysis.compare import compare

    cmp = compare(catalog, a, b)
    s = Section("compare", f"Compare: {b} vs {a}")
    t = cmp.table()
    flags = {
        n: "too few runs for a verdict"
        for n, d in enumerate(cmp.rows)
        if d.verdict == "too few runs"
    }
    s.add(Table(t, flags))
    points = [
        (
            " · ".join([*(str(v) for v in d.group.values()), d.metric]),
            100 * d.diff / d.mean_a,
            100 * d.ci_low / d.mean_a,
            100 * d.ci_high / d.mean_a,
            d.verdict,
        )
        for d in cmp.rows
        if d.diff is not None and d.ci_low is not None and d.ci_high is not None and d.mean_a
    ]
    if points:
        s.add(
            Figure(
                "compare",
                f"{b} vs {a}: the difference of means in % of A and its interval; an interval "
                "across 0 is no significant difference",
                plots.compare_intervals(points, fmt="png"),
            )
        )
    return s


def _mean_mbps(a: RunAnalysis) -> float | None:
    s = a.series
    if s is None or not s.n or s.seconds.sum() <= 0:
        return None
    return float(s.bits.sum() / s.seconds.sum()) / 1e6


def appendix_section(runs: Tabular, groups: Sequence[GroupAnalysis]) -> Section:
    analysed = {a.run.run_id: a for g in groups for a in g.runs}
    rows = []
    for r in runs.records():
        a = analysed.get(str(r["run_id"]))
        rows.append(
            [
                r["campaign"],
                r["test"],
                r["repeat"],
                r["client"],
                r["server"],
                r["direction"],
                r["parallel"],
                r["engine"],
                r["status"],
                r["started_at"],
                r["duration_s"],
                None if a is None else _mean_mbps(a),
                None if a is None else a.segmentation.classification,
                None if a is None else a.credit.kind,
                r["run_id"],
            ]
        )
    columns = [
        "campaign", "test", "repeat", "client", "server", "direction", "streams", "engine",
        "status", "started_at", "seconds", "goodput_mbps", "class", "credit_kind", "run_id",
    ]  # fmt: skip
    notes = [
        "goodput_mbps: the receiver's mean over the run's non-omitted intervals (throughput "
        "runs); class and credit_kind: the burst analysis of the run alone (runs shorter than "
        "a burst look steady)."
    ]
    same = [  # a column with one value for every run is said once, in a note
        i
        for i, c in enumerate(columns)
        if c in SAID_ONCE and len(rows) > 1 and len({str(r[i]) for r in rows}) == 1
    ]
    started = columns.index("started_at")
    days = {row[started].date() for row in rows if isinstance(row[started], datetime)}
    if len(days) == 1:  # one day: the time is enough, the day is said once
        for row in rows:
            if isinstance(row[started], datetime):
                row[started] = row[started].strftime("%H:%M:%S")
        notes.insert(0, f"started_at: UTC, all on {days.pop().isoformat()}")
    if same:
        notes.insert(0, "every run: " + ", ".join(f"{columns[i]} {rows[0][i]}" for i in same))
        columns = [c for i, c in enumerate(columns) if i not in same]
        rows = [[v for i, v in enumerate(r) if i not in same] for r in rows]
    return Section("appendix", "Appendix: every run").add(
        Table(Tabular(columns, rows, notes=notes))
    )


def _advice(
    catalog_dir: str | os.PathLike[str], runs: Tabular
) -> tuple[list[Any], Paragraph | None]:
    """Advice over the runs' raw results (:func:`netfleet.analysis.catalog_documents`: a run
    imported by reference read from its file, checked against the manifest), and the note to
    print with it: the files that could not be read, named (beside the advice over the rest),
    else that there is no advice, else none."""
    from netfleet.advice import advise
    from netfleet.analysis import catalog_documents
    from netfleet.report.advice import merged
    from netfleet.text import printable

    docs, problems = catalog_documents(catalog_dir, [str(r["run_id"]) for r in runs.records()])
    items = merged(advise([doc for doc, _ in docs]))
    if problems:
        named = "; ".join(
            printable(f"{where}: {why}", keep_newlines=False) for where, why in problems[:3]
        )
        more = f" and {len(problems) - 3} more" if len(problems) > 3 else ""
        text = f"Advice: {len(problems)} run(s) could not be read ({named}{more}); "
        return items, Paragraph(text + "advice covers the rest.", "warn")
    if not items:
        text = "Advice: nothing to report — no limit other than the network was seen."
        return items, Paragraph(text, "note")
    return items, None


def build_document(
    catalog_dir: str | os.PathLike[str],
    campaigns: Sequence[str] = (),
    compare: tuple[str, str] | None = None,
    prices: Mapping[str, float] | None = None,
    target: str | None = None,
    title: str | None = None,
    price_table: PriceTable | None = None,
) -> Document:
    """Every section the data supports, for ``campaigns`` (all when empty). ``price_table``:
    the dated table cloud hosts are priced from (``netfleet report`` passes the cloud's: a
    refreshed copy in the cloud state directory, else the shipped one); None: only
    ``price_per_hour`` labels and ``prices`` count."""
    runs = _runs_info(catalog_dir, campaigns)
    if not runs.rows:
        raise InputError(
            "no runs to report" + (f" for campaign(s) {', '.join(campaigns)}" if campaigns else ""),
            hint="netfleet sql 'SELECT DISTINCT campaign FROM runs' lists the campaigns",
        )
    groups = throughput_groups(catalog_dir, campaigns)
    advice, note = _advice(catalog_dir, runs)
    names = sorted({str(r[0]) for r in runs.rows})
    doc = Document(
        title or f"Network study: {', '.join(names)}",
        f"{len(runs.rows)} runs · netfleet report",
    )
    unit = _unit_for(groups)
    if compare is None and len(names) >= 2 and len(campaigns) >= 2:
        compare = (campaigns[0], campaigns[1])
    built = [
        summary_section(runs, groups, advice, note),
        cheatsheet_section(catalog_dir, campaigns, groups, unit),
        inout_section(groups),
        advertised_section(groups),
        burst_section(groups),
        latency_section(catalog_dir, campaigns),
        loaded_section(catalog_dir, campaigns),
        price_section(catalog_dir, groups, prices, target, price_table),
        compare_section(catalog_dir, *compare) if compare else None,
        appendix_section(runs, groups),
    ]
    doc.sections = [s for s in built if s is not None]
    return doc


def write_study(
    catalog_dir: str | os.PathLike[str],
    out: Path,
    campaigns: Sequence[str] = (),
    fmt: str = "html",
    **options: Any,
) -> Path:
    """Build and write the study report in one call (``netfleet demo`` ends with this)."""
    from netfleet.report.html import write_report

    doc = build_document(catalog_dir, campaigns, **options)
    return write_report(doc, out, "markdown" if fmt == "markdown" else "html")
