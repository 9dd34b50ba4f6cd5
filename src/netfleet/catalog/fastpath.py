"""The columnar ingest path for iperf3 envelopes: DuckDB's ``read_json`` decodes a chunk of raw
files at once (both cores), SQL unnests ``result.intervals`` (and the server's) into the
``intervals`` rows, and Python builds only the small rows — ``runs`` and ``ends`` — with the
reference functions of :mod:`netfleet.catalog.rows` and :mod:`netfleet.engines.iperf3_rows`
applied to the envelope without its intervals.

The Python path (:func:`netfleet.catalog.ingestion.read_rows`) stays the reference. A file goes
there instead, with the reason kept in :attr:`FastChunk.fallback`, when:

* it is not a regular file inside ``d=…/campaign=…`` directories (links are the reference's to
  refuse), or DuckDB cannot read the chunk it is in (not gzip, not JSON, a value of the wrong
  JSON type for its column, a number beyond int64, an object larger than the raw-size cap): the
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

import json
import os
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
from pydantic import ValidationError

from netfleet.catalog.rows import (
    ENGINE_PARSERS,
    INTERVALS_SCHEMA,
    TABLE_PARSERS,
    RowError,
    RunRows,
    run_row,
)
from netfleet.engines import iperf3_rows
from netfleet.errors import NetfleetError
from netfleet.store.envelope import Envelope, upgrade
from netfleet.store.root import _check_partition, max_raw_bytes
from netfleet.values import as_bool, obj

#: the envelope's keys other than ``result``, read as raw JSON and decoded by Python's json
ENVELOPE_KEYS = tuple(k for k in Envelope.model_fields if k != "result")

_NUM = ", ".join(
    [f'"{n}" DOUBLE' for n in ("start", "end", "seconds", "bits_per_second")]
    + [f"{n} BIGINT" for n in ("bytes", "retransmits", "snd_cwnd", "snd_wnd", "rtt", "rttvar")]
    + [f"{n} BIGINT" for n in ("pmtu", "packets", "lost_packets")]
    + ["lost_percent DOUBLE", "jitter_ms DOUBLE", "omitted BOOLEAN", "sender BOOLEAN"]
)
_INTERVALS = (
    f'STRUCT("sum" STRUCT({_NUM}), sum_bidir_reverse STRUCT({_NUM}), '
    f"streams STRUCT(socket BIGINT, {_NUM})[])[]"
)
_RESULT = (
    f'STRUCT(start JSON, "end" JSON, error JSON, server_output_text JSON, intervals {_INTERVALS},'
    f' server_output_json STRUCT("end" JSON, error JSON, intervals {_INTERVALS}))'
)
_COLUMNS = "{" + ", ".join([f"{k}: 'JSON'" for k in ENVELOPE_KEYS] + [f"result: '{_RESULT}'"]) + "}"

_SERIES = """
    (x.{series} IS NOT NULL AND (x.{series}.start IS NOT NULL OR x.{series}."end" IS NOT NULL
     OR x.{series}.seconds IS NOT NULL OR x.{series}.bytes IS NOT NULL
     OR x.{series}.bits_per_second IS NOT NULL OR x.{series}.sender IS NOT NULL
     OR x.{series}.omitted IS NOT NULL OR x.{series}.retransmits IS NOT NULL
     OR x.{series}.packets IS NOT NULL OR x.{series}.jitter_ms IS NOT NULL))"""


def _row(series: str, kind: str, default: str) -> str:
    """SELECT list of one ``intervals`` row from the struct ``series``."""
    v = series
    sender = f"coalesce({v}.sender, {default})"
    ints = ("retransmits", "snd_cwnd", "snd_wnd", "rtt", "rttvar", "pmtu", "packets")
    return ", ".join(
        [
            "k",
            "run_id",
            "side",
            f"CASE WHEN {sender} THEN 'sender' ELSE 'receiver' END AS role",
            f"CASE WHEN (side = 'client') = {sender} THEN 'client_to_server' "
            "ELSE 'server_to_client' END AS flow",
            f"'{kind}' AS kind",
            f"{v}.socket AS stream_id" if kind == "stream" else "NULL::BIGINT AS stream_id",
            "idx",
            f'{v}.start AS start, {v}."end" AS "end", {v}.seconds AS seconds',
            f"{v}.bytes AS bytes, {v}.bits_per_second AS bits_per_second",
            *(f"{v}.{n} AS {n}" for n in ints),
            f"{v}.lost_packets AS lost_packets, {v}.lost_percent AS lost_percent",
            f"{v}.jitter_ms AS jitter_ms, coalesce({v}.omitted, false) AS omitted",
        ]
    )


#: ``raw`` (the chunk as read, ``k`` = position) × ``meta`` (k, run_id, reverse) → interval rows;
#: the rules are :func:`netfleet.engines.iperf3_rows.interval_rows`'s
INTERVALS_SQL = f"""
WITH sides AS (
    SELECT k, m.run_id, 'client' AS side, NOT m.reverse AS fwd, r.result.intervals AS ivs
    FROM raw r JOIN meta m USING (k)
    UNION ALL
    SELECT k, m.run_id, 'server', m.reverse, r.result.server_output_json.intervals
    FROM raw r JOIN meta m USING (k) WHERE r.result.server_output_json IS NOT NULL
), entries AS (
    SELECT k, run_id, side, fwd, unnest(ivs) AS x, generate_subscripts(ivs, 1) - 1 AS idx
    FROM sides
), kept AS (  -- 3.12 repeats the last interval verbatim when the other end vanishes: drop it
    SELECT * FROM entries
    WINDOW w AS (PARTITION BY k, side ORDER BY idx)
    QUALIFY NOT ({_SERIES.format(series="sum")} AND idx > 0
        AND x.sum.start IS NOT DISTINCT FROM lag(x.sum.start) OVER w
        AND x.sum."end" IS NOT DISTINCT FROM lag(x.sum."end") OVER w
        AND x.sum.bytes IS NOT DISTINCT FROM lag(x.sum.bytes) OVER w)
), streams AS (
    SELECT k, run_id, side, fwd, idx, unnest(x.streams) AS s FROM kept
)
SELECT {_row("x.sum", "sum", "fwd")} FROM kept WHERE {_SERIES.format(series="sum")}
UNION ALL
SELECT {_row("x.sum_bidir_reverse", "sum", "NOT fwd")} FROM kept
WHERE {_SERIES.format(series="sum_bidir_reverse")}
UNION ALL
SELECT {_row("s", "stream", "fwd")} FROM streams WHERE s IS NOT NULL
"""  # noqa: S608 (our own column names and constants only)


@dataclass
class FastRun:
    """One file the fast path turned into rows: ``rows`` holds ``runs`` and ``ends``; the
    ``intervals`` rows are in :attr:`FastChunk.intervals`, at ``offset`` for ``count`` rows."""

    rows: RunRows
    offset: int = 0
    count: int = 0


@dataclass
class FastChunk:
    """What the fast path made of a chunk of files, by position in the chunk."""

    runs: dict[int, FastRun] = field(default_factory=dict)
    #: position → why the file goes to the Python path
    fallback: dict[int, str] = field(default_factory=dict)
    #: interval rows of every run in :attr:`runs`, ordered by position
    intervals: pa.Table = field(default_factory=INTERVALS_SCHEMA.empty_table)

    def interval_slice(self, run: FastRun) -> pa.Table:
        return self.intervals.slice(run.offset, run.count)


def _plain_file(path: Path) -> str | None:
    """Why ``path`` is not for DuckDB (the reference path reports links and the like)."""
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
    return None


def connection(threads: int | None = None) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(":memory:")
    con.execute(f"SET threads = {threads or min(os.cpu_count() or 1, 4)}")
    con.execute("SET preserve_insertion_order = true")
    con.execute("SET enable_progress_bar = false")
    return con


def read_chunk(
    con: duckdb.DuckDBPyConnection,
    paths: list[Path],
    on_fail: Callable[[int, str], None],
) -> list[tuple[int, pa.Table]]:
    """Read ``paths`` with DuckDB; a chunk DuckDB refuses is split until each refused file is
    alone (``on_fail(position, reason)``). Returns (first position, table) pieces."""
    pieces: list[tuple[int, pa.Table]] = []
    pending: list[tuple[int, list[Path]]] = [(0, paths)]
    limit = max_raw_bytes()
    while pending:
        start, group = pending.pop()
        try:
            table = con.execute(
                f"SELECT * FROM read_json(?, columns = {_COLUMNS}, records = true, "  # noqa: S608
                "format = 'newline_delimited', compression = 'gzip', filename = true, "
                "hive_partitioning = false, "
                f"maximum_object_size = {limit})",
                [[str(p) for p in group]],
            ).to_arrow_table()
        except duckdb.Error as exc:
            if len(group) == 1:
                on_fail(start, f"DuckDB could not read it ({str(exc).splitlines()[0][:200]})")
            else:
                half = len(group) // 2
                pending += [(start + half, group[half:]), (start, group[:half])]
            continue
        names = table.column("filename").to_pylist()
        table = table.drop_columns(["filename"])
        if names != [str(p) for p in group]:  # not exactly one JSON object per file
            if len(group) == 1:
                on_fail(start, "not one JSON object on one line")
            else:
                half = len(group) // 2
                pending += [(start + half, group[half:]), (start, group[:half])]
            continue
        pieces.append((start, table))
    return sorted(pieces, key=lambda p: p[0])


def _loads(value: Any) -> Any:
    return None if value is None else json.loads(value)


def _light(env: Mapping[str, Any]) -> dict[str, Any]:
    """The envelope minus the intervals: enough for ``run_row`` and ``end_row``."""
    doc = {k: v for k in ENVELOPE_KEYS if (v := _loads(env[k])) is not None}
    result = env["result"]
    if result is not None:
        light: dict[str, Any] = {}
        for key in ("start", "end", "error", "server_output_text"):
            if (value := _loads(result[key])) is not None:
                light[key] = value
        server = result["server_output_json"]
        if server is not None:
            light["server_output_json"] = {
                k: v for k in ("end", "error") if (v := _loads(server[k])) is not None
            }
        doc["result"] = light
    return doc


def _why_not(doc: dict[str, Any], path: Path) -> str | None:
    """Why a decoded envelope needs the reference path; None when the fast path applies."""
    try:
        upgrade(doc, str(path))
        _check_partition(path, doc)
        Envelope.model_validate(doc)
    except (NetfleetError, ValidationError) as exc:
        return f"envelope check: {str(exc).splitlines()[0][:200]}"
    engine = obj(doc.get("engine")).get("name")
    if engine != "iperf3" or "iperf3" in TABLE_PARSERS:
        return f"engine {engine!r}: parsed in Python"
    if ENGINE_PARSERS.get("iperf3") is not iperf3_rows.result_rows:
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
    tables: list[pa.Table] = []
    ks: list[int] = []
    run_ids: list[str] = []
    reverses: list[bool] = []
    for start, table in pieces:
        envs = table.drop_columns(["result"]).to_pylist()
        # result's small parts only (never the intervals) cross into Python
        small = table.column("result").combine_chunks()
        results = _small_results(small)
        keep = []
        for i, (env, result) in enumerate(zip(envs, results, strict=True)):
            position = readable[start + i]
            env["result"] = result
            doc = _light(env)
            why = _why_not(doc, paths[position])
            if why is None:
                try:
                    rows, reverse = _small_rows(doc, str(paths[position]))
                except RowError as exc:
                    why = f"rows: {exc}"
            if why is not None:
                chunk.fallback[position] = why
                continue
            chunk.runs[position] = FastRun(rows)
            keep.append(i)
            ks.append(position)
            run_ids.append(rows.run_id)
            reverses.append(reverse)
        if keep:
            tables.append(
                table.take(pa.array(keep, pa.int64()))
                .select(["result"])
                .append_column("k", pa.array([readable[start + i] for i in keep], pa.int64()))
            )
    if not tables:
        return chunk
    raw = pa.concat_tables(tables)
    meta = pa.table(
        {
            "k": pa.array(ks, pa.int64()),
            "run_id": pa.array(run_ids, pa.string()),
            "reverse": pa.array(reverses, pa.bool_()),
        }
    )
    con.register("raw", raw)
    con.register("meta", meta)
    try:
        rows = con.execute(INTERVALS_SQL).to_arrow_table()
    finally:
        con.unregister("raw")
        con.unregister("meta")
    _attach(chunk, rows)
    return chunk


def _small_results(column: pa.Array) -> list[dict[str, Any] | None]:
    """The ``result`` struct column minus its interval lists, as Python values."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    fields = {name: column.field(name) for name in ("start", "end", "error", "server_output_text")}
    server = column.field("server_output_json")
    server_fields = {name: server.field(name) for name in ("end", "error")}
    valid = column.is_valid().to_pylist()
    server_valid = server.is_valid().to_pylist()
    values = {k: v.to_pylist() for k, v in fields.items()}
    server_values = {k: v.to_pylist() for k, v in server_fields.items()}
    out: list[dict[str, Any] | None] = []
    for i, ok in enumerate(valid):
        if not ok:
            out.append(None)
            continue
        item: dict[str, Any] = {k: values[k][i] for k in values}
        item["server_output_json"] = (
            {k: server_values[k][i] for k in server_values} if server_valid[i] else None
        )
        out.append(item)
    return out


