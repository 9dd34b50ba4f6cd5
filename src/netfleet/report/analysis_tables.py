"""Analyses as tables in seed 004's shape: who, baseline, initial/max credit, time at peak,
refill, class, peak — each with its ±.

Human formats (table, markdown) show ``value ± err unit`` (or ``≥ value unit``) in one cell, at
the precision the ± supports (:mod:`netfleet.report.numbers`); machine
formats (json, csv) get numbers: ``X``, ``X_err`` and, for the credit, ``credit_lower_bound``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from netfleet.analysis.analyze import GroupAnalysis, GroupCredit, RunAnalysis
from netfleet.analysis.calculator import Answer
from netfleet.analysis.credit import CreditEstimate, RateKind
from netfleet.analysis.estimate import Estimate
from netfleet.analysis.refill import RefillEstimate
from netfleet.report.labscale import LabScale, common_scale, scale_of
from netfleet.report.numbers import exact, quantity, sig
from netfleet.tabular import Tabular
from netfleet.units import rate_unit

#: quantity column → scale kind: "rate" (bits/s), "size" (bits) or "time" (seconds)
QUANTITIES = {
    "peak": "rate",
    "baseline": "rate",
    "credit": "size",
    "at_peak_s": "time",
    "refill_s": "time",
    "rate": "rate",
    "refill_rate": "rate",
    "refill_cap": "size",
}


def unit_scale(unit: str, fastest: float = 0.0) -> tuple[float, str]:
    """Scale and label of ``unit`` (see :func:`netfleet.units.rate_unit`)."""
    return rate_unit(unit, fastest)


def _machine_unit(unit: str, human: bool) -> str:
    """Machine formats never change unit with the data: ``auto`` is Gbit there."""
    return "gbit" if unit.lower() == "auto" and not human else unit


def _fastest(estimates: Sequence[CreditEstimate | GroupCredit]) -> float:
    values = [
        e.value
        for c in estimates
        for e in (c.peak, c.baseline, c.rate)
        if e is not None and e.value == e.value
    ]
    return max(values, default=0.0)


def _values(
    est: CreditEstimate | GroupCredit, refill: RefillEstimate | None
) -> dict[str, Estimate | None]:
    refill_s = None
    if refill is not None and refill.full_refill_seconds is not None:
        rate = refill.rate
        cap = refill.cap
        seconds = refill.full_refill_seconds
        rel = 0.0
        if rate is not None and rate.value and cap is not None and cap.value:
            rel = ((rate.err / rate.value) ** 2 + (cap.err / cap.value) ** 2) ** 0.5
        refill_s = Estimate(seconds, seconds * rel)
    return {
        "peak": est.peak,
        "baseline": est.baseline,
        "credit": est.bucket,
        "at_peak_s": est.burst_seconds,
        "refill_s": refill_s,
        "rate": est.rate,
        "refill_rate": refill.rate if refill is not None else None,
        "refill_cap": refill.cap if refill is not None else None,
    }


def _units(label: str, rate: RateKind, human: bool) -> list[Any]:
    """Machine formats carry the units and the rate basis on every row (human formats say
    them in the title)."""
    return [] if human else [f"{label}/s", label, rate]


def _cells(
    values: dict[str, Estimate | None], scale: float, human: bool, label: str = ""
) -> list[Any]:
    """``label``: the unit written into each human cell (``286 ± 2 Mbit/s``); empty: the title
    says the units and cells stay narrow (terminal tables)."""
    out: list[Any] = []
    units = {"rate": f"{label}/s", "size": label, "time": "s"} if label else {}
    for name, kind in QUANTITIES.items():
        e = values[name]
        s = 1.0 if kind == "time" else scale
        if human:
            out.append(None if e is None else estimate_text(e, units.get(kind, ""), s))
            continue
        out.append(None if e is None else e.value / s)
        out.append(None if e is None else e.err / s)
        if name == "credit":
            out.append(None if e is None else e.lower_bound)
    return out


def _columns(human: bool) -> list[str]:
    if human:
        return list(QUANTITIES)
    cols: list[str] = ["rate_unit", "credit_unit", "rate_basis"]
    for name in QUANTITIES:
        cols += [name, f"{name}_err"]
        if name == "credit":
            cols.append("credit_lower_bound")
    return cols


def _title(what: str, rate: RateKind, label: str) -> str:
    measure = "goodput" if rate == "goodput" else "wire rate (L2)"
    return (
        f"Burst vs baseline {what}: rates in {label}/s ({measure}), credit (the bucket) in "
        f"{label}, times in s; ± ≈ 95 %"
    )


#: the cloud columns of a table with runs from a scaled lab
CLOUD_COLUMNS = ("lab_scale", "cloud_peak_gbps", "cloud_baseline_gbps", "cloud_credit_gbit",
                 "cloud_at_peak_s", "cloud_rate_gbps")  # fmt: skip


def _cloud(est: CreditEstimate | GroupCredit, lab: LabScale | None, human: bool) -> list[Any]:
    """What a scaled lab's peak, baseline, credit and time at peak stand for in the cloud
    (issue 27: the lab's figure and the cloud's, labelled, side by side)."""
    if lab is None:
        return [None] * (2 if human else len(CLOUD_COLUMNS))

    def gbps(e: Estimate | None) -> float | None:
        return None if e is None else lab.cloud_rate(e.value) / 1e9

    values = [
        gbps(est.peak),
        gbps(est.baseline),
        None if est.bucket is None else lab.cloud_bits(est.bucket.value) / 1e9,
        None if est.burst_seconds is None else lab.cloud_seconds(est.burst_seconds.value),
        gbps(est.rate),
    ]
    if not human:
        return [lab.label(), *values]
    names = ("peak", "baseline", "credit", "at peak", "rate")
    units = (" Gbit/s", " Gbit/s", " Gbit", " s", " Gbit/s")
    bound = "≥ " if est.bucket is not None and est.bucket.lower_bound else ""
    text = " · ".join(
        f"{n} {bound if n == 'credit' else ''}{sig(v)}{u}"
        for n, v, u in zip(names, values, units, strict=True)
        if v is not None
    )
    return [lab.label(), text or None]


def _cloud_columns(human: bool, cloud_rows: bool = False) -> list[str]:
    if cloud_rows:
        return ["lab_scale"]
    return ["lab_scale", "cloud"] if human else list(CLOUD_COLUMNS)


_CLOUD_UNIT = {"rate": "rate", "size": "credit", "time": "s"}


def _cloud_row(
    values: dict[str, Estimate | None], lab: LabScale | None, lead: int, tail: int
) -> list[list[Any]]:
    """The terminal's row under a scaled lab's row: the cloud figures in the same quantity
    columns, each with its unit, labelled ``cloud`` (one figure per cell: no wrapping in a
    narrow terminal, unlike one long ``cloud`` cell)."""
    if lab is None:
        return []
    cloud = {
        name: None if e is None else e.scaled(lab.cloud_factor(_CLOUD_UNIT[kind]))
        for name, kind in QUANTITIES.items()
        for e in (values[name],)
    }
    rates = [e.value for n, e in cloud.items() if e is not None and QUANTITIES[n] == "rate"]
    scale, label = unit_scale("auto", max(rates, default=0.0))
    return [[*[""] * lead, *_cells(cloud, scale, True, label), "cloud", *[None] * tail]]


def _cloud_notes(scales: Sequence[LabScale | None]) -> list[str]:
    """The same words in every format (the terminal's cloud row, the others' cloud column)."""
    found = sorted({s for s in scales if s is not None}, key=lambda s: (s.rate, s.time))
    return [
        s.note(f"{s.label()} rows") + " The quantity columns are the lab's; cloud: the cloud "
        "figures they stand for (Gbit/s, Gbit, s; the terminal: a row under each, labelled)."
        for s in found
    ]


def runs_table(
    analyses: Sequence[RunAnalysis],
    keys: Sequence[str] = ("instance_type", "direction"),
    rate: RateKind = "goodput",
    unit: str = "auto",
    human: bool = True,
    cloud_rows: bool = False,
) -> Tabular:
    """One row per run. ``cloud_rows`` (the terminal): a scaled lab's run has its cloud
    figures in a row under it rather than in one ``cloud`` cell."""
    unit = _machine_unit(unit, human)
    scale, label = unit_scale(unit, _fastest([a.estimate(rate) for a in analyses]))
    rows: list[list[Any]] = []
    notes: list[str] = []
    scales = [scale_of(a.run.labels) for a in analyses]
    scaled = any(scales)
    for a, lab in zip(analyses, scales, strict=True):
        est = a.estimate(rate)
        values = _values(est, a.refill)
        cells = [*_units(label, rate, human), *_cells(values, scale, human)]
        rows.append(
            [
                a.run.run_id,
                *(a.run.key(k) for k in keys),
                a.classification,
                est.kind,
                *cells,
                *(([lab.label() if lab else None] if cloud_rows else _cloud(est, lab, human))
                  if scaled else []),
                est.reason or None,
            ]
        )  # fmt: skip
        if human and cloud_rows:
            rows += _cloud_row(values, lab, 3 + len(keys), 1)
        for note in (*([a.segmentation.test.summary()] if a.segmentation.test else []), *est.notes):
            notes.append(f"{a.run.run_id}: {note}")
    columns = ["run_id", *keys, "class", "credit_kind", *_columns(human)]
    columns += [*(_cloud_columns(human, cloud_rows) if scaled else []), "reason"]
    notes += _cloud_notes(scales)
    return _compact(
        Tabular(columns=columns, rows=rows, title=_title("per run", rate, label), notes=notes),
        human,
    )


def groups_table(
    groups: Sequence[GroupAnalysis],
    rate: RateKind = "goodput",
    unit: str = "auto",
    human: bool = True,
    units_in_cells: bool = False,
    cloud_rows: bool = False,
) -> Tabular:
    """One row per group: pooled peak and baseline, the largest bucket (initial/max credit).
    ``units_in_cells``: human cells read ``286 ± 2 Mbit/s`` (the report) instead of ``286 ± 2``
    under a title naming the units (narrow terminal tables). ``cloud_rows``: as
    :func:`runs_table`'s."""
    unit = _machine_unit(unit, human)
    scale, label = unit_scale(unit, _fastest([g.combined(rate) for g in groups]))
    keys = list(groups[0].keys) if groups else []
    rows: list[list[Any]] = []
    notes: list[str] = []
    scales = [common_scale(a.run.labels for a in g.runs) for g in groups]
    scaled = any(scales)
    for g, lab in zip(groups, scales, strict=True):
        c = g.combined(rate)
        name = ", ".join(f"{v}" for v in g.keys.values())
        values = _values(c, g.refill)
        rows.append(
            [
                *g.keys.values(),
                len(g.runs),
                g.classification,
                c.kind,
                *_units(label, rate, human),
                *_cells(values, scale, human, label if units_in_cells else ""),
                *(([lab.label() if lab else None] if cloud_rows else _cloud(c, lab, human))
                  if scaled else []),
            ]
        )  # fmt: skip
        if human and cloud_rows:
            rows += _cloud_row(values, lab, 3 + len(g.keys), 0)
        notes += [f"{name}: {n}" for n in c.notes]
        for a in g.runs:
            if a.credit.kind in ("inconclusive", "no-drop"):
                notes.append(f"{name}: {a.run.run_id} {a.credit.kind}: {a.credit.reason}")
    notes.append(
        "peak and baseline: mean over the runs that show them; credit: the largest bucket a run "
        "saw (initial/max); at_peak_s: that run's burst; netfleet analyze --runs lists each run"
    )
    columns = [*keys, "runs", "class", "credit_kind", *_columns(human)]
    columns += _cloud_columns(human, cloud_rows) if scaled else []
    notes += _cloud_notes(scales)
    return _compact(
        Tabular(columns=columns, rows=rows, title=_title("per group", rate, label), notes=notes),
        human,
    )


