"""The cheat sheet kept up to date as batches arrive: +100 files to a catalog of 10,000 need not
compute the sheet again over every run (DuckDB: 0.2 s of statements and 0.07 s to load it) —
the previous sheet's per-group tallies, plus the new batches' runs, give the same numbers.

What is kept (``CATALOG/_tallies/state-<sha256 of the question>.bin``), per group: the count,
sum, minimum and maximum of the kept interval rates, the runs, the runs counted with their
sender's side and, for each quantile (p5, p50, p95), a **window** of the sorted rates around its
rank — the rates of ranks ``offset … offset + len - 1`` of the group, :data:`WINDOW` ranks either
side of the ranks ``quantile_cont`` interpolates between; plus the sheet's counts and the
committed parts (runs, intervals: name, size, mtime) they cover. Committed parts are never
rewritten (:mod:`netfleet.catalog.layout`), so a batch is in the tally or it is not.

A new batch's runs are read with pyarrow (no DuckDB) and tallied by the rules of the sheet's
query (:mod:`netfleet.catalog.cheatsheet`); a new rate below a window moves its offset up one,
one inside is inserted in order, so the window stays a run of consecutive ranks of the whole
group, and the quantile is read from it when its ranks are inside (DuckDB's ``quantile_cont``:
the rank ``(n - 1) q``, ``lo (1 - d) + hi d``). Anything the rules here do not cover (docs/
catalog.md lists them: a part gone, a ``where`` filter, the wire rate, an interval key, adaptive
or scaled-lab runs, a quantile's ranks outside its window, a damaged state …) is computed afresh
by DuckDB, which keeps the tally again — only when the windows give back exactly DuckDB's own
p5, p50 and p95 (and its counts, minimum, maximum). Averages: the kept sum plus the new rates',
over the count — DuckDB's ``avg`` sums in another order, so the two agree to a relative 1e-15.
"""

from __future__ import annotations

import hashlib
import json
import math
import operator
import os
import stat
import sys
from array import array
from bisect import bisect_left, bisect_right, insort
from collections.abc import Mapping, Sequence
from functools import reduce
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any

from netfleet import __version__
from netfleet.catalog.layout import CATALOG_FORMAT, TEMP_PREFIX, committed_parts
from netfleet.readback import loads_back, read_back
from netfleet.units import MAX_RATE

if TYPE_CHECKING:
    import duckdb

#: the folder of the kept tallies, in the catalog
STATE_DIR = "_tallies"
#: bump when the tally's meaning changes
STATE_FORMAT = 2
#: the quantiles of the sheet (:data:`netfleet.catalog.cheatsheet.STATS`' p5, p50, p95)
QUANTILES = (0.05, 0.5, 0.95)
#: ranks kept either side of a quantile's: a few hundred new rates per group and import move
#: its rank by about their square root against the window's, so it lasts many imports
WINDOW = 256
#: interval rows of new batches added at most (≈ 2 µs each here, reading included; 100
#: seed-002 files: 6,000 rows, 14 ms): a larger import is computed afresh by DuckDB (10,000
#: files' 600,000 rows: ≈ 0.3 s)
MAX_NEW_ROWS = 100_000
#: rates kept in all, at most (8 bytes each): more groups than that are computed afresh
MAX_VALUES = 1 << 18
#: the most bytes of a kept state read back (its rates, 2 MiB at most, and its head)
MAX_STATE_BYTES = 64 * 1024 * 1024
#: the tables the sheet reads
TABLES = ("runs", "intervals")
#: the counts of the sheet's notes (:class:`netfleet.catalog.cheatsheet.CheatSheetData`)
COUNTS = ("runs", "omitted", "stubs", "without_intervals", "not_tcp", "bidir", "impossible",
          "from_sender")  # fmt: skip