def _small_rows(doc: dict[str, Any], source: str) -> tuple[RunRows, bool]:
    """``runs`` and ``ends`` rows by the reference functions; and the run's ``reverse``."""
    run = run_row(doc, source)
    result = doc.get("result")
    if not isinstance(result, Mapping):
        return RunRows(run), False
    params = obj(doc.get("params"))
    reverse = as_bool(params.get("reverse"))
    if reverse is None:
        reverse = bool(as_bool(obj(obj(result.get("start")).get("test_start")).get("reverse")))
    ends = [iperf3_rows.end_row(run["run_id"], "client", result)]
    server = result.get("server_output_json")
    if isinstance(server, Mapping):
        ends.append(iperf3_rows.end_row(run["run_id"], "server", server))
    return RunRows(run, [], ends), reverse


def _attach(chunk: FastChunk, rows: pa.Table) -> None:
    """Order the interval rows by file position and give each run its slice."""
    ks = rows.column("k").to_numpy()
    order = np.argsort(ks, kind="stable")
    ordered = rows.take(pa.array(order)).drop_columns(["k"])
    chunk.intervals = ordered.select(INTERVALS_SCHEMA.names).cast(INTERVALS_SCHEMA)
    positions = sorted(chunk.runs)
    counts = np.bincount(ks, minlength=max(positions) + 1) if len(ks) else None
    offset = 0
    for position in positions:
        count = int(counts[position]) if counts is not None else 0
        chunk.runs[position].offset, chunk.runs[position].count = offset, count
        offset += count
