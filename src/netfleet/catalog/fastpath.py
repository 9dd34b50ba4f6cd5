"""The columnar ingest path for iperf3 envelopes: DuckDB's ``read_json`` decodes a chunk of raw
files at once (both cores), SQL unnests ``result.intervals`` (and the server's) into the
``intervals`` rows, and Python builds only the small rows — ``runs`` and ``ends`` — with the
reference functions of :mod:`netfleet.catalog.rows` and :mod:`netfleet.engines.iperf3_rows`
applied to the envelope without its intervals.

The Python path (:func:`netfleet.catalog.ingestion.read_rows`) stays the reference. A file goes
there instead, with the reason kept in :attr:`FastChunk.fallback`, when:

* it is not a regular file inside ``d=…/campaign=…`` directories (links are the reference's to
  refuse), or it breaks the raw-result limit (:func:`netfleet.store.limits.stream_too_large`,
  bytes *and* JSON values, read in 1 MiB chunks: DuckDB alone would check bytes only), or
  DuckDB cannot read the chunk it is in (not gzip, not JSON, a value of the wrong JSON type
  for its column, a number beyond int64): the
  chunk is split in halves until the file is alone;
* its envelope fails the same checks the reference makes (format version, partition, the
  pydantic model — on the envelope minus ``result``);
* it is not an iperf3 run parsed by :func:`netfleet.engines.iperf3_rows.result_rows` (another
  engine, a replaced parser, or a text server whose lines the Python parser reads).

Known difference, by construction: DuckDB casts a JSON value to its column's type where the
Python path's tolerant coercion (:mod:`netfleet.values`) gives NULL — e.g. ``"bytes": 1.5``
becomes 2, ``"sender": 2`` becomes true. No iperf3 version writes such values; the equivalence
test (tests/test_catalog_fastpath.py) holds the two paths equal on every captured output.
"""

from __future__ import annotations

import gzip
import json
import os
import stat
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, NamedTuple

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import ValidationError

from netfleet.catalog.rows import (
    INTERVALS_SCHEMA,
    TABLE_PARSERS,
    RowError,
    RunRows,
    run_row,
)
from netfleet.engines import ENGINES, iperf3_rows
from netfleet.errors import NetfleetError
from netfleet.store.envelope import Envelope, upgrade
from netfleet.store.limits import stream_too_large
from netfleet.store.rawfile import _check_partition, max_raw_bytes
from netfleet.values import obj

#: the envelope's keys other than ``result``, read as raw JSON and decoded by Python's json
ENVELOPE_KEYS = tuple(k for k in Envelope.model_fields if k != "result")

_NUM = ", ".join(
    ["socket BIGINT"]
    + [f'"{n}" DOUBLE' for n in ("start", "end", "seconds", "bits_per_second")]
    + [f"{n} BIGINT" for n in ("bytes", "retransmits", "snd_cwnd", "snd_wnd", "rtt", "rttvar")]
    + [f"{n} BIGINT" for n in ("pmtu", "packets", "lost_packets")]
    + ["lost_percent DOUBLE", "jitter_ms DOUBLE", "omitted BOOLEAN", "sender BOOLEAN"]
)
# one struct type for sums and streams (a sum has no socket: NULL), so they share one list
_INTERVALS = (
    f'STRUCT("sum" STRUCT({_NUM}), sum_bidir_reverse STRUCT({_NUM}), streams STRUCT({_NUM})[])[]'
)
_RESULT = (
    f'STRUCT(start JSON, "end" JSON, error JSON, server_output_text JSON, intervals {_INTERVALS},'
    f' server_output_json STRUCT("end" JSON, error JSON, intervals {_INTERVALS}))'
)
_COLUMNS = "{" + ", ".join([f"{k}: 'JSON'" for k in ENVELOPE_KEYS] + [f"result: '{_RESULT}'"]) + "}"

#: result parts read as JSON for the ``runs``/``ends`` rows (column name → SQL)
_SMALL = {
    "r_start": "result.start",
    "r_end": 'result."end"',
    "r_error": "result.error",
    "r_text": "result.server_output_text",
    "s_end": 'result.server_output_json."end"',
    "s_error": "result.server_output_json.error",
}


def _nonempty(v: str) -> str:
    """A series object with at least one known key (``{}`` and a missing key give no row)."""
    keys = ("start", '"end"', "seconds", "bytes", "bits_per_second", "sender", "omitted")
    return f"({v} IS NOT NULL AND ({' OR '.join(f'{v}.{k} IS NOT NULL' for k in keys)}))"