#: runs columns a group key may be (their values are JSON's: text, integers, numbers, booleans)
_PLAIN_TYPES = ("string", "large_string", "int64", "int32", "bool", "double")
_MAGIC = b"NFSHEET1\n"
_KEEP = 16
_MAX_RATE = float(f"{MAX_RATE:.0f}")  # the query's literal


class Group:
    """One group's tally: the kept rates' count, sum, minimum, maximum and windows (one per
    quantile: [offset, sorted rates]), its runs and the runs counted with their sender's
    side."""

    __slots__ = ("count", "high", "low", "runs", "senders", "total", "windows")

    def __init__(self) -> None:
        self.count = self.runs = self.senders = 0
        self.total, self.low, self.high = 0.0, math.inf, -math.inf
        self.windows: list[list[Any]] = [[0, []] for _ in QUANTILES]

    def add(self, rates: list[float]) -> None:
        """Rates of one run (kept ones), into the count, sum, extremes and windows, in order. A
        window that reaches neither the bottom nor the top of the group keeps its ends for the
        whole run: its rates below move its offset, those inside are inserted, at once."""
        before, self.count = self.count, self.count + len(rates)
        self.total = reduce(operator.add, rates, self.total)  # (the order of one at a time)
        self.low, self.high = min([self.low, *rates]), max([self.high, *rates])
        ordered = sorted(rates)
        for window in self.windows:
            values = window[1]
            if values and window[0] > 0 and window[0] + len(values) < before:
                low, high = values[0], values[-1]
                window[0] += bisect_left(ordered, low)
                if bisect_right(ordered, high) > bisect_left(ordered, low):  # (rarely)
                    for rate in (rate for rate in rates if low <= rate <= high):
                        insort(values, rate)
                continue
            for count, rate in enumerate(rates, before + 1):
                if not values and count > 1:
                    continue  # a window cut empty: its ranks are unknown (read afresh)
                if values and rate < values[0] and window[0] > 0:
                    window[0] += 1  # below the window (which does not reach the bottom)
                elif values and rate > values[-1] and window[0] + len(values) < count - 1:
                    continue  # above the window (which does not reach the top)
                else:
                    insort(values, rate)

    def quantiles(self) -> list[float] | None:
        """p5, p50, p95 as DuckDB's ``quantile_cont``, None when a rank is outside its window."""
        found = []
        for q, (offset, values) in zip(QUANTILES, self.windows, strict=True):
            rank = (self.count - 1) * q
            low, high = math.floor(rank), math.ceil(rank)
            if low < offset or high >= offset + len(values):
                return None
            lo = values[low - offset]
            found.append(lo if low == high else _between(lo, rank - low, values[high - offset]))
        return found

    def trim(self) -> None:
        """Each window cut to :data:`WINDOW` ranks either side of its quantile's."""
        for q, window in zip(QUANTILES, self.windows, strict=True):
            rank = (self.count - 1) * q
            start = max(window[0], math.floor(rank) - WINDOW)
            stop = min(window[0] + len(window[1]), math.ceil(rank) + WINDOW + 1)
            window[1] = window[1][start - window[0] : stop - window[0]]
            window[0] = start


def _between(lo: float, d: float, hi: float) -> float:
    """DuckDB's interpolation of a DOUBLE quantile (``CastInterpolation::Interpolate``)."""
    return lo * (1.0 - d) + hi * d


class Tally:
    """The sheet's numbers before they are shaped: groups by key values, and the counts."""

    def __init__(self) -> None:
        self.groups: dict[tuple[Any, ...], Group] = {}
        self.counts = dict.fromkeys(COUNTS, 0)
        #: the fixed-length runs per instance type (:func:`add_type_run`)
        self.types: dict[str, list[Any]] = {}


#: a run's labels can make its type burstable only if their text holds one of these
BURST_LABEL_HINTS = ("burst", "bucket_gbit", "peak_gbps", "network_performance")