def _compact(table: Tabular, human: bool) -> Tabular:
    """Human formats leave out quantity columns no row has (e.g. refill_s); machine formats
    keep every column so their shape never changes."""
    if not human or not table.rows:
        return table
    optional = {*QUANTITIES, "reason"}
    keep = [
        i
        for i, name in enumerate(table.columns)
        if name not in optional or any(row[i] is not None for row in table.rows)
    ]
    table.columns = [table.columns[i] for i in keep]
    table.rows = [[row[i] for i in keep] for row in table.rows]
    return table


def calc_table(answers: Sequence[Answer], unit: str = "gbit", human: bool = True) -> Tabular:
    """The calculator's answers: rates in ``unit``/s, credit in ``unit`` (Gbit = credits).
    Answers from a scaled lab's run also show the cloud figure each stands for, labelled."""
    unit = _machine_unit(unit, human)
    scale, label = unit_scale(
        unit, max((a.value.value for a in answers if a.unit == "rate"), default=0.0)
    )
    units = {"rate": f"{label}/s", "credit": label, "s": "s", "ratio": ""}
    labs = {a.lab_scale for a in answers if a.lab_scale is not None}
    lab = LabScale(*labs.pop()) if len(labs) == 1 else None
    c_scale, c_label = unit_scale(
        unit, max((a.cloud.value for a in answers if a.cloud and a.unit == "rate"), default=0.0)
    )
    c_units = {"rate": f"{c_label}/s", "credit": c_label, "s": "s", "ratio": ""}
    never = any(a.never for a in answers)
    rows: list[list[Any]] = []
    for a in answers:
        s = scale if a.unit in ("rate", "credit") else 1.0
        cloud: list[Any] = []
        if human:
            if a.never:  # no number: the reason (it names its own units)
                rows.append([a.quantity, a.never, "", *([None] if lab else []), a.formula])
                continue
            if lab is not None:
                cs = c_scale if a.unit in ("rate", "credit") else 1.0
                c = a.cloud
                cloud = [None if c is None else f"{_answer_text(c, cs)} {c_units[a.unit]}".strip()]
            rows.append([a.quantity, _answer_text(a.value, s), units[a.unit], *cloud, a.formula])
        else:
            v, c = a.value, a.cloud
            if lab is not None:
                cloud = [lab.label(), None, None, None]
                if c is not None and not a.never:
                    cloud[1:] = [c.value / s, c.err / s, units[a.unit]]
            number = [None, None] if a.never else [v.value / s, v.err / s]
            rows.append(
                [a.quantity, *number, v.lower_bound, units[a.unit], *cloud, a.formula,
                 *([a.never] if never else [])]
            )  # fmt: skip
    columns = ["quantity", "value", "unit", *(["cloud"] if lab else []), "formula"]
    if not human:
        columns = ["quantity", "value", "err", "lower_bound", "unit"]
        columns += ["lab_scale", "cloud_value", "cloud_err", "cloud_unit"] if lab else []
        columns += ["formula", *(["never"] if never else [])]
    title = "Network-credit calculator (token bucket; 1 credit = 1 Gbit)"
    uncertain = any(a.value.err > 0 for a in answers if not a.never)
    notes = [
        "u: average use outside bursts; X: burst rate; b: burst length; f: duty cycle. "
        + ("± from the inputs' ± (the formulas' extremes over them). " if uncertain else "")
        + "docs/analysis.md has the model."
    ]
    if lab is not None:
        title += f" — value: the {lab.label()} run's; cloud: what it stands for"
        notes.append(
            lab.note(f"{lab.label()} calculator")
            + " value: the lab's figures; cloud: the cloud figures they stand for. Given "
            "numbers (--use, --baseline, …) are taken as the cloud's and scaled to the lab's."
        )
    return Tabular(columns=columns, rows=rows, title=title, notes=notes)


def _answer_text(e: Estimate, scale: float) -> str:
    if e.value == float("inf"):
        return "unlimited"
    if e.err == 0 and not e.lower_bound:  # from given inputs: exact, not 3-digit rounded
        return exact(e.value / scale)
    return estimate_text(e, "", scale)


def estimate_text(e: Estimate, unit: str = "", scale: float = 1.0) -> str:
    """``286 ± 2 Mbit/s``, ``≥ 3.4 Gbit``: an estimate at the precision its ± supports."""
    return quantity(e.value, unit, e.err, e.lower_bound, scale)
