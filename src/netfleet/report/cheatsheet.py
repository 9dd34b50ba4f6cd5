"""The cheat sheet (seed 002's Athena query on DuckDB) as a table: the catalog's query
(:func:`netfleet.catalog.cheatsheet_data`) shaped into columns, a title and notes that say
what was measured, in which unit and rate basis, and what was left out."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from netfleet.catalog.cheatsheet import (
    LEVELS_SPREAD,
    LEVELS_TAG,
    STATS,
    STUB_FRACTION,
    CheatSheetData,
    cheatsheet_data,
)
from netfleet.tabular import Tabular
from netfleet.units import DEFAULT_MTU, L2_HEADER, MAX_RATE, TCP_IP_OVERHEAD


def cheatsheet(
    catalog_dir: str | Path,
    *args: Any,
    results: str | Path | None = None,
    scale: Scale = "lab",
    **kwargs: Any,
) -> Tabular:
    """Min / p5 / avg / p50 / p95 / max of interval goodput (or wire rate) per group; the
    keyword arguments are those of :func:`netfleet.catalog.cheatsheet_data`. With ``results``
    (a results root), raw results not yet in the catalog are named in a note. ``scale``: a
    scaled lab's rows in the lab's figures (``lab``) or as the cloud figures they stand for
    (``cloud``)."""
    data = cheatsheet_data(catalog_dir, *args, **kwargs)
    table = cheatsheet_table(data, scale)
    if any(row[-1] and "lab ×" in str(row[-1]) for row in table.rows):
        from netfleet.report.labscale import goodput_basis_note, goodput_basis_runs

        found = goodput_basis_runs(catalog_dir, kwargs.get("campaign"))
        if found:
            table.notes.append(goodput_basis_note(f"{found} run(s)"))
    if results is not None:  # the store (and its models) only when asked: start-up time
        from netfleet.catalog.pending import pending_notes

        table.notes += pending_notes(results, catalog_dir)
    return table


#: how a scaled lab's rates are shown: the lab's own, or the cloud figures they stand for
Scale = Literal["lab", "cloud"]
SCALES: tuple[Scale, ...] = ("lab", "cloud")


def scale_note(group: str, rate: str, time: str | None, scale: Scale = "lab") -> str:
    """What a scaled lab's numbers are (issue 9: said beside the numbers, not only in a lab
    file). ``rate``/``time``: the runs' ``lab_scale`` / ``lab_time_scale`` labels; ``scale``:
    how the table shows them."""
    what = "rates and durations" if time in (None, rate) else f"rates; durations ×{time}"
    if scale == "cloud" and _one(rate) is not None:
        return (
            f"{group}: lab at ×{rate} of the cloud figures its name gives ({what}): its rates "
            f"are shown as the cloud figures they stand for, the lab's ÷ {rate} (flag 'cloud'; "
            "--scale lab for the lab's own)."
        )
    return (
        f"{group}: lab at ×{rate} of the cloud figures its name gives ({what}): these numbers "
        f"are the lab's, not scaled back (÷ {rate} for the cloud's: --scale cloud; label "
        "lab_scale)."
    )


def scale_notes(scaled: Iterable[tuple[str, str, str | None]], scale: Scale = "lab") -> list[str]:
    """One :func:`scale_note` per distinct scale, naming every group at it."""
    groups: dict[tuple[str, str | None], list[str]] = {}
    for group, rate, time in scaled:
        groups.setdefault((rate, time), []).append(group)
    return [
        scale_note("; ".join(names), rate, time, scale) for (rate, time), names in groups.items()
    ]


def _one(rate: str) -> float | None:
    """The one rate scale of a group's ``lab_scale`` labels, as the SQL joins them (None:
    several, or unreadable — no single cloud figure): the engines' reader of the label
    (:func:`~netfleet.engines.burstable.lab_scale`), loaded only for a scaled lab's rows."""
    from netfleet.engines.burstable import lab_scale

    found = lab_scale({"lab_scale": rate})
    return None if found is None else found[0]