def add_type_run(
    types: dict[str, list[Any]], labels: str | None, notes: str | None, seconds: list[Any]
) -> None:
    """One run the sheet selected (complete, of its campaign and filter) into ``types``: per
    ``instance_type`` label whose labels may say it bursts (:data:`BURST_LABEL_HINTS`), its
    fixed-length runs (not adaptive: imported, or a set duration) — [how many, the longest
    (seconds: ``duration``, else ``duration_s``), the labels of the first]. What the sheet's
    note on runs shorter than their type's burst reads
    (:func:`netfleet.report.cheatsheet.short_run_note`); the one rule of both the query and
    the tally."""
    if not labels or "instance_type" not in labels or (notes and '"adaptive"' in notes):
        return
    if not any(hint in labels for hint in BURST_LABEL_HINTS):
        return
    found = _labels(labels)
    kind = None if found is None else found.get("instance_type")
    length = seconds[0] or seconds[1]
    if kind is None or length is None:
        return
    have = types.setdefault(str(kind), [0, 0.0, found])
    have[0] += 1
    have[1] = max(have[1], float(length))


def types_list(types: dict[str, list[Any]]) -> list[list[Any]]:
    """``types`` (:func:`add_type_run`) as the sheet keeps them: [type, runs, longest, labels]
    by type."""
    return [[kind, *types[kind]] for kind in sorted(types)]


def stats_rows(tally: Tally) -> list[list[Any]] | None:
    """Per group with kept rates: [*keys, count, min, p5, avg, p50, p95, max, runs, senders]
    (unscaled); None when a quantile's ranks left its window."""
    rows = []
    for key, group in tally.groups.items():
        if not group.count:
            continue
        found = group.quantiles()
        if found is None:
            return None
        p5, p50, p95 = found
        avg = group.total / group.count
        rows.append([*key, group.count, group.low, p5, avg, p50, p95, group.high, group.runs,
                     group.senders])  # fmt: skip
    return rows


# --- the kept state ------------------------------------------------------------------------


def question_key(question: dict[str, Any]) -> str:
    text = json.dumps(
        {"q": question, "state": STATE_FORMAT, "catalog": CATALOG_FORMAT, "netfleet": __version__},
        sort_keys=True,
    )
    return hashlib.sha256(text.encode()).hexdigest()


def _path(catalog: Path, question: dict[str, Any]) -> Path:
    return catalog / STATE_DIR / f"state-{question_key(question)}.bin"


def parts_now(catalog: Path) -> dict[str, list[list[Any]]]:
    """The committed parts of the tables the sheet reads: [name, size, mtime_ns] each."""
    found = committed_parts(catalog)
    out: dict[str, list[list[Any]]] = {}
    for table in TABLES:
        out[table] = []
        for path in found.get(table, []):
            info = os.stat(path)
            out[table].append([path.name, info.st_size, info.st_mtime_ns])
    return out


def save(
    catalog: Path, question: dict[str, Any], meta: dict[str, Any], parts: Any, tally: Tally
) -> None:
    """Keep ``tally`` (over ``parts``) for ``question``; ``meta``: how the keys were resolved
    and the runs columns. A catalog that cannot take it (read only, full) has no state."""
    from netfleet.catalog.sheetcache import prune
    from netfleet.durable import checked_dir
    from netfleet.errors import LinkRefused

    for group in tally.groups.values():
        group.trim()
    payload = array("d")
    groups = []
    for key, group in tally.groups.items():
        windows = []
        for offset, values in group.windows:
            windows.append([offset, len(values)])
            payload.extend(values)
        groups.append({"key": list(key), "count": group.count, "total": group.total,
                       "low": group.low, "high": group.high, "runs": group.runs,
                       "senders": group.senders, "windows": windows})  # fmt: skip
    if len(payload) > MAX_VALUES:
        return
    if sys.byteorder != "little":
        payload.byteswap()
    data = payload.tobytes()
    head = {"question": question, "meta": meta, "parts": parts, "groups": groups,
            "counts": tally.counts, "types": types_list(tally.types), "values": len(payload),
            "sha256": hashlib.sha256(data).hexdigest()}  # fmt: skip
    try:
        text = json.dumps(head, allow_nan=False).encode()
    except ValueError:  # a key or a sum that is not a JSON number
        return
    folder = catalog / STATE_DIR
    try:
        checked_dir(folder.parent, folder.name)  # made, never a link (netfleet.durable)
        target = _path(catalog, question)
        # a cache checked by its checksum: no fsync (a torn file is read as none)
        temp = folder / f"{TEMP_PREFIX}{os.urandom(8).hex()}.part"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(_MAGIC + len(text).to_bytes(8, "little") + text + data)
            os.replace(temp, target)
        except BaseException:
            temp.unlink(missing_ok=True)
            raise
        prune(folder, lambda name: name.startswith("state-") and name.endswith(".bin"), _KEEP)
    except (OSError, LinkRefused):
        return


