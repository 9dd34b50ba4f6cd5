"""The EC2-cheat-sheet query (seed 002: iperf3 → S3 → Athena) over the catalog, in DuckDB.

Per group: how many complete runs and intervals, and min / p5 / avg / p50 / p95 / max of the
per-interval rate. Only ``status = 'ok'`` runs; only ``kind = 'sum'`` intervals of one side
(the receiver by default: its series is the truthful one — a run whose file holds only the
sender's side, such as seed 002's client ``-J`` output, counts with its sender's intervals, and
the sheet says so in a note and in the row's flag); omitted (``-O``) intervals and the
receiver's trailing stub (shorter than half the reporting interval) are left out.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from netfleet.catalog.layout import is_s3
from netfleet.errors import CatalogError
from netfleet.plain import Frozen
from netfleet.text import natural_key
from netfleet.units import DEFAULT_MTU, L2_HEADER, MAX_RATE, TCP_IP_OVERHEAD, rate_unit

if TYPE_CHECKING:  # (annotations' only)
    from typing import Any, Literal

    import duckdb

    Side = Literal["receiver", "sender"]
    Rate = Literal["goodput", "wire"]

# DuckDB is imported where the query runs: a cheat sheet read back from the catalog's cache
# (:mod:`netfleet.catalog.sheetcache`) needs none of it

LABEL_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
LABEL_PREFIX = "label:"
#: runs columns that cannot be grouped by (JSON blobs)
_NOT_GROUPABLE = frozenset({"params", "labels", "notes"})
#: the ``flag`` column of a group with adaptive runs that stopped on a flat level without
#: evidence it was not a burst (``notes.adaptive.verdict = 'no-drop'``)
NO_DROP_FLAG = "no drop within {s:.0f} s in {n} run(s) (a longer burst is possible)"
#: intervals columns that can be grouped by: ``flow`` separates a --bidir run's two directions
INTERVAL_KEYS = {"flow": "i.flow"}
#: intervals shorter than this fraction of the run's reporting interval are the receiver's
#: trailing stub (≈0.5 ms after the test ends), not a measurement
STUB_FRACTION = 0.5
#: the ``flag`` of a receiver-side group whose runs (some or all) have only the sender's side
SENDER_FLAG = "{n} run(s) sender side: no receiver data"
#: a group whose p95 is more than this many times its p5 holds two levels (issue 36)
LEVELS_SPREAD = 2.0
#: the ``flag`` of such a group: its avg and p50 lie between the levels and describe neither
LEVELS_TAG = "two levels"
LEVELS_FLAG = LEVELS_TAG + " (p95 {ratio:.1f}× p5): avg, p50 describe neither"


def levels_flag(p5: float | None, p95: float | None) -> str | None:
    """The flag of a group whose intervals sit at two levels (p95 > :data:`LEVELS_SPREAD` × p5:
    a credit burst and its baseline in one row, as seed 002's 6 intervals at ~380 and 5 at
    ~48 Mbit/s whose avg no interval had), else None. The one rule every format's flag and the
    study report's take."""
    if p5 is None or p95 is None or p5 <= 0 or p95 <= LEVELS_SPREAD * p5:
        return None
    return LEVELS_FLAG.format(ratio=p95 / p5)


#: the statistics columns, in the unit asked for (named in title and notes): min, p5, avg, p50,
#: p95, max of the interval rate — from :data:`_STATS_SQL`, by :func:`_stats`
STATS = ("min", "p5", "avg", "p50", "p95", "max")
#: the statistics as one select list (the quantiles as one list: one sort per group, not three)
_STATS_SQL = "min(bps), avg(bps), max(bps), quantile_cont(bps, [0.05, 0.5, 0.95])"


def _stats(values: Sequence[Any], scale: float) -> list[float | None]:
    """:data:`_STATS_SQL`'s values in :data:`STATS` order, in the unit asked for."""
    low, avg, high, quantiles = values
    p5, p50, p95 = quantiles or (None, None, None)
    return [None if v is None else v / scale for v in (low, p5, avg, p50, p95, high)]