def in_cloud_figures(
    rows: list[list[Any]],
    columns: Sequence[str],
    rates: Iterable[str],
    found: Sequence[str | None],
) -> list[list[Any]]:
    """``rows`` (of ``columns``) with the cells of the ``rates`` columns ÷ each row's rate
    scale (``found``: its ``lab_scale`` label, None when unscaled): the cloud figures a scaled
    lab's rates stand for. A row of several scales, or none, keeps its figures."""
    divide = set(rates)
    out = []
    for row, rate in zip(rows, found, strict=True):
        one = None if rate is None else _one(rate)
        if one is None:
            out.append(row)
            continue
        out.append(
            [
                v / one if c in divide and isinstance(v, int | float) else v
                for c, v in zip(columns, row, strict=True)
            ]
        )
    return out


def scale_flag(rate: str, scale: Scale = "lab") -> str:
    """What a scaled lab's row says beside its numbers: ``lab ×0.05`` (the lab's figures), or
    ``cloud; lab ×0.05`` (the cloud figures they stand for)."""
    shown = "cloud; " if scale == "cloud" and _one(rate) else ""
    return f"{shown}lab ×{rate}"


def scaled_runs(
    rows: list[list[Any]],
    columns: Sequence[str],
    rates: Iterable[str],
    found: Sequence[tuple[str, str | None, str | None]],
    scale: Scale = "lab",
    kept: Mapping[int, str] | None = None,
) -> tuple[list[list[Any]], list[str], list[str]]:
    """A table of runs (``rows`` of ``columns``) with a scaled lab's figures said: each row's
    ``found`` is (what names it in a note, its ``lab_scale`` label, its ``lab_time_scale``
    label; None labels: not a scaled lab's). ``kept``: rows (by index) whose figures stand
    for nothing in the cloud, and why: they keep the lab's. Returns the rows (the ``rates``
    columns as the cloud figures with ``scale`` cloud, by :func:`in_cloud_figures`) with a
    ``scale`` column (:func:`scale_flag`), the columns, and the :func:`scale_notes`; the rows
    and columns as given when no row is a scaled lab's."""
    kept = kept or {}
    if not any(rate for _, rate, _ in found):
        return rows, list(columns), []
    if scale == "cloud":
        moved = [None if n in kept else rate for n, (_, rate, _) in enumerate(found)]
        rows = in_cloud_figures(rows, columns, rates, moved)
    flags = [
        "" if rate is None else f"lab ×{rate}; {kept[n]}" if n in kept else scale_flag(rate, scale)
        for n, (_, rate, _) in enumerate(found)
    ]
    named = dict.fromkeys(
        (name, rate, time) for n, (name, rate, time) in enumerate(found) if rate and n not in kept
    )
    return (
        [[*row, flag] for row, flag in zip(rows, flags, strict=True)],
        [*columns, "flag"],
        scale_notes(named, scale),
    )


