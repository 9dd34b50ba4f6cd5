"""Reading an import by reference's files (issue 26): in tasks of :data:`TASK_FILES` files,
in this process or in worker processes (``forkserver``, the readers loaded once in the fork
server), each task's ok files' rows returned as Arrow tables (converted in the worker)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from typing import TYPE_CHECKING, Any, NamedTuple

from netfleet.catalog.ingestion import _Batch
from netfleet.catalog.layout import TABLES
from netfleet.catalog.manifest import COLUMNS
from netfleet.catalog.sourcelist import Found, s3_client, s3_split

if TYPE_CHECKING:
    import pyarrow as pa

    from netfleet.catalog.sourcelist import Options, Read
    from netfleet.catalog.typedsums import Deferred, TaskSums

#: files to read at which reading spreads over worker processes: below, reading them here
#: (≈ 0.5 ms a seed-002 file) costs less than starting the workers (≈ 0.7 s, loading the
#: readers, partly hidden behind this process's own start)
PARALLEL_MIN = 512
#: files per task handed to a worker (their rows come back as Arrow tables): each task costs
#: this process ≈ 0.7 ms (its trip through the pipe, landing, settling) — 79 tasks at 10,000
#: files, not 157 — and the last one keeps one worker alone ≈ 0.08 s
TASK_FILES = 128
#: interval sums of a task's files whose checks and rows wait for the task's (their structs
#: are kept until then: ≈ 0.4 KB a sum); past it, files are checked one by one (a task of
#: long runs, e.g. a day at -i 1, does not hold them all)
DEFERRED_ROWS = 200_000


#: one task's outcome: per file its Read, and the rows of the task's ok files as Arrow tables
Task = tuple[list["Read"], dict[str, "pa.Table"]]


def read_task(items: list[Found], opts: Options, follow_links: bool) -> Task:
    """Read a task's files (a worker's unit): each one's :class:`Read`, and the ok ones' rows
    as Arrow tables (converted here, in the worker; a run whose values Arrow refuses is
    refused alone, with its reason). A plain iperf3 document's interval checks and sum rows
    are made for the task's such files at once (:class:`~netfleet.catalog.typedsums.TaskSums`;
    one the task cannot call clean is checked, or read again, on its own); the other files'
    sums are appended to one set of columns for the task (no list per file to join).

    The garbage collector waits for the task's end: its passes over the task's decoded
    documents — thousands of dicts and lists, alive until the task's tables are made, freed
    by their counts, none in a cycle — cost 5 % of a worker's CPU (0.02 ms a file)."""
    from netfleet.catalog.memory import collector_paused

    with collector_paused():
        return _read_task(items, opts, follow_links)


def _numpy_kept_out() -> bool:
    """Whether ``import numpy`` is refused in this process (``sys.modules["numpy"]`` is None)."""
    import sys

    return "numpy" in sys.modules and sys.modules["numpy"] is None