def load(catalog: Path, question: dict[str, Any]) -> tuple[dict[str, Any], Tally] | None:
    """The kept head and tally for ``question``, or None (none, not ours, damaged)."""
    path = _path(catalog, question)
    try:
        if not stat.S_ISDIR(os.lstat(catalog / STATE_DIR).st_mode):
            return None
        raw = read_back(path, MAX_STATE_BYTES, own=True)
        if not raw.startswith(_MAGIC):
            return None
        size = int.from_bytes(raw[len(_MAGIC) : len(_MAGIC) + 8], "little")
        start = len(_MAGIC) + 8
        head = loads_back(raw[start : start + size])
        data = raw[start + size :]
        if hashlib.sha256(data).hexdigest() != head["sha256"] or head["question"] != question:
            return None
        values = array("d")
        values.frombytes(data)
        if sys.byteorder != "little":
            values.byteswap()
        return head, _tally(head, values)
    except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError):
        return None


def _tally(head: dict[str, Any], values: array[float]) -> Tally:
    """The head's groups and counts with their windows' rates (checked: in order, inside the
    group's extremes, the ranks inside the group)."""
    tally = Tally()
    if set(head["counts"]) != set(COUNTS) or not all(
        type(v) is int for v in head["counts"].values()
    ):
        raise ValueError("counts")
    tally.counts = dict(head["counts"])
    for kind, runs, longest, labels in head["types"]:
        if not (isinstance(kind, str) and type(runs) is int and isinstance(labels, dict)):
            raise ValueError("types")
        tally.types[kind] = [runs, float(longest), labels]
    at = 0
    for doc in head["groups"]:
        group = Group()
        group.count, group.runs, group.senders = (int(doc[k]) for k in ("count", "runs", "senders"))
        group.total, group.low, group.high = (float(doc[k]) for k in ("total", "low", "high"))
        if len(doc["windows"]) != len(QUANTILES):
            raise ValueError("windows")
        for window, (offset, length) in zip(group.windows, doc["windows"], strict=True):
            part = values[at : at + length].tolist()
            at += length
            if len(part) != length or offset < 0 or offset + length > group.count:
                raise ValueError("window")
            if any(b < a for a, b in pairwise(part)):
                raise ValueError("order")
            if part and (part[0] < group.low or part[-1] > group.high):
                raise ValueError("extremes")
            window[0], window[1] = int(offset), part
        tally.groups[tuple(doc["key"])] = group
    if at != len(values):
        raise ValueError("values")
    return tally


# --- new batches, tallied without DuckDB ----------------------------------------------------