_AS_BOOL = (  # netfleet.values.as_bool on a JSON token: true/false and the integers 0/1
    "CASE ({j})::VARCHAR WHEN 'true' THEN true WHEN 'false' THEN false "
    "WHEN '1' THEN true WHEN '0' THEN false END"
)
_REVERSE = "coalesce({}, {}, false)".format(  # iperf3_rows.result_rows's ``reverse``
    _AS_BOOL.format(j="params -> 'reverse'"),
    _AS_BOOL.format(j="result.start -> 'test_start' -> 'reverse'"),
)
_INT_COLUMNS = ("retransmits", "snd_cwnd", "snd_wnd", "rtt", "rttvar", "pmtu", "packets")


#: an interval row's values, in the order of ``intervals`` (name, DuckDB type)
_VALUE_COLUMNS = (
    [("start", "DOUBLE"), ('"end"', "DOUBLE"), ("seconds", "DOUBLE"), ("bytes", "BIGINT")]
    + [("bits_per_second", "DOUBLE")]
    + [(c, "BIGINT") for c in _INT_COLUMNS]
    + [("lost_packets", "BIGINT"), ("lost_percent", "DOUBLE"), ("jitter_ms", "DOUBLE")]
)
_VALUES = ", ".join(
    [f"v.{c} AS {c}" for c, _ in _VALUE_COLUMNS] + ["coalesce(v.omitted, false) AS omitted"]
)
#: a header row's (no values; the names of the union's columns)
_NO_VALUES = ", ".join([f"NULL::{t} AS {c}" for c, t in _VALUE_COLUMNS] + ["false AS omitted"])


def chunk_sql(limit: int) -> str:
    """One pass over a chunk of files (``$files``): per file a *header* row (``idx`` = -1)
    carrying the envelope's small parts as one JSON text, then its interval rows by the rules
    of :func:`netfleet.engines.iperf3_rows.interval_rows` — except the repeated-interval drop
    (``pos`` = 1 rows, the ``sum``s, are all kept for it: :func:`_keep`) and the text
    columns (``server``/``sender``/``pos`` booleans and ints here: :func:`_finish`).

    The files are read once (a materialized CTE); the client's and the server's interval
    entries are unnested once each, then each entry's ``sum`` (``pos`` 1), ``sum_bidir_reverse``
    (2) and streams (3) are taken in their own branch, without copying the nested lists. The
    rows come out in regions — headers, then sums, reverse sums and streams, each the client's
    then the server's (:data:`REGIONS`) — each region in file order (one thread): one span per
    file and region for :func:`_attach`."""
    fields = ", ".join(
        [f"{k!r}: {k}" for k in ENVELOPE_KEYS]
        + [f"{name!r}: {sql}" for name, sql in _SMALL.items()]
        + ["'has_result': result IS NOT NULL"]
        + ["'has_server': result.server_output_json IS NOT NULL"]
    )
    fwd = "(server = reverse)"  # the host's role in the main direction, when unflagged
    return f"""
WITH files AS MATERIALIZED (
    SELECT list_position($files, filename) - 1 AS k, run_id ->> '$' AS rid,
        to_json({{{fields}}})::VARCHAR AS hdr, {_REVERSE} AS reverse,
        result.intervals AS client, result.server_output_json.intervals AS srv
    FROM read_json($files, columns = {_COLUMNS}, records = true,
        format = 'newline_delimited', compression = 'gzip', filename = true,
        hive_partitioning = false, maximum_object_size = {limit})
), entries AS MATERIALIZED (
    SELECT k, rid, reverse, false AS server, unnest(client) AS x,
        generate_subscripts(client, 1) - 1 AS idx FROM files
    UNION ALL
    SELECT k, rid, reverse, true AS server, unnest(srv) AS x,
        generate_subscripts(srv, 1) - 1 AS idx FROM files
)
SELECT k, rid AS run_id, false AS server, NULL::BOOLEAN AS sender, 1 AS pos, -1 AS idx,
    NULL::BIGINT AS stream_id, {_NO_VALUES},
    NULL::BOOLEAN AS nonempty, hdr AS header
FROM files
UNION ALL
SELECT k, rid, server, coalesce(v.sender, {fwd}), 1, idx, NULL, {_VALUES}, {_nonempty("v")}, NULL
FROM (SELECT k, rid, server, reverse, idx, x.sum AS v FROM entries)
UNION ALL
SELECT k, rid, server, coalesce(v.sender, NOT {fwd}), 2, idx, NULL, {_VALUES}, NULL, NULL
FROM (SELECT k, rid, server, reverse, idx, x.sum_bidir_reverse AS v FROM entries)
WHERE {_nonempty("v")}
UNION ALL
SELECT k, rid, server, coalesce(v.sender, {fwd}), 3, idx, v.socket, {_VALUES}, NULL, NULL
FROM (SELECT k, rid, server, reverse, idx, unnest(x.streams) AS v FROM entries)
WHERE v IS NOT NULL
"""  # noqa: S608 (our own column names and constants only)