def _read_task(items: list[Found], opts: Options, follow_links: bool) -> Task:
    from netfleet.catalog.onepass import read_local
    from netfleet.iperf3json import SUM_COLUMNS
    from netfleet.store.limits import max_raw_bytes

    reads: list[Read] = []
    batch = _Batch()
    sums: dict[str, list[Any]] = {name: [] for name in SUM_COLUMNS}
    spans: dict[int, tuple[int, int]] = {}  # a file's sums: rows start:stop of ``sums``
    later: list[Deferred] = []
    # the task-wide checks need NumPy; the cheatsheet command keeps it out of its own process
    # (netfleet.cli.sheet.numpy_kept_out), where files are checked one by one
    deferred_rows = DEFERRED_ROWS if _numpy_kept_out() else 0
    limit = max_raw_bytes()  # (the environment read once a task, not twice a file)
    for n, item in enumerate(items):
        known = {"size": item.size, "mtime_ns": item.mtime_ns, "inode": item.inode}
        start, waiting = len(sums["run_id"]), len(later)
        if item.etag is not None:
            read = _read_s3(item, opts, sums)
        else:
            defer = later if deferred_rows < DEFERRED_ROWS else None
            read = read_local(item.path, follow_links, opts, known, sums, defer, limit)
        for deferred in later[waiting:]:
            deferred.at = n
            deferred_rows += sum(len(rows) for _, rows, _ in deferred.segments)
        reads.append(read)
        if read.rows is None or read.sums is None:
            for column in sums.values():  # a bad file's (or one cut mid-way): none of them
                del column[start:]
        else:
            spans[n] = (start, len(sums["run_id"]))
    settled = _settle(later, reads, sums, spans)
    from netfleet.catalog.runrow import ColumnRows

    seen: set[str] = set()  # each run's rows once per task
    as_columns: list[ColumnRows] = []  # consecutive runs whose rows are values in column order
    for read in reads:
        if read.rows is not None and read.rows.run_id in seen:
            read.rows = None  # the same run as a file before it: its rows are there
        if read.rows is not None:
            seen.add(read.rows.run_id)
            if isinstance(read.rows, ColumnRows):
                as_columns.append(read.rows)
                continue
            if as_columns:  # (the rows in the files' order)
                _refuse_all(reads, batch.add_columns(as_columns))
                as_columns = []
            _refuse_all(reads, batch.add(read.rows))
    _refuse_all(reads, batch.add_columns(as_columns))
    import pyarrow as pa

    from netfleet.catalog.schemas import SCHEMAS

    tables = {t: pa.Table.from_batches(batch.parts[t], schema=SCHEMAS[t]) for t in TABLES}
    parts = [tables["intervals"]]
    if settled is not None:
        parts += _deferred_table(*settled, reads, sums, spans)
    kept = [(reads[n], a, b) for n, (a, b) in sorted(spans.items()) if reads[n].rows is not None]
    if kept:
        parts.append(_sum_table(sums, kept, reads))
    if len(parts) > 1:
        tables["intervals"] = pa.concat_tables(parts)
    for read in reads:
        read.rows = read.sums = None  # the rows travel as tables
    return reads, tables


def _settle(
    later: list[Deferred],
    reads: list[Read],
    sums: dict[str, list[Any]],
    spans: dict[int, tuple[int, int]],
) -> tuple[TaskSums | None, list[Deferred], list[bool]] | None:
    """The task's deferred files checked at once: a clean one's rows stand (its sums wait for
    :func:`_deferred_table`); one whose checks find nothing on a closer look keeps its rows,
    its sums appended to ``sums``; one flagged, or with a rate no link carries, is read again
    by the per-file path (its rows, flags or reason as ever), its sums appended."""
    from netfleet.catalog.onepass import _typed_flags
    from netfleet.catalog.typedsums import CLEAN, UNSURE, TaskSums, unsure_or_implausible

    waiting = [d for d in later if d.read.rows is not None and reads[d.at] is d.read]
    if not waiting:
        return None
    task: TaskSums | None = None
    try:
        task = TaskSums(waiting)
        verdicts = task.verdicts()
    except Exception:  # what the vectorised checks did not foresee: each file's own checks
        task, verdicts = None, [unsure_or_implausible(d) for d in waiting]
    clean = []
    for deferred, verdict in zip(waiting, verdicts, strict=True):
        clean.append(verdict == CLEAN)
        if verdict == CLEAN:
            continue
        if verdict == UNSURE and not _typed_flags(deferred.typed, deferred.subject):
            _file_sums(deferred, sums, spans)
            continue
        read = reads[deferred.at] = deferred.redo()
        if read.rows is not None and read.sums is not None:
            start = len(sums["run_id"])
            for name, column in sums.items():
                column += read.sums[name]
            spans[deferred.at] = (start, len(sums["run_id"]))
    return task, waiting, clean


def _file_sums(
    deferred: Deferred, sums: dict[str, list[Any]], spans: dict[int, tuple[int, int]]
) -> None:
    """A deferred file's sum rows appended to the task's columns, one file at a time."""
    from netfleet.catalog.typedsums import columns

    start = len(sums["run_id"])
    run_id = str(deferred.read.row["run_id"])
    for ivs, _, side in deferred.segments:
        if side is not None:
            columns(run_id, side, ivs, deferred.reverse, sums)
    spans[deferred.at] = (start, len(sums["run_id"]))