class _Sql:
    """SQL text and its positional parameters, built in textual order."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.params: list[Any] = []

    def add(self, text: str, *params: Any) -> None:
        self.text.append(text)
        self.params.extend(params)


class CheatSheetData(Frozen):
    """What the cheat sheet query found: one row per group (group key values, runs, intervals,
    then :data:`STATS` in ``unit_label``) and the counts of what was left out, for the notes."""

    __slots__ = (  # noqa: RUF023
        "group_keys", "rows", "side", "rate", "unit_label", "filters", "runs", "omitted",
        "stubs", "without_intervals", "not_tcp", "bidir", "impossible", "scaled", "from_sender",
        "types",
    )  # fmt: skip

    group_keys: list[str]
    rows: list[list[Any]]
    side: str
    rate: str
    unit_label: str
    filters: str
    runs: int
    omitted: int
    stubs: int
    without_intervals: int
    not_tcp: int
    bidir: int
    #: intervals whose rate no link can carry (NaN, infinite, negative, above
    #: :data:`netfleet.units.MAX_RATE`): left out of every statistic, counted here
    impossible: int
    #: groups measured in a scaled lab: (group key values, "lab_scale" values, "lab_time_scale"
    #: values), the values as the labels give them, comma-separated when runs differ
    scaled: list[tuple[tuple[Any, ...], str, str | None]]
    #: receiver side asked, but this many runs have only the sender's intervals: theirs counted
    from_sender: int
    #: the fixed-length runs of each instance type that may burst, of the runs selected:
    #: [type, runs, longest (s), the labels of one] (:func:`~netfleet.catalog.sheetstate.
    #: add_type_run`), by type
    types: list[list[Any]]

    def __init__(
        self,
        group_keys: list[str],
        rows: list[list[Any]],
        side: str,
        rate: str,
        unit_label: str,
        filters: str,
        runs: int,
        omitted: int,
        stubs: int,
        without_intervals: int,
        not_tcp: int,
        bidir: int,
        impossible: int = 0,
        scaled: list[tuple[tuple[Any, ...], str, str | None]] | None = None,
        from_sender: int = 0,
        types: list[list[Any]] | None = None,
    ) -> None:
        self._set(
            group_keys, rows, side, rate, unit_label, filters, runs, omitted, stubs,
            without_intervals, not_tcp, bidir, impossible, [] if scaled is None else scaled,
            from_sender, [] if types is None else types,
        )  # fmt: skip


_INTS = ("runs", "omitted", "stubs", "without_intervals", "not_tcp", "bidir", "impossible",
         "from_sender")  # fmt: skip
_TEXTS = ("side", "rate", "unit_label", "filters")
#: the types of a kept :attr:`CheatSheetData.types` row's runs, longest and labels
_TYPE_ROW = ((int, float, dict), (int, int, dict))


def _from_cache(doc: Any) -> CheatSheetData | None:
    """A cached answer (:mod:`netfleet.catalog.sheetcache`) back as :class:`CheatSheetData`, or
    None when the document does not have its fields, each of its type."""
    from netfleet.catalog.sheetcache import plain

    shaped = (
        isinstance(doc, dict)
        and set(doc) == set(CheatSheetData.__slots__)
        and all(type(doc[k]) is int for k in _INTS)
        and all(isinstance(doc[k], str) for k in _TEXTS)
        and isinstance(doc["group_keys"], list)
        and all(isinstance(k, str) for k in doc["group_keys"])
        and isinstance(doc["rows"], list)
        and all(isinstance(r, list) and plain(r) for r in doc["rows"])
        and isinstance(doc["scaled"], list)
        and all(isinstance(s, list) and len(s) == 3 and plain(s) for s in doc["scaled"])
        and isinstance(doc["types"], list)
        and all(isinstance(t, list) and len(t) == 4 and plain(t) for t in doc["types"])
        and all(
            (type(t[1]), type(t[2]), type(t[3])) in _TYPE_ROW and isinstance(t[0], str)
            for t in doc["types"]
        )
    )
    if not shaped or not _plausible_stats(doc["rows"], len(doc["group_keys"]), doc["unit_label"]):
        return None
    doc["scaled"] = [(tuple(g), rate, time) for g, rate, time in doc["scaled"]]
    return CheatSheetData(**doc)


def _plausible_stats(rows: list[list[Any]], keys: int, unit_label: str) -> bool:
    """Every statistic of the rows (after the group keys, runs and intervals) a rate a link can
    carry in ``unit_label`` (:func:`~netfleet.units.plausible_rate`, the catalog's own bound):
    a kept answer holding one that is not — a forged or damaged entry — is computed again."""
    from netfleet.units import RATE_UNITS, plausible_rate

    scales = {label + "/s": scale for scale, label in RATE_UNITS.values()}
    if unit_label not in scales:
        return False
    scale = scales[unit_label]
    return all(
        v is None or (isinstance(v, int | float) and plausible_rate(float(v) * scale))
        for row in rows
        for v in row[keys + 2 : keys + 2 + len(STATS)]
    )


class _Keys:
    """Resolves group-by / filter keys to SQL: a runs column, else a label key."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        described = con.execute("DESCRIBE runs").fetchall()
        self.names = sorted(str(r[0]) for r in described)
        self.columns = [str(r[0]) for r in described if r[0] not in _NOT_GROUPABLE]
        self.has_notes = any(r[0] == "notes" for r in described)
        found = con.execute(
            "SELECT DISTINCT unnest(json_keys(labels)) AS k FROM runs ORDER BY k"
        ).fetchall()
        self.labels = [str(r[0]) for r in found]

    def resolve(self, key: str) -> tuple[str, list[Any]]:
        """SQL expression over ``runs r`` and its parameters. Label keys are parameters."""
        explicit = key.startswith(LABEL_PREFIX)
        name = key.removeprefix(LABEL_PREFIX)
        if not explicit and name in self.columns:
            return f'r."{name}"', []
        if not LABEL_KEY.match(name):
            raise CatalogError(
                f"invalid label key {name!r}",
                hint="a label key is letters, digits, '_', '.' and '-', starting with a letter "
                "or '_'",
            )
        if name not in self.labels:
            raise CatalogError(
                f"unknown key {key!r}: neither a runs column nor a label", hint=self.available()
            )
        # the key matches LABEL_KEY, so it cannot close the quoted JSON path member
        return "json_extract_string(r.labels, ?)", [f'$."{name}"']

    def available(self) -> str:
        labels = ", ".join(self.labels) or "(no labels in the catalog)"
        return (
            f"labels: {labels}; runs columns: {', '.join(self.columns)}; "
            f"intervals columns: {', '.join(INTERVAL_KEYS)}"
        )


def _where_text(where: str | Mapping[str, Any] | None, campaign: str | None) -> str:
    parts = [f"campaign = {campaign}"] if campaign else []
    if isinstance(where, str):
        parts.append(where)
    elif where:
        parts.extend(f"{k} = {v}" for k, v in where.items())
    return "; ".join(parts)


def cheatsheet_data(
    catalog_dir: str | os.PathLike[str],
    group_by: Sequence[str] | str = ("instance_type", "direction"),
    side: Side = "receiver",
    where: str | Mapping[str, Any] | None = None,
    campaign: str | None = None,
    unit: str = "gbit",
    rate: Rate = "goodput",
) -> CheatSheetData:
    """Interval-rate statistics per group, as in seed 002's Athena query.

    ``group_by``: runs columns (direction, test, campaign, parallel, reverse, client, server,
    ...) or label keys (``instance_type``; ``label:KEY`` forces the label when a column has the
    same name). ``where``: a SQL condition over runs columns, or a mapping of key → value
    (compared as text, keys resolved like ``group_by``). ``rate="wire"`` reports the L2 rate
    derived from goodput and the run's MTU (TCP runs only).
    """
    if side not in ("receiver", "sender"):
        raise CatalogError(f"side must be 'receiver' or 'sender', not {side!r}")
    if rate not in ("goodput", "wire"):
        raise CatalogError(f"rate must be 'goodput' or 'wire', not {rate!r}")
    scale, unit_label = rate_unit(unit)
    unit_label += "/s"
    keys_asked = [group_by] if isinstance(group_by, str) else list(dict.fromkeys(group_by))

    def fresh(keep: dict[str, Any] | None = None) -> CheatSheetData:
        import duckdb

        from netfleet.catalog.views import connect

        con = connect(catalog_dir)
        try:
            return _cheatsheet(
                con, keys_asked, side, where, campaign, scale, unit_label, rate, keep
            )
        except duckdb.Error as exc:
            raise CatalogError(
                f"cheat sheet query failed: {exc}",
                hint="check the where condition against docs/catalog.md",
            ) from exc
        finally:
            con.close()

    if is_s3(catalog_dir) or isinstance(where, str):
        # free SQL may read the clock (now(), current_date): its answer is not kept
        return fresh()
    from netfleet.catalog.sheetcache import cached

    question = {
        "group_by": keys_asked,
        "side": side,
        "where": None if where is None else dict(where),
        "campaign": campaign,
        "unit": unit,
        "rate": rate,
    }
    # the questions whose sheet is kept up to date batch by batch (netfleet.catalog.sheetstate)
    tallied = where is None and rate == "goodput" and not set(keys_asked) & set(INTERVAL_KEYS)

    def compute() -> CheatSheetData:
        if not tallied:
            return fresh()
        return _kept_up_to_date(
            Path(catalog_dir), question, fresh, keys_asked, side, scale, unit_label, campaign
        )

    return cached(Path(catalog_dir), question, compute, _from_cache)


def _kept_up_to_date(
    catalog: Path,
    question: dict[str, Any],
    fresh: Callable[[dict[str, Any] | None], CheatSheetData],
    group_keys: list[str],
    side: Side,
    scale: float,
    unit_label: str,
    campaign: str | None,
) -> CheatSheetData:
    """The sheet from the kept tally and the batches committed since
    (:mod:`netfleet.catalog.sheetstate`), else afresh by DuckDB — which keeps its tally for
    the next time."""
    from netfleet.catalog import sheetstate

    found = sheetstate.updated(catalog, question, group_keys, side)
    if found is not None:
        tally, parts, meta = found
        rows = sheetstate.stats_rows(tally)
        if rows is not None:
            n = len(group_keys)
            per_group = [
                [*r[:n], r[n], *_stats((r[n + 1], r[n + 3], r[n + 6], quantiles), scale)]
                for r in rows
                for quantiles in ([r[n + 2], r[n + 4], r[n + 5]],)
            ]
            runs_of = {tuple(r[:n]): (r[n + 7], 0, None, None, None, r[n + 8]) for r in rows}
            counts = [tally.counts[name] for name in sheetstate.COUNTS]
            sheetstate.save(catalog, question, meta, parts, tally)
            return _finish(
                group_keys, per_group, runs_of, counts, side, "goodput", unit_label,
                _where_text(None, campaign), tally.types,
            )  # fmt: skip
    keep: dict[str, Any] = {}
    try:
        before = sheetstate.parts_now(catalog)
    except OSError:
        return fresh(None)
    answer = fresh(keep)
    try:
        unchanged = sheetstate.parts_now(catalog) == before
    except OSError:
        unchanged = False
    if unchanged and "tally" in keep:  # no batch committed while the query ran
        sheetstate.save(catalog, question, keep["meta"], before, keep["tally"])
    return answer


#: _x's four conditions per interval row, packed into one integer column by :func:`_packed`
_FLAGS = ("omitted", "impossible", "stub", "from_sender")


def _packed(*conditions: str) -> str:
    """SQL packing boolean ``conditions`` into one UTINYINT, two bits each (0 false, 1 true,
    2 NULL): DuckDB keeps each in-memory column (and its validity mask) in 256 KB blocks of
    its own per 122,880 rows, so four boolean columns cost 2 MB per row group — 6 million
    interval rows (100,000 seed-002 files) held 227 MB in _x; packed with the run key, 123 MB."""
    bits = (f"coalesce(CAST(({c}) AS UTINYINT), 2) << {2 * n}" for n, c in enumerate(conditions))
    return "CAST(" + " | ".join(f"({b})" for b in bits) + " AS UTINYINT)"


def _true(flag: str) -> str:
    """SQL: whether ``flag`` (one of :data:`_FLAGS`) is true in _x's ``flags``."""
    return f"((flags >> {2 * _FLAGS.index(flag)}) & 3) = 1"


#: an interval row of _x that counts: not omitted, not impossible, not a stub (those three
#: flags false, not NULL) and a rate
_KEPT = "(flags & 63) = 0 AND bps IS NOT NULL"


def _cheatsheet(
    con: duckdb.DuckDBPyConnection,
    group_keys: list[str],
    side: Side,
    where: str | Mapping[str, Any] | None,
    campaign: str | None,
    scale: float,
    unit_label: str,
    rate: Rate,
    keep: dict[str, Any] | None = None,
) -> CheatSheetData:
    """The sheet by DuckDB; with ``keep``, its tally too (``keep["tally"]``, ``keep["meta"]``:
    :mod:`netfleet.catalog.sheetstate`) when the windows give back DuckDB's own numbers."""
    # the temp tables' rows need no order (every statement below groups or counts): DuckDB
    # then keeps no insertion order while writing them, which holds memory at 100k files
    con.execute("SET preserve_insertion_order = false")
    keys = _Keys(con)
    groups = [f"g{n}" for n in range(len(group_keys))]
    base = _Sql()
    # each run selected gets a small integer key (rk): the interval rows kept below carry it,
    # not the run id (a 64-hex string per interval row was most of the sheet's memory)
    base.add(
        "CREATE OR REPLACE TEMP TABLE _r AS SELECT"
        " CAST(row_number() OVER () AS INTEGER) AS rk, r.run_id, r.protocol"
    )
    per_interval = ""
    for alias, key in zip(groups, group_keys, strict=True):
        if key in INTERVAL_KEYS:
            per_interval += f"{INTERVAL_KEYS[key]} AS {alias}, "
            continue
        expr, params = keys.resolve(key)
        base.add(f", {expr} AS {alias}", *params)
    base.add(
        ", coalesce(r.bidir, false) OR r.direction = 'bidir' AS is_bidir"
        f", coalesce(least(r.client_mtu, r.server_mtu), {DEFAULT_MTU}) AS mtu"
        ", coalesce(r.interval, 1.0) AS report_interval"
        + (
            ", coalesce(json_extract_string(r.notes, '$.adaptive.verdict') = 'no-drop', false)"
            " AS no_drop, TRY_CAST(json_extract(r.notes, '$.adaptive.stopped_at_s') AS DOUBLE)"
            " AS stopped_at"
            if keys.has_notes
            else ", false AS no_drop, NULL::DOUBLE AS stopped_at"
        )
        + ", json_extract_string(r.labels, '$.lab_scale') AS lab_scale"
        ", json_extract_string(r.labels, '$.lab_time_scale') AS lab_time_scale"
        " FROM runs r WHERE r.status = 'ok'"
    )
    if campaign is not None:
        base.add(" AND r.campaign = ?", campaign)
    if isinstance(where, str) and where.strip():
        base.add(f" AND ({where})")
    elif isinstance(where, Mapping):
        for key, value in where.items():
            expr, params = keys.resolve(key)
            base.add(f" AND CAST({expr} AS VARCHAR) = ?", *params, str(value))
    factor = (
        "1.0"
        if rate == "goodput"
        else (
            f"CASE WHEN r.protocol = 'tcp' THEN (r.mtu + {L2_HEADER}.0) / "
            f"(r.mtu - {TCP_IP_OVERHEAD}.0) END"
        )
    )
    run_groups = [g for g, key in zip(groups, group_keys, strict=True) if key not in INTERVAL_KEYS]
    # the selected runs, then one pass over the intervals: their receiver's (or sender's) sums,
    # kept in a temporary table; the statistics and the counts below read only those two
    con.execute("".join(base.text), base.params)
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE _x AS SELECT {per_interval}"  # noqa: S608
        f"i.bits_per_second * {factor} AS bps, (CAST(r.rk AS UINTEGER) << 8) | "
        + _packed(
            "i.omitted",
            "i.bits_per_second IS NOT NULL AND NOT (isfinite(i.bits_per_second)"
            f" AND i.bits_per_second BETWEEN 0 AND {MAX_RATE:.0f})",
            f"i.seconds < {STUB_FRACTION} * r.report_interval",
            "i.role <> ?",
        )
        + " AS kf FROM _r r JOIN intervals_stored i ON i.run_id = r.run_id"
        " WHERE i.kind = 'sum' AND (i.role = ? OR (? AND i.role = 'sender' AND i.run_id NOT IN"
        " (SELECT run_id FROM intervals_stored WHERE kind = 'sum' AND role = 'receiver')))",
        [side, side, side == "receiver"],
    )

    types = _type_runs(con, keys.has_notes)

    # _x's rows with their run key and flags apart: one column held both (a column of its own
    # is 0.5 MB per 122,880 rows; 2**24 runs at most, more fail with DuckDB's overflow error)
    x = "(SELECT * EXCLUDE (kf), CAST(kf >> 8 AS INTEGER) AS rk, kf & 255 AS flags FROM _x)"
    grouping = ", ".join(groups)
    by = f" GROUP BY {grouping}" if groups else ""
    kept = _KEPT
    # the kept intervals with their run's group keys (from _r, by rk)
    keyed = (
        f"(SELECT x.*{''.join(f', r.{g}' for g in run_groups)} FROM {x} x"  # noqa: S608
        f" JOIN _r r ON r.rk = x.rk WHERE {kept})"
        if run_groups
        else f"(SELECT * FROM {x} WHERE {kept})"  # noqa: S608
    )
    # fixed identifiers only; quantiles in one sort a group, one thread (two held rates twice)
    n = len(groups)
    con.execute("SET threads = 1")
    raw = con.execute(
        f"SELECT {grouping + ', ' if groups else ''}count(*), {_STATS_SQL}"  # noqa: S608
        f"{', sum(bps)' if keep is not None else ''} FROM {keyed}{by}"
    ).fetchall()
    con.execute("RESET threads")
    per_group = [[*row[:n], row[n], *_stats(row[n + 1 : n + 5], scale)] for row in raw]
    # per run (and interval key), what its intervals were: 100,000 rows at 100,000 runs, read
    # by the run-level facts and the counts below instead of every interval row again
    interval_groups = [g for g, key in zip(groups, group_keys, strict=True) if key in INTERVAL_KEYS]
    per = "".join(f", {g}" for g in interval_groups)
    # with ``keep``: the value ranges around each group's quantiles whose rates the tally
    # keeps (netfleet.catalog.sheetstate), and per run how many kept rates are below each
    plan = None
    if keep is not None:
        from netfleet.catalog.sheetstate import window_plan

        plan = window_plan(raw, n)
    ranges = plan[1] if plan is not None else []
    below = "".join(f", count(*) FILTER (WHERE {kept} AND bps < ?) AS below{j}"
                    for j in range(len(ranges)))  # fmt: skip
    con.execute(  # fixed identifiers only
        f"CREATE OR REPLACE TEMP TABLE _p AS SELECT rk{per},"  # noqa: S608
        f" coalesce(bool_or({kept}), false) AS any_kept,"
        f" coalesce(bool_or({_true('impossible')}), false) AS any_bad,"
        f" coalesce(bool_or({_true('from_sender')}), false) AS from_sender,"
        f" count(*) FILTER (WHERE {_true('omitted')}) AS omitted,"
        f" count(*) FILTER (WHERE {_true('stub')} AND (flags & 3) = 0) AS stubs,"
        f" count(*) FILTER (WHERE {_true('impossible')}) AS impossible{below}"
        f" FROM {x} GROUP BY rk{per}",
        [lo for lo, _ in ranges],
    )
    # run-level facts per group: a run counts once per group it has kept intervals in
    run_keys = ", ".join(
        f"{'k' if key in INTERVAL_KEYS else 'r'}.{g}"
        for g, key in zip(groups, group_keys, strict=True)
    )
    per_run = con.execute(
        f"SELECT {run_keys + ', ' if groups else ''}count(*),"  # noqa: S608
        " count(*) FILTER (WHERE r.no_drop), max(r.stopped_at) FILTER (WHERE r.no_drop),"
        " string_agg(DISTINCT r.lab_scale, ',' ORDER BY r.lab_scale),"
        " string_agg(DISTINCT r.lab_time_scale, ',' ORDER BY r.lab_time_scale),"
        " count(*) FILTER (WHERE k.from_sender)"
        + "".join(f", sum(k.below{j})" for j in range(len(ranges)))
        + " FROM _p k JOIN _r r ON r.rk = k.rk WHERE k.any_kept"
        f"{' GROUP BY ' + run_keys if groups else ''}"
    ).fetchall()
    runs_of = {tuple(row[:n]): row[n : n + 6] for row in per_run}

    # the counts from _p (subqueries over _x held a hash table of every interval's key)
    counts = con.execute(  # fixed identifiers only
        "SELECT (SELECT count(*) FROM _r),"
        " (SELECT coalesce(sum(omitted), 0) FROM _p),"
        " (SELECT coalesce(sum(stubs), 0) FROM _p),"
        " (SELECT count(*) FROM _r WHERE rk NOT IN (SELECT rk FROM _p WHERE any_kept OR any_bad)),"
        " (SELECT count(*) FROM _r WHERE protocol IS DISTINCT FROM 'tcp'),"
        " (SELECT count(*) FROM _r WHERE is_bidir),"
        " (SELECT coalesce(sum(impossible), 0) FROM _p),"
        " (SELECT count(DISTINCT rk) FROM _p WHERE from_sender AND any_kept)",
    ).fetchone()
    assert counts is not None
    totals = [int(c) for c in counts]
    if keep is not None and plan is not None:
        from netfleet.catalog.sheetstate import tally_of

        below_of = {tuple(row[:n]): row[n + 6 :] for row in per_run}
        try:  # the tally never stands in the way of the sheet
            tally = tally_of(con, keyed, groups, raw, runs_of, below_of, plan, totals)
        except (LookupError, ValueError, TypeError):  # a key that is no dict key (NaN)
            tally = None
        if tally is not None:
            tally.types = types
            keep["tally"] = tally
            keep["meta"] = {
                "resolved": [
                    ["column", k] if k in keys.columns else ["label", k.removeprefix(LABEL_PREFIX)]
                    for k in group_keys
                ],
                "columns": keys.names,
                "has_notes": keys.has_notes,
            }
    return _finish(
        group_keys, per_group, runs_of, totals, side, rate, unit_label,
        _where_text(where, campaign), types,
    )  # fmt: skip