class Span(NamedTuple):
    """Rows ``offset`` … ``offset + length`` of a chunk's intervals, all of one of
    :data:`REGIONS`."""

    region: int
    offset: int
    length: int


class Columnar(NamedTuple):
    """One run's interval rows: its spans of a chunk's ``intervals`` table (shared, not
    copied, so a batch can slice many consecutive runs at once)."""

    table: pa.Table
    spans: tuple[Span, ...]

    @property
    def num_rows(self) -> int:
        return sum(span.length for span in self.spans)


@dataclass
class FastRun:
    """One file the fast path turned into rows: ``rows`` holds ``runs`` and ``ends``; the
    ``intervals`` rows are in :attr:`FastChunk.intervals`, at ``spans``."""

    rows: RunRows
    spans: tuple[Span, ...] = ()


@dataclass
class FastChunk:
    """What the fast path made of a chunk of files, by position in the chunk."""

    runs: dict[int, FastRun] = field(default_factory=dict)
    #: position → why the file goes to the Python path
    fallback: dict[int, str] = field(default_factory=dict)
    #: interval rows of every run in :attr:`runs`, ordered by position
    intervals: pa.Table = field(default_factory=INTERVALS_SCHEMA.empty_table)

    def columnar(self, run: FastRun) -> Columnar:
        return Columnar(self.intervals, run.spans)


def _plain_file(path: Any) -> str | None:
    """Why ``path`` is not for DuckDB (the reference path reports links and the like). An
    ``s3://`` object (:class:`netfleet.store.s3.S3Object`) has no links: only its place."""
    if not isinstance(path, Path):
        key = PurePosixPath(str(path))
        if not (
            key.parent.name.startswith("campaign=") and key.parent.parent.name.startswith("d=")
        ):
            return "not inside d=…/campaign=… prefixes"
        return None
    try:
        info = os.lstat(path)
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file"
    part = path.parent
    if not (part.name.startswith("campaign=") and part.parent.name.startswith("d=")):
        return "not inside d=…/campaign=… directories"
    top = part.parent.parent
    if os.path.realpath(part) != os.path.join(os.path.realpath(top), part.parent.name, part.name):
        return "its directory is a symbolic link"
    # DuckDB counts no JSON values: the raw-result limit is checked here, streaming, and a file
    # that breaks it goes to the Python reader, which refuses it with the same reason
    try:
        with gzip.open(path, "rb") as fh:
            return stream_too_large(fh)
    except (OSError, EOFError, zlib.error) as exc:
        return f"cannot be read ({type(exc).__name__})"


def connection(threads: int | None = None) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(":memory:")
    con.execute(f"SET threads = {threads or min(os.cpu_count() or 1, 4)}")
    con.execute("SET preserve_insertion_order = true")
    con.execute("SET enable_progress_bar = false")
    return con


#: a refused chunk is halved at most this often before the rest goes to the Python path
MAX_SPLITS = 24


def read_chunk(
    con: duckdb.DuckDBPyConnection,
    paths: list[Path],
    on_fail: Callable[[int, str], None],
) -> list[tuple[int, pa.Table]]:
    """Run :func:`chunk_sql` over ``paths``; a chunk DuckDB refuses is split until each refused
    file is alone (``on_fail(position, reason)``). Returns (first position, rows) pieces whose
    ``k`` is the position in ``paths``."""
    pieces: list[tuple[int, pa.Table]] = []
    pending: list[tuple[int, list[Path]]] = [(0, paths)]
    sql = chunk_sql(max_raw_bytes())
    splits = 0
    while pending:
        start, group = pending.pop()
        if splits >= MAX_SPLITS:  # many odd files: the Python path reads the rest one by one
            for n in range(len(group)):
                on_fail(start + n, "many files of this chunk were refused by DuckDB")
            continue
        why = ""
        try:
            table = con.execute(sql, {"files": [str(p) for p in group]}).to_arrow_table()
        except duckdb.Error as exc:
            why = f"DuckDB could not read it ({str(exc).splitlines()[0][:200]})"
        else:
            headers = pc.filter(table.column("k"), pc.equal(table.column("idx"), -1))
            if headers.to_pylist() != list(range(len(group))):
                why = "not one JSON object on one line"
        if not why:
            ks = pc.add(table.column("k"), start).cast(pa.int64())
            pieces.append((start, table.set_column(0, "k", ks)))
        elif len(group) == 1:
            on_fail(start, why)
        else:
            splits += 1
            half = len(group) // 2
            pending += [(start + half, group[half:]), (start, group[:half])]
    return sorted(pieces, key=lambda p: p[0])