def _deferred_table(
    task: TaskSums | None,
    waiting: list[Deferred],
    clean: list[bool],
    reads: list[Read],
    sums: dict[str, list[Any]],
    spans: dict[int, tuple[int, int]],
) -> list[pa.Table]:
    """The clean deferred files' sum rows, of those still kept (ok, not a run twice), as one
    table; should Arrow refuse a value, each file's rows go to ``sums`` (refused alone)."""
    import pyarrow as pa

    keep = [
        ok and reads[d.at] is d.read and d.read.rows is not None and d.read.row["state"] == "ok"
        for d, ok in zip(waiting, clean, strict=True)
    ]
    if task is None or not any(keep):
        return []
    run_ids = [str(d.read.row.get("run_id")) for d in waiting]
    try:
        return [task.table(keep, [d.reverse for d in waiting], run_ids)]
    except (pa.ArrowException, OverflowError, TypeError, ValueError):
        for deferred, kept in zip(waiting, keep, strict=True):
            if kept:
                _file_sums(deferred, sums, spans)
        return []


def _sum_table(
    sums: dict[str, list[Any]], spans: list[tuple[Read, int, int]], reads: list[Read]
) -> pa.Table:
    """The interval sums of a task's kept files as one table (all of ``sums`` when the kept
    files' rows are all of them, the common case); a file whose values Arrow refuses is
    refused alone (its run's other rows are dropped by the caller with it)."""
    import pyarrow as pa

    from netfleet.catalog.schemas import SCHEMAS

    schema = SCHEMAS["intervals"]
    kept = [(read, start, stop) for read, start, stop in spans if read.row.get("state") == "ok"]
    if sum(stop - start for _, start, stop in kept) < len(sums["run_id"]):
        sums = {n: [v for _, a, b in kept for v in sums[n][a:b]] for n in schema.names}
        at = 0
        kept = [(read, at, at := at + b - a) for read, a, b in kept]
    try:
        return pa.Table.from_pydict({name: sums[name] for name in schema.names}, schema=schema)
    except (pa.ArrowException, OverflowError, TypeError):
        pass
    good = []
    for read, start, stop in kept:
        try:
            cols = {n: sums[n][start:stop] for n in schema.names}
            good.append(pa.Table.from_pydict(cols, schema=schema))
        except (pa.ArrowException, OverflowError, TypeError) as exc:
            _refuse(reads, str(read.row.get("run_id")), f"a value does not fit its column: {exc}")
    return pa.concat_tables([schema.empty_table(), *good])


def _refuse_all(reads: list[Read], rejected: list[tuple[Any, str]]) -> None:
    for rows, why in rejected:
        _refuse(reads, rows.run_id, why)


def _refuse(reads: list[Read], run_id: str, why: str) -> None:
    for read in reads:
        if read.row.get("run_id") == run_id and read.row.get("state") == "ok":
            read.row.update(state="bad", reason=why)


def _read_s3(item: Found, opts: Options, sums: dict[str, list[Any]] | None = None) -> Read:
    """An S3 object read once (GET, at most the byte limit) and :func:`read_file` d."""
    from netfleet.catalog.onepass import Read, read_file
    from netfleet.store.limits import max_raw_bytes

    meta: dict[str, Any] = {"etag": item.etag, "size": item.size}
    limit = max_raw_bytes()
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
        return Read({"source": item.source, "state": "bad", "reason": reason, **meta})
    return read_file(item.source, data, meta, opts, sums=sums)


def reads(todo: list[Found], opts: Options, follow_links: bool, pool: Any) -> Iterator[Landed]:
    """Each task's files, their manifest rows as columns and their tables, in order. With a
    pool, every task is handed out at once (the workers start reading while this process
    does the rest of its work)."""
    tasks = [todo[i : i + TASK_FILES] for i in range(0, len(todo), TASK_FILES)]
    if pool is None or len(todo) < PARALLEL_MIN:
        here = partial(_columnar_task, opts=opts, follow_links=follow_links)
        return (_as_landed(items, *here(items)) for items in tasks)
    run = partial(_shipped_task, opts=opts, follow_links=follow_links)
    shipped = pool.map(run, tasks)
    return (_landed(items, one) for items, one in zip(tasks, shipped, strict=True))