def _type_runs(con: duckdb.DuckDBPyConnection, has_notes: bool) -> dict[str, list[Any]]:
    """The fixed-length runs per instance type of the runs selected (``_r``), by the tally's
    rule (:func:`~netfleet.catalog.sheetstate.add_type_run`), read in the selection's order:
    only runs whose labels name a type and hold a hint it looks for (all: 150 MB at 100,000)."""
    from netfleet.catalog.sheetstate import BURST_LABEL_HINTS, add_type_run

    types: dict[str, list[Any]] = {}
    notes = "r.notes" if has_notes else "NULL"
    hinted = " OR ".join("contains(r.labels, ?)" for _ in BURST_LABEL_HINTS)
    found = con.execute(
        f"SELECT r.labels, {notes}, r.duration, r.duration_s FROM _r k"  # noqa: S608
        f" JOIN runs r ON r.run_id = k.run_id WHERE contains(r.labels, 'instance_type')"
        f" AND ({hinted}) ORDER BY k.rk",
        list(BURST_LABEL_HINTS),
    ).fetchall()
    for labels, text, duration, duration_s in found:
        add_type_run(types, labels, text, [duration, duration_s])
    return types


def _finish(
    group_keys: list[str],
    per_group: list[list[Any]],
    runs_of: Mapping[tuple[Any, ...], Sequence[Any]],
    counts: Sequence[int],
    side: str,
    rate: str,
    unit_label: str,
    filters: str,
    types: dict[str, list[Any]],
) -> CheatSheetData:
    """The sheet from its groups' statistics (keys, intervals, :data:`STATS` scaled), their
    run-level facts (runs, no-drop runs, longest no-drop, lab scales, runs from the sender)
    and the counts of the notes (:data:`netfleet.catalog.sheetstate.COUNTS`' order), with the
    fixed-length runs per type (:func:`~netfleet.catalog.sheetstate.add_type_run`)."""
    n = len(group_keys)
    found = sorted(
        (
            [*row[:n], runs_of[tuple(row[:n])][0], *row[n:], *runs_of[tuple(row[:n])][1:]]
            for row in per_group
            if row[n]
        ),  # no intervals → no row
        key=lambda row: tuple(natural_key(v) for v in row[:n]),  # fargate-256 before -2048
    )
    rows = []
    for row in found:
        no_drop, stopped, _, _, senders = row[-5:]
        flags = [
            levels_flag(row[n + 3], row[n + 6]),
            NO_DROP_FLAG.format(s=stopped or 0, n=no_drop) if no_drop else None,
            SENDER_FLAG.format(n=senders) if senders else None,
        ]
        rows.append([*row[:-5], "; ".join(f for f in flags if f) or None])
    scaled = [(tuple(row[:n]), row[-3], row[-2]) for row in found if row[-3]]
    n_runs, n_omitted, n_stubs, n_without, n_not_tcp, n_bidir, n_bad, n_sender = counts
    from netfleet.catalog.sheetstate import types_list

    return CheatSheetData(
        group_keys=list(group_keys),
        rows=rows,
        side=side,
        rate=rate,
        unit_label=unit_label,
        filters=filters,
        runs=n_runs,
        omitted=n_omitted,
        stubs=n_stubs,
        without_intervals=n_without,
        not_tcp=n_not_tcp,
        bidir=n_bidir,
        impossible=n_bad,
        scaled=scaled,
        from_sender=n_sender,
        types=types_list(types),
    )