def updated(
    catalog: Path, question: dict[str, Any], group_keys: Sequence[str], side: str
) -> tuple[Tally, Any, dict[str, Any]] | None:
    """The kept tally with the batches committed since added — with the parts it now covers
    and how its keys were resolved — or None when it must be computed afresh (see the
    module's text)."""
    kept = load(catalog, question)
    if kept is None:
        return None
    head, tally = kept
    try:
        parts = parts_now(catalog)
    except OSError:
        return None
    new: dict[str, list[Path]] = {}
    for table in TABLES:
        before = {tuple(p) for p in head["parts"][table]}
        now = {tuple(p) for p in parts[table]}
        if not before <= now:
            return None  # a part went (runs retired): afresh
        new[table] = [catalog / table / p[0] for p in parts[table] if tuple(p) not in before]
    if not new["runs"]:
        # nothing new: the cached answer was missing for another reason (damaged, pruned,
        # another manifest generation) — afresh, DuckDB's own average to the bit
        return None
    try:
        added = _add_batches(tally, head["meta"], new, question, group_keys, side)
    except (OSError, ValueError, KeyError):
        return None
    return (tally, parts, head["meta"]) if added else None


def _add_batches(
    tally: Tally,
    meta: dict[str, Any],
    new: dict[str, list[Path]],
    question: dict[str, Any],
    group_keys: Sequence[str],
    side: str,
) -> bool:
    """The new parts' runs into ``tally``; False when a run or a part is outside the rules
    this module follows (the caller computes afresh)."""
    import pyarrow.parquet as pq

    wanted = ["run_id", "status", "campaign", "protocol", "bidir", "direction", "interval",
              "labels", "duration", "duration_s",
              *(["notes"] if meta["has_notes"] else [])]  # fmt: skip
    resolved = meta["resolved"]
    wanted += [name for how, name in resolved if how == "column" and name not in wanted]
    runs: dict[str, dict[str, Any]] = {}
    for path in new["runs"]:
        # ParquetFile, not read_table: that one loads pyarrow.dataset and .compute (0.06 s)
        with pq.ParquetFile(path) as part:
            schema = part.schema_arrow
            if sorted(schema.names) != meta["columns"]:
                return False
            for how, name in resolved:
                if how == "column" and str(schema.field(name).type) not in _PLAIN_TYPES:
                    return False
            rows = part.read(columns=wanted).to_pylist()
        for row in rows:
            if row["run_id"] in runs:
                return False
            runs[row["run_id"]] = row
    sums: dict[str, list[tuple[Any, ...]]] = {run: [] for run in runs}
    has_receiver: set[str] = set()
    columns = ["run_id", "kind", "role", "bits_per_second", "omitted", "seconds"]
    rows_new = 0
    for path in new["intervals"]:
        with pq.ParquetFile(path) as part:
            rows_new += part.metadata.num_rows
            if rows_new > MAX_NEW_ROWS:
                return False  # DuckDB over every run is quicker than this loop
            table = part.read(columns=columns).to_pydict()
        for run, kind, role, bps, omitted, secs in zip(*table.values(), strict=True):
            if kind != "sum" or run not in sums:
                continue
            if role == "receiver":
                has_receiver.add(run)
            sums[run].append((role, bps, omitted, secs))
    campaign = question["campaign"]
    for run_id, run in runs.items():
        if run["status"] != "ok" or (campaign is not None and run["campaign"] != campaign):
            continue
        labels = _labels(run["labels"])
        if labels is None:
            return False
        if any(labels.get(k) is not None for k in ("lab_scale", "lab_time_scale")):
            return False  # a scaled lab's note: DuckDB's
        if meta["has_notes"] and run["notes"] is not None and "adaptive" in run["notes"]:
            return False  # an adaptive run's flag: DuckDB's
        add_type_run(tally.types, run["labels"], None, [run["duration"], run["duration_s"]])
        key = []
        for how, name in resolved:
            value = run[name] if how == "column" else labels.get(name)
            if how == "label" and value is not None and not isinstance(value, str):
                return False  # json_extract_string's text of a number: DuckDB's
            key.append(value)
        _add_run(tally, tuple(key), run, sums[run_id], side, run_id in has_receiver)
    return True


