"""The one reader of the catalog's load loop: a file's bytes → its manifest row and its rows,
in worker tasks (:func:`read_task`; :func:`pool` of ``forkserver`` processes, or this process
for a few files). Every file is read once — hashed (SHA-256: the manifest's ``file_id``),
inflated by ISA-L when gzip (at most one byte past the raw-result limit,
:mod:`netfleet.store.limits`, whose JSON value count is checked before anything is parsed),
decoded, made into an envelope, and the envelope into rows by the one row builder
(:func:`netfleet.catalog.build.envelope_rows`).

* An iperf3 ``-J`` document is decoded by the import's one decoder without its per-stream
  entries (:func:`netfleet.store.import_iperf3.typed`, ``streams=False``: they stay in the
  source file; the per-stream rows are built from it on demand,
  :mod:`netfleet.catalog.lazystreams`). Its envelope is made by the
  import's own builder (:func:`~netfleet.store.import_iperf3.iperf3_fields`: the same labels,
  inferred fields, shape and rate checks, interval flags), as plain values.
* Everything else — ``--json-stream`` lines, iperf 2 text and CSV, an engine's own format, and
  any iperf3 document msgspec refuses (truncated, NaN, a lone surrogate, nesting too deep) —
  goes through the import's own reader (:func:`netfleet.store.imports.build_envelope`), so its
  reasons and checks are the same; its per-stream rows are left out too.

Whatever a file holds, the outcome is a :class:`~netfleet.catalog.sourcelist.Read`: its
manifest row, and its rows or the reason it is refused; a bad file never stops the others.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from isal import igzip_lib, isal_zlib

from netfleet.catalog.build import RowError, envelope_rows
from netfleet.catalog.columns import json_encoder
from netfleet.catalog.layout import TABLES
from netfleet.catalog.manifest import COLUMNS, INGESTED
from netfleet.catalog.memory import collector_paused
from netfleet.catalog.sourcelist import Found, Options, Read, s3_client, s3_split
from netfleet.catalog.writer import Batch
from netfleet.errors import StoreError, StoreUnreachable
from netfleet.store.import_base import (
    ImportProblem,
    imported_envelope,
    plain_envelope,
    read_checked,
    run_identity,
)
from netfleet.store.import_iperf3 import checked_shape, iperf3_fields, typed
from netfleet.store.import_labels import labels_of
from netfleet.store.limits import BYTES_PER_VALUE, max_raw_bytes, too_large
from netfleet.store.s3 import object_fault

if TYPE_CHECKING:
    import pyarrow as pa
    from pydantic import ValidationError


def inflate(data: bytes, limit: int | None = None) -> bytes:
    """The file's content, gunzipped (ISA-L) when it is gzip; refused when it breaks the
    raw-result limit (``limit``: it, else read from the environment), counted before it is
    parsed."""
    out = data
    limit = max_raw_bytes() if limit is None else limit
    if data[:2] == b"\x1f\x8b":
        out = _gunzip(data, limit + 1)
    if len(out) < max(1, limit // BYTES_PER_VALUE):  # too_large's own shortcut, its limit
        return out  # read once (the environment, not twice more per file)
    why = too_large(out)
    if why:
        raise ImportProblem(why)
    return out


def _gunzip(data: bytes, most: int) -> bytes:
    """Every gzip member of ``data`` inflated, at most ``most`` bytes (ISA-L's inflate: a
    fifth of the time of gzip.GzipFile's, which reads through a file object)."""
    # the stubs declare it an instance; it is the exception class isal raises
    damaged = cast("type[Exception]", igzip_lib.IsalError)
    parts: list[bytes] = []
    size = 0
    rest = data
    try:
        while rest and size < most:
            inflater = isal_zlib.decompressobj(wbits=31)
            chunk = inflater.decompress(rest, most - size)
            parts.append(chunk)
            size += len(chunk)
            if not inflater.eof:
                if size >= most:
                    break
                raise ImportProblem(
                    "truncated or damaged gzip (the file ends before the end-of-stream marker)"
                )
            rest = inflater.unused_data.lstrip(b"\x00")  # padding between members
            if rest and rest[:2] != b"\x1f\x8b":
                raise ImportProblem("truncated or damaged gzip (not a gzip member after one)")
    except damaged as exc:
        raise ImportProblem(f"truncated or damaged gzip ({exc})") from exc
    return b"".join(parts)


#: top-level keys of a file kept in the manifest's ``file_keys`` (a script's own, beside
#: iperf3's): text, numbers and booleans only, each at most this long
_KEY_TEXT = 200
_IPERF3_KEYS = frozenset({"start", "intervals", "end", "error", "server_output_json"})


def file_keys(doc: dict[str, Any]) -> dict[str, Any]:
    return {
        k: v if not isinstance(v, str) else v[:_KEY_TEXT]
        for k, v in doc.items()
        if k not in _IPERF3_KEYS and isinstance(v, str | int | float | bool)
    }


def read_file(
    source: str,
    data: bytes,
    meta: dict[str, Any],
    opts: Options,
    mtime: float | None = None,
    limit: int | None = None,
) -> Read:
    """One file's bytes (already read, within the byte limit) → its manifest row and rows.
    ``meta``: the manifest columns known before reading (size, mtime_ns, inode, etag …);
    ``mtime``: the file's modification time (a start time when the file has none);
    ``limit``: the raw-result limit, read from the environment once for a task's files (else
    here)."""
    digest = hashlib.sha256(data).hexdigest()
    row: dict[str, Any] = {
        **meta,
        "source": source,
        "file_id": digest,
        "size": len(data),
        "campaign": opts.campaign or None,  # (ingest's: the envelope's own, once read)
    }
    try:
        return _read(source, data, digest, row, opts, mtime, limit)
    except ImportProblem as exc:
        reason = str(exc)
    except StoreError as exc:
        reason = exc.message
    except UnicodeDecodeError as exc:
        reason = f"not UTF-8 text ({exc.reason} at byte {exc.start})"
    except Exception as exc:  # a shape no check foresaw: this file only, never the folder
        reason = f"cannot be imported ({type(exc).__name__}: {str(exc)[:200]})"
    return Read({**row, "state": "bad", "reason": reason})


def _read(
    source: str,
    data: bytes,
    digest: str,
    row: dict[str, Any],
    opts: Options,
    mtime: float | None,
    limit: int | None = None,
) -> Read:
    if opts.entry == INGESTED:
        return _read_envelope(source, data, row)
    # the path as text: a local source is a normalised absolute path already (os.path.abspath:
    # what a Path of it gives as_posix() and str(), without making one: 2 µs a file)
    s3 = source.startswith("s3://")
    where = Path(source.removeprefix("s3:/")).as_posix() if s3 else source
    plain = inflate(data, limit)
    doc = typed(plain, streams=False)
    keys: dict[str, Any] = {}
    if doc is not None:
        keys = file_keys(doc)
        labels, found, epoch = labels_of(where, opts.labels, opts.pattern)
        provisional, fields = iperf3_fields(
            where,
            data,
            checked_shape(doc),
            labels=labels,
            found=found,
            epoch_label=epoch,
            side=opts.side,
            mtime=mtime,
            digest=digest,
            keep_bytes=False,  # by reference: the bytes stay at their source
        )
        envelope = _direct_envelope(provisional, opts.campaign, fields)
    else:  # another format: the import's own reader (it loads the engines and pydantic)
        from netfleet.store.imports import build_envelope

        built = build_envelope(
            Path(where), data, plain=plain, mtime=mtime, side=opts.side,
            campaign=opts.campaign, labels=opts.labels, pattern=opts.pattern,
        )  # fmt: skip
        envelope = _plain_envelope(built)
    run_id = run_identity(digest, envelope["campaign"], envelope["labels"])
    envelope["run_id"] = envelope["run_key"] = run_id
    imported = envelope["notes"]["imported"]
    imported.pop("original", None)
    imported.pop("original_encoding", None)
    imported["from"] = source
    imported["by_reference"] = True
    rows = envelope_rows(envelope, source=source)
    rows.intervals = rows.intervals.where("kind", "stream", equal=False)
    row.update(
        state="ok",
        run_id=run_id,
        labels=_sorted_json(envelope["labels"]),
        format=envelope["engine"]["name"],
        file_keys=_sorted_json(keys or imported.get("file_labels") or {}),
        pattern_labels=_plain_json(imported.get("pattern_labels") or []),
        inferred=_plain_json(imported.get("inferred") or []),
        flags=_plain_json(imported.get("flags") or []),
    )
    return Read(row, rows)


def _read_envelope(source: str, data: bytes, row: dict[str, Any]) -> Read:
    """A netfleet envelope's bytes (``ingest``: a results root's file or object, read as the
    store reads it — a file's ``d=``/``campaign=`` folders no links, the byte limit, the format
    version, its partition — and checked against the model) → its manifest row and every row
    of its run, the per-stream rows too; refused with the reason (without the path)."""
    import io

    from pydantic import ValidationError

    from netfleet.store.envelope import Envelope
    from netfleet.store.rawfile import decode_raw
    from netfleet.store.root import check_not_linked

    try:
        if not source.startswith("s3://"):  # (an object's key is checked by decode_raw)
            check_not_linked(Path(source))
        doc = decode_raw(io.BytesIO(data), source)
        Envelope.model_validate(doc)
        rows = envelope_rows(doc, source=source)
    except StoreError as exc:
        raise ImportProblem(exc.message.removeprefix(f"{source}: ")) from exc
    except ValidationError as exc:
        raise ImportProblem(_validation_reason(exc)) from exc
    except RowError as exc:
        raise ImportProblem(str(exc)) from exc
    row.update(
        state="ok",
        run_id=rows.run_id,
        campaign=doc.get("campaign"),
        labels=_sorted_json(doc.get("labels") or {}),
        format=(doc.get("engine") or {}).get("name"),
    )
    return Read(row, rows)


#: ``json.dumps(value, sort_keys=True)`` and ``json.dumps(value)``, their encoders made once
#: (json.dumps makes one per call)
_sorted_json = json_encoder(sort_keys=True)
_plain_json = json_encoder()


def _direct_envelope(run_id: str, campaign: str, fields: dict[str, Any]) -> dict[str, Any]:
    """The envelope of an iperf3 document's fields (:func:`iperf3_fields`) in its JSON form,
    without the model (validating and dumping it cost 0.013 ms a file, and loading pydantic):
    every field is JSON's values as the model keeps them, but the hosts' addresses, which the
    file gives — anything but text goes through the model, which refuses it as the import
    does."""
    if all(isinstance(fields[host]["address"], str) for host in ("client", "server")):
        return plain_envelope(run_id, campaign, **fields)
    return _plain_envelope(imported_envelope(run_id, campaign, **fields))


#: the envelope fields that are models: dumped; every other field is JSON's values already
_MODELS = ("client", "server", "engine", "state")


def _plain_envelope(env: Any) -> dict[str, Any]:
    """The envelope as the catalog's row makers read it (its JSON form), without walking the
    result and the notes again: they are JSON's values already (decoded from the file, made
    by the import's builder); only the small records are dumped."""
    out = {name: getattr(env, name) for name in type(env).model_fields}
    for name in _MODELS:
        value = out.get(name)
        if value is not None:
            out[name] = value.model_dump(mode="json")
    return out


def read_local(
    path: str,
    follow_links: bool,
    opts: Options,
    known: dict[str, Any],
    limit: int | None = None,
) -> Read:
    """Read one local file (a regular file only, never through a link unless asked, never
    more than the byte limit, ``limit`` when given) and :func:`read_file` it; a second stat
    after the read catches a file changed while it was read (it is read again on the next
    import)."""
    source = os.path.abspath(path)
    known = {**known, "checked_ns": time.time_ns()}  # before the read: racy files (register)
    try:
        listed = (known["inode"], known["size"], known["mtime_ns"])
        data, st = read_checked(path, follow_links, limit, None if None in listed else listed)
    except ImportProblem as exc:
        return Read({"source": source, "state": "bad", "reason": str(exc), **known})
    except OSError as exc:
        reason = f"unreadable ({exc.strerror or exc})"
        return Read({"source": source, "state": "bad", "reason": reason, **known})
    meta = {"mtime_ns": st.st_mtime_ns, "inode": st.st_ino, "checked_ns": known["checked_ns"]}
    read = read_file(source, data, meta, opts, st.st_mtime, limit)
    try:
        after = os.stat(path, follow_symlinks=follow_links)
        before = (st.st_size, st.st_mtime_ns, st.st_ino)
        same = (after.st_size, after.st_mtime_ns, after.st_ino) == before
    except OSError:
        same = False
    if not same:
        read.row.update(state="bad", reason="changed while it was read: import it again")
        read.rows = None
    return read


# --- tasks: a worker's unit -------------------------------------------------------------

#: files per task handed to a worker (their rows come back as Arrow tables): each task costs
#: this process ≈ 0.7 ms (its trip through the pipe, landing, settling) — 85 tasks at 10,000
#: files, not 157 — and the last ones are a quarter of it (:func:`_cut`)
TASK_FILES = 128

#: one task's outcome: per file its Read, and the rows of the task's ok files as Arrow tables
Task = tuple[list[Read], dict[str, "pa.Table"]]


@collector_paused()
def read_task(items: list[Found], opts: Options, follow_links: bool) -> Task:
    """Read a task's files (a worker's unit): each one's :class:`Read`, and the ok ones' rows
    as Arrow tables (converted here, in the worker; a run whose values Arrow refuses is
    refused alone, with its reason).

    The garbage collector waits for the task's end: its passes over the task's decoded
    documents — thousands of dicts and lists, alive until the task's tables are made, freed
    by their counts, none in a cycle — cost 5 % of a worker's CPU (0.02 ms a file)."""
    reads: list[Read] = []
    batch = Batch()
    limit = max_raw_bytes()  # (the environment read once a task, not twice a file)
    seen: set[str] = set()  # each run's rows once per task
    for item in items:
        if item.etag is not None:
            read = _read_s3(item, opts, limit)
        else:
            known = {"size": item.size, "mtime_ns": item.mtime_ns, "inode": item.inode}
            read = read_local(item.path, follow_links, opts, known, limit)
        reads.append(read)
        if read.rows is not None and read.rows.run_id in seen:
            read.rows = None  # the same run as a file before it: its rows are there
        if read.rows is not None:
            seen.add(read.rows.run_id)
            _refuse_all(reads, batch.add(read.rows))
    _refuse_all(reads, batch.convert())
    for read in reads:
        read.rows = None  # the rows travel as tables
    return reads, batch.as_tables()


def _refuse_all(reads: list[Read], rejected: list[tuple[Any, str]]) -> None:
    for rows, why in rejected:
        for read in reads:
            if read.row.get("run_id") == rows.run_id and read.row.get("state") == "ok":
                read.row.update(state="bad", reason=why)


def _read_s3(item: Found, opts: Options, limit: int) -> Read:
    """An S3 object read once (GET, at most the byte limit) and :func:`read_file` d."""
    meta: dict[str, Any] = {"etag": item.etag, "size": item.size}
    if item.size is not None and item.size > limit:
        reason = f"{item.size:,} bytes: more than {limit:,} (NETFLEET_MAX_RAW_BYTES)"
        return Read({"source": item.source, "state": "bad", "reason": reason, **meta})
    bucket, key = s3_split(item.source)
    try:
        got = s3_client().get_object(Bucket=bucket, Key=key, IfMatch=item.etag)
        data = got["Body"].read(limit + 1)
        meta["version_id"] = got.get("VersionId")
    except Exception as exc:
        reason = f"unreadable ({type(exc).__name__}: {str(exc)[:200]})"
        if opts.entry == INGESTED and not object_fault(exc):  # the store's fault, not the file's
            raise StoreUnreachable(
                f"{item.source}: {reason}",
                hint="check AWS_ENDPOINT_URL, the credentials (boto3's standard chain) and the "
                "bucket, then ingest again",
            ) from exc
        return Read({"source": item.source, "state": "bad", "reason": reason, **meta})
    return read_file(item.source, data, meta, opts, limit=limit)


def reads(
    todo: list[Found], opts: Options, follow_links: bool, pool: Any, size: int = TASK_FILES
) -> Iterator[Landed]:
    """Each task's files (``size`` a task), their manifest rows as columns and their tables, in
    order. With a pool, every task is handed out at once (the workers start reading while this
    process does the rest of its work)."""
    return _handed_out(
        todo, size, pool, partial(_columnar_task, opts=opts, follow_links=follow_links)
    )


def _handed_out(todo: list[Any], size: int, pool: Any, task: Callable[..., Any]) -> Iterator[Any]:
    """``task`` of each ``size`` items of ``todo`` — its outcome per item and its tables —, in
    order: here, or in ``pool``'s workers (:func:`netfleet.catalog.register.pool`), every task
    handed out at once."""
    tasks = _cut(todo, size, pool is not None)
    if pool is None:
        return ((items, *task(items)) for items in tasks)
    shipped = pool.map(partial(_shipped, task), tasks)
    return (_landed(items, one) for items, one in zip(tasks, shipped, strict=True))


def _cut(todo: list[Any], size: int, taper: bool) -> list[list[Any]]:
    """``todo`` in tasks of ``size`` items; with ``taper`` (workers), the last ``2 * size`` or
    more in tasks of a quarter of it: a worker's last task is short, so the others wait less for
    it at the end (a whole task is ≈ 0.15 s of a worker; the last one kept one worker alone
    while the other idled)."""
    tail = max(0, (len(todo) - 2 * size) // size * size) if taper else len(todo)
    small = max(1, size // 4)
    return [todo[i : i + size] for i in range(0, tail, size)] + [
        todo[i : i + small] for i in range(tail, len(todo), small)
    ]


#: the manifest columns a task's reads fill (the importing process adds ``asked``,
#: ``generation``, ``row_id`` and ``kept``)
READ_COLUMNS = tuple(
    name for name, _ in COLUMNS if name not in ("asked", "generation", "row_id", "kept")
)

#: a task as the importing process settles it: its files, their manifest rows as columns
#: (one value per file, in order: no dict per file to loop over) and the rows of its ok files
#: as Arrow tables
Landed = tuple[list[Any], Any, dict[str, "pa.Table"]]


def _columnar_task(
    items: list[Found], opts: Options, follow_links: bool
) -> tuple[dict[str, list[Any]], dict[str, pa.Table]]:
    """:func:`read_task` with its reads as manifest columns."""
    reads, tables = read_task(items, opts, follow_links)
    rows = [read.row for read in reads]
    return {name: [row.get(name) for row in rows] for name in READ_COLUMNS}, tables


#: a task's outcome as a worker sends it: its manifest columns, and its tables' record
#: batches serialized one after the other in one buffer (without their schemas, which both
#: sides know: one read each on landing instead of an IPC stream per table, a sixth of the
#: CPU), each with its :class:`Packing`
Shipped = tuple[dict[str, list[Any]], bytes, list["Packing"]]


class Packing(NamedTuple):
    """How one record batch travels: ``length`` bytes at ``offset`` of the task's buffer, and
    the positions of the table's columns sent (a column of nulls only is not — an interval
    sum's stream, UDP and TCP-info columns —: it is made again on landing)."""

    table: str
    offset: int
    length: int
    sent: list[int]


#: rows from which a batch travels without its columns of nulls (a task's interval sums: its
#: runs and ends rows are few, and making their columns again costs more than their bytes)
PACKED_ROWS = 1024


def _shipped(task: Callable[..., Any], items: list[Any]) -> Shipped:
    """``task`` in a worker, its tables serialized for the trip back, without their columns of
    nulls only (0.63 of the bytes of 64 seed-002 files' tables: this process reads them from
    the pipe)."""
    columns, tables = task(items)
    import pyarrow as pa

    buffers = []
    packings = []
    at = 0
    for name, table in tables.items():
        for batch in table.to_batches():  # an empty table has none: made again on landing
            rows = batch.num_rows
            if not rows:
                continue
            sent = list(range(batch.num_columns))
            if rows >= PACKED_ROWS:  # (a batch of nulls only: one column, to keep its length)
                sent = [n for n, col in enumerate(batch.columns) if col.null_count < rows] or [0]
            if len(sent) < batch.num_columns:
                fields = [batch.schema.field(n) for n in sent]
                arrays = [batch.column(n) for n in sent]
                batch = pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))
            buffer = batch.serialize()
            buffers.append(buffer)
            packings.append(Packing(name, at, buffer.size, sent))
            at += buffer.size
    return columns, b"".join(buffers), packings


def _landed(items: list[Any], shipped: Shipped) -> Landed:
    """A worker's task as :func:`_columnar_task` returned it."""
    import pyarrow as pa

    from netfleet.catalog.schemas import SCHEMAS

    columns, blob, packings = shipped
    whole = pa.py_buffer(blob)
    batches: dict[str, list[pa.RecordBatch]] = {name: [] for name in TABLES}
    for name, offset, length, sent in packings:
        schema = SCHEMAS[name]
        data = whole.slice(offset, length)
        if len(sent) == len(schema):
            batches[name].append(pa.ipc.read_record_batch(data, schema))
            continue
        part = pa.ipc.read_record_batch(data, pa.schema([schema.field(n) for n in sent]))
        arrays: list[Any] = [None] * len(schema)
        for at, n in enumerate(sent):
            arrays[n] = part.column(at)
        for n, field in enumerate(schema):
            if arrays[n] is None:
                arrays[n] = _nulls(field.type, part.num_rows)
        batches[name].append(pa.RecordBatch.from_arrays(arrays, schema=schema))
    return items, columns, {t: pa.Table.from_batches(batches[t], schema=SCHEMAS[t]) for t in TABLES}


#: an array of nulls per type, sliced to each batch's length (made once, not per batch)
_NULLS: dict[Any, Any] = {}


def _nulls(kind: pa.DataType, rows: int) -> pa.Array:
    import pyarrow as pa

    have = _NULLS.get(kind)
    if have is None or len(have) < rows:
        have = _NULLS[kind] = pa.nulls(max(rows, 8192), kind)
    return have.slice(0, rows)


# --- envelopes: ingest's files ----------------------------------------------------------------


def _validation_reason(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "envelope"
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"not a valid netfleet envelope: {where}: {first['msg']}{more}"