def cheatsheet_table(d: CheatSheetData, scale: Scale = "lab") -> Tabular:
    measure = "goodput" if d.rate == "goodput" else "wire rate"
    filters = d.filters
    # every run counted came from its sender (seed 002's client -J files): the sheet is the
    # sender's, and says so from its title on
    all_sender = bool(d.from_sender) and d.from_sender >= d.runs - d.without_intervals
    seen_by = "sender (no receiver-side data in these files)" if all_sender else d.side
    notes = [
        f"{measure} of each non-omitted 'sum' interval seen by the {seen_by}, in {d.unit_label}, "
        f"over complete runs (status ok){' where ' + filters if filters else ''}; "
        "percentiles: DuckDB quantile_cont (linear interpolation)."
    ]
    if d.rate == "wire":
        notes.append(
            f"wire rate = goodput × (MTU + {L2_HEADER}) / (MTU − {TCP_IP_OVERHEAD}): the L2 "
            "frames of full-sized TCP segments with timestamps (1514/1448 at MTU 1500); MTU = "
            f"the smaller of client and server facts.mtu ({DEFAULT_MTU} when unknown); "
            f"UDP runs have no wire rate{f' ({d.not_tcp} left out)' if d.not_tcp else ''}."
        )
    if d.omitted:
        notes.append(f"{d.omitted} omitted intervals (-O) left out.")
    if d.stubs:
        notes.append(
            f"{d.stubs} trailing intervals shorter than {STUB_FRACTION:g} × the "
            "reporting interval left out."
        )
    if d.impossible:
        notes.append(
            f"{d.impossible} intervals with an impossible rate (NaN, infinite, negative or above "
            f"{MAX_RATE / 1e12:g} Tbit/s: a broken or forged result) left out of every statistic."
        )
    if not d.runs:
        notes.append(
            "no rows: no complete runs (status ok)"
            + (f" match {filters}." if filters else " in the catalog.")
        )
    elif d.without_intervals:
        notes.append(
            f"{d.without_intervals} of {d.runs} complete runs have no {d.side}-side sum intervals "
            "(e.g. server without -J: no server_output_json)."
        )
    if d.from_sender:
        notes.append(
            f"{d.from_sender} run(s) have no receiver-side intervals (their files hold only the "
            "sender's side, e.g. a client's -J output without --get-server-output): their "
            "sender's intervals are counted instead (flag 'sender side'); sender bytes include "
            "what sat in the socket buffer, so a burst looks slightly larger."
        )
    if d.bidir and "flow" not in d.group_keys:
        notes.append(
            f"{d.bidir} --bidir runs count both directions' {d.side}s in their group: "
            "add 'flow' to the group keys to separate them."
        )
    no_drop = any(row[-1] and "no drop" in str(row[-1]) for row in d.rows)
    levels = any(row[-1] and LEVELS_TAG in str(row[-1]) for row in d.rows)
    rows = d.rows
    columns = [*d.group_keys, "runs", "intervals", *STATS, "flag"]
    if d.scaled:
        scale_of = {group: (rate, time) for group, rate, time in d.scaled}
        rows = []
        rates: list[str | None] = []
        for row in d.rows:
            found = scale_of.get(tuple(row[: len(d.group_keys)]))
            flag = row[-1]
            rates.append(None if found is None else found[0])
            if found is not None:  # beside the numbers: the row's flag says the lab's scale
                flag = "; ".join(f for f in (flag, scale_flag(found[0], scale)) if f)
            rows.append([*row[:-1], flag])
        if scale == "cloud":
            rows = in_cloud_figures(rows, columns, STATS, rates)
        notes += scale_notes(
            (
                (", ".join(str(v) for v in group) or "all runs", rate, time)
                for group, rate, time in d.scaled
            ),
            scale,
        )
    if no_drop:
        notes.append(
            "flag: adaptive runs stopped on a flat level with no evidence that it was the "
            "baseline (no level drop seen, host not known fixed-rate, shorter than the longest "
            "documented burst): their rate may be a burst's peak."
        )
    if levels:
        notes.append(
            f"flag 'two levels': the row's p95 is more than {LEVELS_SPREAD:g}× its p5, its "
            "intervals sit at two levels (a credit burst then its baseline, or runs that "
            "differ), so its avg and p50 lie between the levels and no interval had them: "
            "p5/min ≈ the lower level, p95/max ≈ the higher; `netfleet analyze` gives each "
            "run's burst, baseline and time at peak."
        )
    if d.runs and not d.rows:
        notes.append(f"no rows: the complete runs have no usable {d.side}-side intervals.")
    table = Tabular(
        columns=columns,
        rows=rows,
        title=f"Interval {measure} ({d.unit_label}) by {', '.join(d.group_keys) or 'all runs'}, "
        + (
            "sender side (no receiver data)"
            if all_sender
            else f"{d.side} side" + (" (sender where absent)" if d.from_sender else "")
        ),
        notes=notes,
    )
    return with_short_runs(table, d.types)