def _light(header: Mapping[str, Any]) -> dict[str, Any]:
    """The envelope minus the intervals, from a header (JSON nulls are dropped: as missing
    keys they mean the same to ``run_row``/``end_row``, and the model refuses both or neither
    but for ``direction``, whose null then goes the Python way)."""
    doc = {k: v for k in ENVELOPE_KEYS if (v := header.get(k)) is not None}
    if header.get("has_result"):
        result = {
            key: header[column]
            for key, column in (
                ("start", "r_start"),
                ("end", "r_end"),
                ("error", "r_error"),
                ("server_output_text", "r_text"),
            )
            if header.get(column) is not None
        }
        if header.get("has_server"):
            result["server_output_json"] = {
                key: header[column]
                for key, column in (("end", "s_end"), ("error", "s_error"))
                if header.get(column) is not None
            }
        doc["result"] = result
    return doc


def _why_not(doc: dict[str, Any], path: Any) -> str | None:
    """Why a decoded envelope needs the reference path; None when the fast path applies."""
    try:
        upgrade(doc, str(path))
        _check_partition(Path(str(path)), doc)
        Envelope.model_validate(doc)
    except (NetfleetError, ValidationError) as exc:
        return f"envelope check: {str(exc).splitlines()[0][:200]}"
    engine = obj(doc.get("engine")).get("name")
    if engine != "iperf3":
        return f"engine {engine!r}: parsed in Python"
    if TABLE_PARSERS.get("iperf3") is not ENGINES["iperf3"].table_rows:
        return "the iperf3 row parser was replaced"
    result = doc.get("result")
    if isinstance(result, Mapping) and (
        "server_output_text" in result or "server_stdout" in obj(doc.get("outputs"))
    ):
        return "a text server's output: parsed in Python"
    return None


def fast_rows(con: duckdb.DuckDBPyConnection, paths: list[Path]) -> FastChunk:
    """Rows of the files in ``paths`` that the fast path can take; the others in ``fallback``."""
    chunk = FastChunk()
    readable: list[int] = []
    for n, path in enumerate(paths):
        why = _plain_file(path)
        if why:
            chunk.fallback[n] = why
        else:
            readable.append(n)
    mapped = [paths[n] for n in readable]
    pieces = read_chunk(con, mapped, lambda i, why: chunk.fallback.__setitem__(readable[i], why))
    if not pieces:
        return chunk
    rows = pa.concat_tables([table for _, table in pieces])
    is_header = pc.equal(rows.column("idx"), -1)
    headers = rows.select(["k", "header"]).filter(is_header).to_pydict()
    accepted = np.zeros(len(mapped), dtype=bool)
    for k, text in zip(headers["k"], headers["header"], strict=True):
        position = readable[k]
        doc = _light(json.loads(text))
        why = _why_not(doc, paths[position])
        if why is None:
            try:
                chunk.runs[position] = FastRun(_small_rows(doc, str(paths[position])))
                accepted[k] = True
                continue
            except RowError as exc:
                why = f"rows: {exc}"
        chunk.fallback[position] = why
    if not accepted.any():
        return chunk
    rows = rows.drop_columns(["header"])
    keep = _keep(rows, accepted)
    _attach(chunk, rows.filter(pa.array(keep)), readable)
    return chunk


def _numpy(rows: pa.Table, name: str) -> Any:
    return rows.column(name).to_numpy(zero_copy_only=False)


def _keep(rows: pa.Table, accepted: Any) -> Any:
    """Which rows are interval rows: of an accepted file, not a header, not an empty ``sum``
    (``pos`` 1 rows are all there until here, as predecessors), and not in an interval iperf3
    3.12 repeated verbatim when the other end vanished (a non-empty ``sum`` with its
    predecessor's start, end and bytes drops the whole interval)."""
    k, idx, pos = _numpy(rows, "k"), _numpy(rows, "idx"), _numpy(rows, "pos")
    nonempty = _numpy(rows, "nonempty")
    nonempty = np.where(_nulls(rows, "nonempty"), False, nonempty).astype(bool)
    keep = (idx >= 0) & accepted[k]
    totals = np.flatnonzero(keep & (pos == 1))
    key = _entry_key(rows)
    order = totals[np.argsort(key[totals], kind="stable")]
    same = np.zeros(len(order), dtype=bool)
    same[1:] = key[order][1:] == key[order][:-1] + 1  # the previous interval of that report
    for name in ("start", "end", "bytes"):
        values, null = _numpy(rows, name)[order], _nulls(rows, name)[order]
        same[1:] &= (null[1:] & null[:-1]) | (~null[1:] & ~null[:-1] & (values[1:] == values[:-1]))
    same &= nonempty[order]
    if same.any():
        keep &= ~np.isin(key, key[order][same])
    return keep & ((pos != 1) | nonempty)