def _labels(text: Any) -> dict[str, Any] | None:
    if text is None:
        return {}
    try:
        found = json.loads(text)
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def _add_run(
    tally: Tally,
    key: tuple[Any, ...],
    run: dict[str, Any],
    sums: list[tuple[Any, ...]],
    side: str,
    has_receiver: bool,
) -> None:
    """One selected run, as the query counts it (see :mod:`netfleet.catalog.cheatsheet`)."""
    counts = tally.counts
    counts["runs"] += 1
    counts["not_tcp"] += run["protocol"] != "tcp"
    counts["bidir"] += run["bidir"] is True or run["direction"] == "bidir"
    stub_below = 0.5 * (1.0 if run["interval"] is None else run["interval"])
    fallback = side == "receiver" and not has_receiver
    kept: list[float] = []
    any_bad = any_sender = False
    for role, bps, omitted, secs in sums:
        if role != side and not (fallback and role == "sender"):
            continue
        impossible = bps is not None and not (math.isfinite(bps) and 0 <= bps <= _MAX_RATE)
        stub = None if secs is None else secs < stub_below
        any_sender = any_sender or role != side
        counts["omitted"] += omitted is True
        counts["impossible"] += impossible
        any_bad = any_bad or impossible
        counts["stubs"] += stub is True and omitted is False
        if omitted is False and not impossible and stub is False and bps is not None:
            kept.append(bps)
    if not kept:
        counts["without_intervals"] += not any_bad
        return
    counts["from_sender"] += any_sender
    group = tally.groups.get(key) or tally.groups.setdefault(key, Group())
    group.runs += 1
    group.senders += any_sender
    group.add(kept)


# --- a fresh sheet's tally, from DuckDB ------------------------------------------------------

#: groups at most for a kept tally (each quantile's window is a condition of one statement)
MAX_GROUPS = 64


Plan = tuple[dict[tuple[Any, ...], list[tuple[float, float]]], list[tuple[float, float]]]


def window_plan(raw: list[tuple[Any, ...]], n: int) -> Plan | None:
    """Per group (``raw``: DuckDB's per-group rows — ``n`` keys, count, min, avg, max,
    [p5, p50, p95], sum), the value range around each quantile whose rates its window keeps
    (all of them in a small group), and those ranges merged (sorted, disjoint); None when the
    sheet has more than :data:`MAX_GROUPS` groups or a key that is not JSON's."""
    if len(raw) > MAX_GROUPS:
        return None
    ranges: list[tuple[float, float]] = []
    wanted: dict[tuple[Any, ...], list[tuple[float, float]]] = {}
    for row in raw:
        key = tuple(row[:n])
        if not all(v is None or type(v) in (str, int, float, bool) for v in key):
            return None
        count, low, _, high, quantiles, _ = row[n:]
        if count <= 4 * WINDOW:
            bounds = [(low, high)] * len(QUANTILES)
        else:  # WINDOW ranks either side where the rates are 4.4 times as dense as the mean
            # between p5 and p95: fewer where they are sparser (the window's only as wide as
            # the range), the range cut to its ranks in DuckDB where they are denser
            reach = WINDOW * (quantiles[-1] - quantiles[0]) / (2 * count)
            bounds = [(max(low, v - reach), min(high, v + reach)) for v in quantiles]
        wanted[key] = bounds
        ranges += bounds
    merged: list[tuple[float, float]] = []
    for lo, hi in sorted(ranges):
        if merged and lo <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        else:
            merged.append((lo, hi))
    return wanted, merged