def with_advertised(
    tab: Tabular,
    key: str,
    advertised: Mapping[str, tuple[float | None, float | None]],
    *,
    scale: float = 1.0,
    stat: str = "p50",
) -> Tabular:
    """The cheat sheet with what the provider advertises for each group's ``key`` (e.g.
    ``instance_type`` → (baseline, peak) in Gbit/s, AWS's DescribeInstanceTypes) and
    ``stat ÷ baseline``. ``scale``: the lab's rate scale when the hosts are simulated (the
    advertised figures are scaled by it before dividing, and a note says so). Needs the table
    in Gbit/s."""
    if key not in tab.columns or stat not in tab.columns:
        return tab
    k, s = tab.columns.index(key), tab.columns.index(stat)
    rows = []
    for row in tab.rows:
        base, peak = advertised.get(str(row[k]), (None, None))
        adv = None if base is None else base * scale
        top = None if peak is None else peak * scale
        ratio = None if not adv or row[s] is None else round(float(row[s]) / adv, 3)
        to_peak = None if not top or row[s] is None else round(float(row[s]) / top, 3)
        rows.append([*row, adv, top, ratio, to_peak])
    notes = list(tab.notes)
    notes.append(
        f"advertised = the provider's baseline / peak for the {key} (Gbit/s"
        + (f", × {scale:g}: the simulated lab's rate scale" if scale != 1 else "")
        + f"); {stat}÷base, {stat}÷peak = measured {stat} ÷ advertised baseline, peak (empty: "
        "not advertised). A burstable type runs near its peak while credits last, then at its "
        "baseline: a short run of one measures the burst."
    )
    return Tabular(
        columns=[*tab.columns, "adv_base", "adv_peak", f"{stat}÷base", f"{stat}÷peak"],
        rows=rows,
        title=tab.title,
        notes=notes,
        decimals=max(tab.decimals, 4),
    )


#: the flag of a row whose runs were shorter than its type's burst (or may have been)
SHORT_FLAG = "shorter than the burst"


def short_run_note(kind: str, longest_s: float, labels: Mapping[str, Any]) -> str | None:
    """What runs of a burstable type shorter than its burst measured: "r4.large: 60 s runs,
    burst lasts ~292 s at 10 Gbit/s — this is the burst rate, not the baseline" (``kind``'s
    longest fixed-length run, its ``labels``; the burst from the labels:
    :func:`netfleet.engines.burstable.full_burst_s`); when the type is burstable but its burst
    length is unknown, that they may be. None otherwise."""
    # here, not at the top: the kept answer (an unchanged catalog) loads no engine
    from netfleet.engines.burstable import (
        LONGEST_DOCUMENTED_BURST_S,
        catalogue_figures,
        full_burst_s,
        host_burstability,
    )

    if host_burstability(labels) != "burstable":
        return None
    runs = f"{kind}: {longest_s:g} s runs"
    burst = full_burst_s(labels)
    if burst is None:
        if longest_s >= LONGEST_DOCUMENTED_BURST_S:
            return None
        return (
            f"{runs} of a burstable type, its burst length unknown (labels burst_s, or "
            "bucket_gbit with baseline_gbps and peak_gbps; AWS documents bursts of up to 60 "
            "min): these rates may be the burst's, not the baseline"
        )
    if longest_s >= burst:
        return None
    figures = catalogue_figures(labels)
    cloud = " (cloud)" if "lab_scale" in labels else ""
    at = f" at {figures[1]:g} Gbit/s{cloud}" if figures is not None else ""
    return f"{runs}, burst lasts ~{burst:,.0f} s{at} — this is the burst rate, not the baseline"


def with_short_runs(table: Tabular, types: Sequence[Sequence[Any]]) -> Tabular:
    """The sheet with a note per instance type shown whose fixed-length runs (``types``: the
    query's :attr:`~netfleet.catalog.cheatsheet.CheatSheetData.types`) were shorter than its
    burst (:func:`short_run_note`), and those rows flagged when the sheet is by type."""
    key = table.columns.index("instance_type") if "instance_type" in table.columns else None
    shown = None if key is None else {str(row[key]) for row in table.rows}
    notes = {kind: n for kind, _, longest, labels in types
             if (shown is None or kind in shown)
             and (n := short_run_note(kind, longest, labels)) is not None}  # fmt: skip
    if not notes:
        return table
    table.notes = [*table.notes, *notes.values()]
    if key is not None:
        flag = table.columns.index("flag")
        table.rows = [list(row) for row in table.rows]
        for row in table.rows:
            if str(row[key]) in notes:
                row[flag] = "; ".join(f for f in (row[flag], SHORT_FLAG) if f)
    return table