def _nulls(rows: pa.Table, name: str) -> Any:
    return rows.column(name).is_null().to_numpy(zero_copy_only=False)


def _finish(rows: pa.Table) -> pa.Table:
    """The text columns of ``intervals`` from the query's booleans; a stream's ``kind``."""
    server, sender = rows.column("server"), rows.column("sender")
    columns = {
        "side": pc.if_else(server, "server", "client"),
        "role": pc.if_else(sender, "sender", "receiver"),
        # the client sends client→server data; so does a receiving server
        "flow": pc.if_else(pc.xor(server, sender), "client_to_server", "server_to_client"),
        "kind": pc.if_else(pc.less_equal(rows.column("pos"), 2), "sum", "stream"),
    }
    for name, values in columns.items():
        rows = rows.append_column(name, values)
    return rows.drop_columns(["server", "sender", "pos", "nonempty"])


def _entry_key(rows: pa.Table) -> Any:
    """One int64 per (file, host report, interval index)."""
    k = rows.column("k").to_numpy(zero_copy_only=False).astype(np.int64)
    server = rows.column("server").to_numpy(zero_copy_only=False).astype(np.int64)
    idx = rows.column("idx").to_numpy(zero_copy_only=False).astype(np.int64)
    return ((k * 2 + server) << 32) + idx


def _small_rows(doc: dict[str, Any], source: str) -> RunRows:
    """``runs`` and ``ends`` rows by the reference functions."""
    run = run_row(doc, source)
    result = doc.get("result")
    if not isinstance(result, Mapping):
        return RunRows(run)
    ends = [iperf3_rows.end_row(run["run_id"], "client", result)]
    server = result.get("server_output_json")
    if isinstance(server, Mapping):
        ends.append(iperf3_rows.end_row(run["run_id"], "server", server))
    return RunRows(run, [], ends)


#: the regions of :func:`chunk_sql`'s interval rows (:func:`regions`): sums, reverse sums,
#: streams, each the client's then the server's
REGIONS = range(1, 7)
#: the regions holding ``sum`` rows (the rest hold streams)
SUM_REGIONS = range(1, 5)


def regions(rows: pa.Table) -> Any:
    """Each interval row's region: sums, reverse sums, streams (``pos`` 1, 2, 3), each the
    client's then the server's — the order :func:`chunk_sql`'s branches give them."""
    pos = rows.column("pos").to_numpy(zero_copy_only=False).astype(np.int64)
    server = rows.column("server").to_numpy(zero_copy_only=False).astype(np.int64)
    return (np.minimum(pos, 3) - 1) * 2 + server + 1


def pieces(rows: pa.Table) -> tuple[Any, Any, Any]:
    """The table cut where the (region, file) changes: each piece's first row, region and
    file (``k``)."""
    ks = rows.column("k").to_numpy(zero_copy_only=False).astype(np.int64)
    region = regions(rows)
    cut = np.flatnonzero((np.diff(ks) != 0) | (np.diff(region) != 0)) + 1
    first = np.concatenate([[0], cut]).astype(np.int64) if len(ks) else cut
    return first, region[first], ks[first]


def _attach(chunk: FastChunk, rows: pa.Table, readable: list[int]) -> None:
    """Give each run its spans: one per (region, file) piece of the table, whatever order the
    pieces come in. DuckDB returns a region's rows in file order (one thread), so a file has
    one piece per region (not always the regions in the order of the ``UNION ALL``
    branches, which spans do not need); rows in any other order only give more, smaller
    spans."""
    first, region, ks = pieces(rows)
    ordered = _finish(rows).drop_columns(["k"])
    chunk.intervals = ordered.select(INTERVALS_SCHEMA.names).cast(INTERVALS_SCHEMA)
    ends = np.append(first[1:], rows.num_rows)[: len(first)]
    spans: list[list[Span]] = [[] for _ in readable]
    for start, end, r, k in zip(first, ends, region, ks, strict=True):
        spans[int(k)].append(Span(int(r), int(start), int(end - start)))
    for k, position in enumerate(readable):
        if position in chunk.runs:
            chunk.runs[position].spans = tuple(sorted(spans[k]))