#: the manifest columns a task's reads fill (the importing process adds ``asked``,
#: ``generation``, ``row_id`` and ``kept``)
READ_COLUMNS = tuple(
    name for name, _ in COLUMNS if name not in ("asked", "generation", "row_id", "kept")
)

#: a task as the importing process settles it: its files, their manifest rows as columns
#: (one value per file, in order: no dict per file to loop over) and the rows of its ok files
#: as Arrow tables
Landed = tuple[list[Found], dict[str, list[Any]], dict[str, "pa.Table"]]


def _columnar_task(
    items: list[Found], opts: Options, follow_links: bool
) -> tuple[dict[str, list[Any]], dict[str, pa.Table]]:
    """:func:`read_task` with its reads as manifest columns."""
    reads, tables = read_task(items, opts, follow_links)
    rows = [read.row for read in reads]
    return {name: [row.get(name) for row in rows] for name in READ_COLUMNS}, tables


def _as_landed(
    items: list[Found], columns: dict[str, list[Any]], tables: dict[str, pa.Table]
) -> Landed:
    return items, columns, tables


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


def _shipped_task(items: list[Found], opts: Options, follow_links: bool) -> Shipped:
    """:func:`read_task` in a worker, its tables serialized for the trip back, without their
    columns of nulls only (0.63 of the bytes of 64 seed-002 files' tables: this process reads
    them from the pipe)."""
    import pyarrow as pa

    columns, tables = _columnar_task(items, opts, follow_links)
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


def _landed(items: list[Found], shipped: Shipped) -> Landed:
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
    tables = {name: pa.Table.from_batches(batches[name], schema=SCHEMAS[name]) for name in TABLES}
    return items, columns, tables


#: an array of nulls per type, sliced to each batch's length (made once, not per batch)
_NULLS: dict[Any, Any] = {}


def _nulls(kind: pa.DataType, rows: int) -> pa.Array:
    import pyarrow as pa

    have = _NULLS.get(kind)
    if have is None or len(have) < rows:
        have = _NULLS[kind] = pa.nulls(max(rows, 8192), kind)
    return have.slice(0, rows)


def _warm() -> None:
    """A worker's first task: nothing (its fork server has loaded the readers)."""


@contextmanager
def pool(workers: int, files: int) -> Iterator[Any]:
    """Worker processes (``forkserver``; the readers loaded once, in the fork server, and each
    worker a fork of it), started at once in a thread of their own: starting them waits on the
    fork server's loading (0.3-0.7 s of wall time, 0.03 s of CPU here), while this process
    checks the options, locks the catalog, reads its manifest and loads the writer. None for
    one worker or few files. (Tasks handed out meanwhile wait for the start.)"""
    if workers < 2 or files < PARALLEL_MIN:
        yield None
        return
    import threading

    from netfleet.workers import process_pool

    pool = process_pool(
        workers,
        preload=["netfleet.catalog.readtasks", "netfleet.catalog.onepass",
                 "netfleet.catalog.typedsums", "netfleet.catalog.runrow", "netfleet.iperf3json",
                 "netfleet.store.import_iperf3", "netfleet.store.import_labels",
                 "netfleet.catalog.schemas", "pyarrow.ipc", "isal.isal_zlib"],
    )  # fmt: skip
    start = threading.Thread(target=_start, args=(pool, workers), name="netfleet-workers")
    start.start()
    try:
        yield pool
    finally:
        start.join()
        pool.shutdown(wait=True, cancel_futures=True)


def _start(pool: Any, workers: int) -> None:
    """Start the pool's workers (a task each: the pool starts a worker per task handed out).
    A failure is the tasks' to report: they start the workers again, or raise."""
    try:
        for _ in range(workers):
            pool.submit(_warm)
    except Exception:  # noqa: S110 - raised again by the first task handed out
        pass