def tally_of(
    con: duckdb.DuckDBPyConnection,
    keyed: str,
    groups: list[str],
    raw: list[tuple[Any, ...]],
    runs_of: Mapping[tuple[Any, ...], Sequence[Any]],
    below_of: Mapping[tuple[Any, ...], Sequence[Any]],
    plan: Plan,
    counts: list[int],
) -> Tally | None:
    """The tally of the sheet DuckDB just computed: ``keyed`` is its kept intervals (group
    columns ``groups`` and ``bps``), ``raw`` its per-group rows (:func:`window_plan`),
    ``runs_of`` its run-level facts by group, ``below_of`` per group how many kept rates are
    below each of the ``plan``'s ranges, ``counts`` its notes'. The windows' rates are read by
    one more pass over the rates inside the ranges. None when the sheet is not one this module
    keeps (a scaled lab, an adaptive run) or the windows do not give back DuckDB's own p5, p50
    and p95 exactly."""
    n = len(groups)
    wanted, merged = plan
    tally = Tally()
    tally.counts = dict(zip(COUNTS, counts, strict=True))
    for row in raw:
        key = tuple(row[:n])
        count, low, _, high, _, total = row[n:]
        runs, no_drop, _, lab_scale, lab_time, senders = runs_of[key]
        if no_drop or lab_scale is not None or lab_time is not None:
            return None
        group = Group()
        group.count, group.total, group.low, group.high = count, total, low, high
        group.runs, group.senders = runs, senders
        tally.groups[key] = group
    if not merged:  # no kept interval: nothing to read
        return tally
    # per group and range, the ranks its windows need (WINDOW either side of each quantile's
    # in that range), as 1-based positions in the range's sorted rates (list_slice's)
    spans: dict[tuple[Any, ...], list[list[int]]] = {}
    for key, group in tally.groups.items():
        below = [int(b) for b in below_of[key]]
        spans[key] = [[0, 0] for _ in merged]  # an empty slice: no window in that range
        for q, (lo, hi) in zip(QUANTILES, wanted[key], strict=True):
            j = next(j for j, r in enumerate(merged) if r[0] <= lo and hi <= r[1])
            rank = (group.count - 1) * q
            start = max(1, math.floor(rank) - WINDOW - below[j] + 1)
            stop = math.ceil(rank) + WINDOW - below[j] + 1
            span = spans[key][j]
            if span != [0, 0]:
                start, stop = min(span[0], start), max(span[1], stop)
            spans[key][j] = [start, stop]
    # per range: its rates in order, per group, cut to the ranks needed in DuckDB (the rows
    # inside a range can be a third of all at 10,000 files: not worth sending to Python)
    params: list[Any] = []
    each = []
    for j, (lo, hi) in enumerate(merged):
        params += [lo, hi]
        ends = []
        for end in (0, 1):
            cases = []
            for key in tally.groups:
                test = " AND ".join(f"{g} IS NOT DISTINCT FROM ?" for g in groups) or "true"
                cases.append(f"WHEN {test} THEN {int(spans[key][j][end])}")
                params += list(key)
            ends.append(f"CASE {' '.join(cases)} ELSE 0 END")
        each.append(
            "list_slice(list(bps ORDER BY bps) FILTER (WHERE bps BETWEEN ? AND ?),"
            f" {ends[0]}, {ends[1]})"
        )
    inside = " OR ".join("bps BETWEEN ? AND ?" for _ in merged)
    params += [v for r in merged for v in r]
    grouping = ", ".join(groups)
    import duckdb

    try:  # the tally never stands in the way of the sheet
        found = con.execute(
            f"SELECT {grouping + ', ' if groups else ''}{', '.join(each)}"  # noqa: S608
            f" FROM {keyed} WHERE {inside}{' GROUP BY ' + grouping if groups else ''}",
            params,
        ).fetchall()
    except duckdb.Error:
        return None
    for row in found:
        key = tuple(row[:n])
        group = tally.groups[key]
        offsets = below_of[key]
        for window, (lo, hi) in zip(group.windows, wanted[key], strict=True):
            j = next(j for j, r in enumerate(merged) if r[0] <= lo and hi <= r[1])
            window[0], window[1] = int(offsets[j]) + spans[key][j][0] - 1, row[n + j] or []
    for row in raw:
        group = tally.groups[tuple(row[:n])]
        if group.quantiles() != list(row[n + 4]):
            return None
    return tally
