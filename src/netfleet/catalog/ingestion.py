"""Raw results → Parquet catalog: idempotent, streaming, crash-safe.

* Idempotent: a raw file whose run_id is already in ``runs`` is skipped — by its file name
  (``<run_id>.json.gz``) without opening it, else after reading its ``run_id``.
* Streaming: files are read one at a time; rows are flushed as one new batch of parts every
  ``batch_runs`` runs or ``batch_rows`` interval rows, so memory stays bounded.
* Crash-safe: see :mod:`netfleet.catalog.layout` — parts are written under temp names, fsynced,
  renamed with the runs part last (the commit marker); readers only see committed batches.
* A raw file that cannot be read or turned into rows is reported (path and reason) and skipped.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from netfleet.catalog.layout import (
    IDS_DIR,
    TABLES,
    TEMP_PREFIX,
    batch_of,
    check_format,
    committed_batches,
    committed_run_ids,
    ids_name,
    is_s3,
    part_name,
    write_format,
)
from netfleet.catalog.remote import S3Catalog
from netfleet.durable import (
    atomic_write_in,
    checked_dir,
    create_in,
    named,
    open_dir,
    open_in,
    remove_in,
    rename_in,
)
from netfleet.errors import (
    CatalogError,
    EnvironmentProblem,
    InputError,
    StoreError,
    StoreUnreachable,
)
from netfleet.store.root import RawStore, ResultsRoot, as_root

if TYPE_CHECKING:
    from concurrent.futures import Future

    import pyarrow as pa
    from pydantic import ValidationError

    from netfleet.catalog.fastpath import Columnar
    from netfleet.catalog.rows import RunRows
    from netfleet.catalog.runrow import ColumnRows

# pyarrow, pydantic and the row parsers are imported where rows are made: a no-op ingest
# (everything already in the catalog) needs none of them


Progress = Callable[[int, int], None]

RAW_SUFFIX = ".json.gz"


class BadFile(NamedTuple):
    """A raw file that was skipped because it could not be ingested."""

    path: str
    reason: str


@dataclass
class IngestReport:
    """What one ingest did: ``seen = ingested + skipped + len(bad)``."""

    #: the catalog directory, or the ``s3://`` URL of an S3 catalog
    catalog_dir: Path | str
    seen: int = 0
    ingested: int = 0
    skipped: int = 0
    #: the raw files left out, with the reason (path and reason separately)
    bad: list[BadFile] = field(default_factory=list)
    batches: int = 0
    #: runs whose interval rows the columnar (DuckDB) path made
    fast: int = 0
    #: files the columnar path handed to the Python path, with the reason
    fallback: list[BadFile] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TABLES, 0))
    seconds: float = 0.0
    #: results an earlier run or import left in the local upload spool of an S3 root, uploaded
    #: by this ingest before it listed the root
    uploaded: list[str] = field(default_factory=list)

    def summary(self) -> str:
        spool = (
            f"{len(self.uploaded)} waiting in the local upload spool uploaded first; "
            if self.uploaded
            else ""
        )
        return (
            f"{spool}{self.seen} raw files: {self.ingested} ingested, {self.skipped} already in "
            f"the catalog, {len(self.bad)} bad ({self.seconds:.1f} s)"
        )


class _Batch:
    """The runs of one batch. Rows are converted to Arrow a few runs at a time, so memory holds
    compact columns rather than Python rows; a run whose values Arrow refuses is rejected alone.
    """

    #: convert the pending Python rows once this many runs or interval rows are waiting
    PENDING_RUNS = 128
    PENDING_ROWS = 20_000

    def __init__(self) -> None:
        self.parts: dict[str, list[pa.RecordBatch]] = {t: [] for t in TABLES}
        self.pending: list[RunRows] = []
        self.pending_rows = 0
        self.runs = 0
        self.interval_rows = 0
        #: interval rows the fast path made in Arrow already, by run
        self.columnar: dict[str, Columnar] = {}

    def add(self, rows: RunRows, intervals: Columnar | None = None) -> list[tuple[RunRows, str]]:
        """Queue one run (its interval rows as Python rows, or already in Arrow); return the
        runs rejected by a conversion this triggered."""
        count = len(rows.intervals)
        if intervals is not None:
            count = intervals.num_rows
            self.columnar[rows.run_id] = intervals
        self.pending.append(rows)
        self.pending_rows += count
        self.runs += 1
        self.interval_rows += count
        if len(self.pending) >= self.PENDING_RUNS or self.pending_rows >= self.PENDING_ROWS:
            return self.convert()
        return []

    def add_columns(self, runs: list[ColumnRows]) -> list[tuple[RunRows, str]]:
        """Runs whose ``runs`` and ``ends`` rows are values in column order (an import by
        reference's task: :class:`~netfleet.catalog.runrow.ColumnRows`), after the runs
        queued before them: one Arrow batch per table, the columns every such run holds the
        same made once; should Arrow refuse a value, each run is queued as rows (refused
        alone). Returns the runs rejected."""
        rejected = self.convert()
        if not runs:
            return rejected
        try:
            converted = _column_batches(runs)
        except _conversion_errors():
            for run in runs:
                rejected += self.add(run.rows())
            return rejected + self.convert()
        for table, records in converted.items():
            self.parts[table].append(records)
        self.runs += len(runs)
        return rejected

    def convert(self) -> list[tuple[RunRows, str]]:
        pending, self.pending, self.pending_rows = self.pending, [], 0
        try:
            self._append(pending)
            return []
        except _conversion_errors():
            pass
        rejected = []
        for rows in pending:  # find the culprit(s): one run at a time
            try:
                self._append([rows])
            except _conversion_errors() as exc:
                rejected.append((rows, f"a value does not fit its column: {exc}"))
                columnar = self.columnar.pop(rows.run_id, None)
                self.runs -= 1
                self.interval_rows -= len(rows.intervals) if columnar is None else columnar.num_rows
        return rejected

    def _append(self, runs: list[RunRows]) -> None:
        converted = {
            t: _record_batch(t, [r for rows in runs for r in rows.table(t)]) for t in TABLES
        }
        for table, records in converted.items():
            self.parts[table].append(records)

    def tables(self) -> dict[str, list[pa.Table]]:
        """Each table's rows, as the row groups of its part: for ``intervals`` the ``sum`` rows
        (the Python path's, then the fast path's) in a row group ahead of the per-stream rows,
        so a query on sums — the cheat sheet, analysis — skips the per-stream row groups by
        their min/max statistics instead of reading ten times the rows (``-P 10``)."""
        import pyarrow as pa

        from netfleet.catalog.schemas import SCHEMAS

        tables = {t: pa.Table.from_batches(self.parts[t], schema=SCHEMAS[t]) for t in TABLES}
        groups = {t: [rows] for t, rows in tables.items()}
        python_sums, python_streams = _sums_and_streams(tables["intervals"])
        # (no fast-path rows, e.g. an import by reference's: DuckDB is not loaded for them)
        fast_sums, fast_streams = (
            _columnar_groups(self.columnar.values()) if self.columnar else ([], [])
        )
        joined = [
            pa.concat_tables([python_sums, *fast_sums]),
            pa.concat_tables([python_streams, *fast_streams]),
        ]
        groups["intervals"] = [g for g in joined if g.num_rows] or [tables["intervals"]]
        return groups


def _sums_and_streams(rows: pa.Table) -> tuple[pa.Table, pa.Table]:
    """The Python path's interval rows split by ``kind`` (two filters, no sort)."""
    import pyarrow.compute as pc

    is_sum = pc.fill_null(pc.equal(rows.column("kind"), "sum"), False)
    return rows.filter(is_sum), rows.filter(pc.invert(is_sum))


def _columnar_groups(runs: Iterable[Columnar]) -> tuple[list[pa.Table], list[pa.Table]]:
    """The fast path's rows of a batch's runs, as slices of their chunks' tables — consecutive
    runs of a chunk are adjacent in each region, so one slice per chunk and region, not one per
    run — split into sums and streams (:data:`~netfleet.catalog.fastpath.SUM_REGIONS`)."""
    from netfleet.catalog.fastpath import REGIONS, SUM_REGIONS

    merged: dict[int, list[tuple[pa.Table, int, int]]] = {r: [] for r in REGIONS}
    for run in runs:
        for span in run.spans:
            same = merged[span.region]
            if same and same[-1][0] is run.table and sum(same[-1][1:]) == span.offset:
                table, offset, length = same[-1]
                same[-1] = (table, offset, length + span.length)
            else:
                same.append((run.table, span.offset, span.length))
    sums: list[pa.Table] = []
    streams: list[pa.Table] = []
    for region, spans in merged.items():
        into = sums if region in SUM_REGIONS else streams
        into += [table.slice(offset, length) for table, offset, length in spans]
    return sums, streams


def _conversion_errors() -> tuple[type[Exception], ...]:
    import pyarrow as pa

    return (pa.ArrowException, OverflowError, TypeError)


def _record_batch(table: str, rows: list[dict[str, Any]]) -> pa.RecordBatch:
    import pyarrow as pa

    from netfleet.catalog.schemas import SCHEMAS

    schema = SCHEMAS[table]
    if not rows:  # made once: an empty batch costs 0.03-0.2 ms (an array per column)
        made, empty = _EMPTY_BATCHES.get(table, (None, None))
        if made is not schema or empty is None:
            empty = pa.RecordBatch.from_pylist([], schema=schema)
            _EMPTY_BATCHES[table] = (schema, empty)
        return empty
    columns = {name: [row.get(name) for row in rows] for name in schema.names}
    return pa.RecordBatch.from_pydict(columns, schema=schema)


def _column_batches(runs: list[ColumnRows]) -> dict[str, pa.RecordBatch]:
    """The ``runs`` and ``ends`` batches of :meth:`_Batch.add_columns`' runs."""
    import pyarrow as pa

    from netfleet.catalog.runrow import IMPORTED_FILLED, IMPORTED_SAME
    from netfleet.catalog.schemas import SCHEMAS
    from netfleet.iperf3json import END_COLUMNS

    count = len(runs)
    run_columns: dict[str, Any] = {name: [value] * count for name, value in IMPORTED_SAME.items()}
    run_columns.update(
        zip(IMPORTED_FILLED, zip(*(run.run for run in runs), strict=True), strict=True)
    )
    ends = [end for run in runs for end in run.ends]
    end_columns = dict(zip(END_COLUMNS, zip(*ends, strict=True), strict=True)) if ends else {}
    return {
        "runs": pa.RecordBatch.from_pydict(run_columns, schema=SCHEMAS["runs"]),
        "ends": pa.RecordBatch.from_pydict(end_columns, schema=SCHEMAS["ends"])
        if ends
        else _record_batch("ends", []),
    }


#: each table's empty batch (a RecordBatch is immutable: one serves every batch)
_EMPTY_BATCHES: dict[str, tuple[pa.Schema, pa.RecordBatch]] = {}


def _publish(temp: Path, final: Path, dfd: int) -> None:
    """Make one written part visible: renamed inside its table directory's descriptor (a
    separate function so tests can simulate a crash)."""
    rename_in(dfd, temp.name, final.name)


def _write_batch(
    catalog_dir: Path, batch: _Batch, remote: S3Catalog | None = None
) -> dict[str, int]:
    """Write one batch as a part per table; return rows written per table. With ``remote``,
    ``catalog_dir`` is the local staging directory and each part is uploaded instead of
    renamed (runs last, as on disk). Each table directory (and ``_run_ids``) is opened once,
    without following a link, and held: every part is created, renamed and cleaned up through
    its descriptor, so a directory swapped for a link meanwhile is never written through."""
    batch_id = f"{datetime.now(UTC):%Y%m%dT%H%M%S%f}-{uuid.uuid4().hex[:8]}"
    name = part_name(batch_id)
    tables = batch.tables()
    counts = {t: sum(group.num_rows for group in tables[t]) for t in TABLES}
    temps: dict[str, Path] = {}
    dirs: dict[str, int] = {}
    try:
        for table in (*TABLES, IDS_DIR):
            dirs[table] = open_dir(catalog_dir, table)
        for table in TABLES:  # write everything first ...
            temps[table] = temp = catalog_dir / table / f"{TEMP_PREFIX}{name}"
            fd = create_in(dirs[table], temp.name)
            try:
                with os.fdopen(fd, "wb") as fh:
                    _write_part(fh, table, tables[table])
                    fh.flush()
                    os.fsync(fh.fileno())
            except OSError as exc:  # a full disk: say which file system (the part's path)
                raise named(exc, temp) from exc
        for table in TABLES:  # ... then publish, runs last: it commits the batch
            if remote is not None:
                _upload(remote, temps[table], f"{table}/{name}")
                continue
            if table == "runs":  # the batch's run_ids, for the next ingest's skip list
                text = _ids_text(tables["runs"])
                atomic_write_in(dirs[IDS_DIR], ids_name(batch_id), text, prefix=TEMP_PREFIX)
            _publish(temps[table], catalog_dir / table / name, dirs[table])
            os.fsync(dirs[table])
    finally:
        for table, temp in temps.items():
            remove_in(dirs[table], temp.name)
        for dfd in dirs.values():
            os.close(dfd)
    return counts


def _ids_text(runs: list[pa.Table]) -> bytes:
    """The ids file of a batch's ``runs``: each run_id as JSON, a line each (by the C string
    encoder ``json.dumps`` calls, mapped over the column: a call per id was 0.04 s of 10,000)."""
    columns = [group.column("run_id") for group in runs]
    ids = [i for column in columns for i in column.to_pylist()]
    if any(column.null_count for column in columns):  # (never: a run has its id)
        return "".join(json.dumps(i) + "\n" for i in ids).encode()
    return "".join(line + "\n" for line in map(json.encoder.encode_basestring_ascii, ids)).encode()


def _write_part(fh: Any, table: str, groups: list[pa.Table]) -> None:
    """One table's part of a batch, as Parquet (zstd), one row group per group. Only text
    columns are dictionary-encoded: numbers (rates, bytes, times) are nearly all distinct, and
    trying them cost a third of the writer's time for a larger file. Every column keeps
    Parquet's version-1 encodings: the parts are what Athena, Trino and Spark read in place
    (``netfleet export``), and ``DELTA_BINARY_PACKED`` integers — 0.026 s less for 600,000
    interval rows, 14 % smaller — are refused by Spark's vectorized reader before 3.3 and by
    Athena engine 2."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from netfleet.catalog.schemas import SCHEMAS

    schema = SCHEMAS[table]
    text = [f.name for f in schema if pa.types.is_string(f.type)]
    with pq.ParquetWriter(fh, schema, compression="zstd", use_dictionary=text) as writer:
        for group in groups:
            writer.write_table(group)


def _upload(remote: S3Catalog, temp: Path, rel: str) -> None:
    """Make one written part visible on S3 (a separate function so tests can cut it)."""
    remote.put(rel, temp.read_bytes())


def _sweep(catalog_dir: Path) -> None:
    """Delete temp files and the parts of batches that never committed (a crashed ingest),
    through each table directory's descriptor (:func:`netfleet.durable.open_dir`: never in a
    directory a link leads to)."""
    committed = set(committed_batches(catalog_dir))
    for table in (*TABLES, IDS_DIR):
        dfd = open_dir(catalog_dir, table)
        try:
            for name in os.listdir(dfd):
                if name.startswith(TEMP_PREFIX) or (
                    name.startswith("part-") and batch_of(Path(name)) not in committed
                ):
                    remove_in(dfd, name)
        finally:
            os.close(dfd)


@contextmanager
def _prepared(
    catalog_dir: str | os.PathLike[str], remote: S3Catalog | None
) -> Iterator[tuple[Path, set[str]]]:
    """Lock the catalog, check and sweep it; yield where parts are written (the catalog itself,
    or a local staging directory for an S3 catalog) and the run_ids already in it."""
    local = Path(catalog_dir) if remote is None else remote.state_dir()
    try:
        for table in (*TABLES, IDS_DIR):
            checked_dir(local, table)
    except OSError as exc:
        raise CatalogError(f"cannot create the catalog at {local}: {exc}") from exc
    with _locked(local):
        if remote is None:
            check_format(local)
            write_format(local)
            _sweep(local)
            yield local, committed_run_ids(local)
            return
        _sweep(local)  # staging leftovers of a killed ingest
        remote.check_format()
        remote.write_format()
        remote.sweep()
        yield local, remote.ingested_ids()


@contextmanager
def _locked(catalog_dir: Path) -> Iterator[None]:
    fd = open_in(catalog_dir, ".lock", os.O_RDWR | os.O_CREAT, 0o644)  # never truncated
    with os.fdopen(fd, "r+b") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise EnvironmentProblem(
                f"{catalog_dir}: another ingest is running",
                hint="wait for it to finish, then run netfleet ingest again",
            ) from exc
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _validation_reason(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "envelope"
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"not a valid netfleet envelope: {where}: {first['msg']}{more}"


def read_rows(path: Any, read: Callable[[Any], dict[str, Any]] = ResultsRoot.read) -> RunRows:
    """Read one raw file and turn it into rows; raise :class:`CatalogError` whose message is
    the reason (without the path)."""
    from pydantic import ValidationError

    from netfleet.catalog.rows import RowError, envelope_rows
    from netfleet.store.envelope import Envelope

    try:
        doc = read(path)
        Envelope.model_validate(doc)
        return envelope_rows(doc, source=str(path))
    except StoreUnreachable:
        raise  # the store is down or refuses us: no file is to blame, the ingest stops (exit 4)
    except StoreError as exc:
        raise CatalogError(exc.message.removeprefix(f"{path}: ")) from exc
    except UnicodeDecodeError as exc:  # not caught by ResultsRoot.read
        raise CatalogError(f"unreadable raw result (not UTF-8 JSON: {exc})") from exc
    except ValidationError as exc:
        raise CatalogError(_validation_reason(exc)) from exc
    except RowError as exc:
        raise CatalogError(str(exc)) from exc


def ingest(
    results_root: RawStore | str | os.PathLike[str],
    catalog_dir: str | os.PathLike[str],
    progress: Progress | None = None,
    *,
    batch_runs: int = 500,
    batch_rows: int = 100_000,
    fast: bool = True,
) -> IngestReport:
    """Add every raw result not yet in the catalog. Safe to re-run; safe to interrupt.

    ``fast`` reads local iperf3 envelopes through DuckDB (:mod:`netfleet.catalog.fastpath`);
    ``fast=False`` sends every file through the Python reference path."""
    if batch_runs < 1 or batch_rows < 1:
        raise ValueError("batch_runs and batch_rows must be positive")
    root = as_root(results_root)
    if isinstance(root, ResultsRoot) and not root.path.is_dir():
        # nothing to ingest is an error, not "0 raw files": and no catalog is created for it
        raise InputError(
            f"results root {root.path} is not a directory",
            hint="give the directory `netfleet run` wrote to (-r/--results, or NETFLEET_RESULTS)",
        )
    remote = S3Catalog.parse(str(catalog_dir)) if is_s3(str(catalog_dir)) else None
    report = IngestReport(Path(catalog_dir) if remote is None else remote.url)
    started = time.monotonic()
    # results a failed upload left spooled locally (an S3 root) belong in the catalog too
    report.uploaded = root.flush_pending()
    with _prepared(catalog_dir, remote) as (catalog, known):
        if isinstance(root, ResultsRoot):
            # runs already in the catalog are counted by name: a no-op ingest makes no Path
            entries = local_entries(root.path)
            total = len(entries)
            files = [root.path / d / c / n for d, c, n in entries if _stem(n) not in known]
            report.seen = report.skipped = total - len(files)
        else:
            files = list(root.files())
            total = len(files)
        if progress:
            progress(report.seen, total)
        batch = _Batch()
        con = _fast_connection(root) if fast else None
        for chunk, cached in _prefetched(con, _chunks(files, known, batch_runs), known, report):
            for path in chunk:
                report.seen += 1
                if _stem(path.name) in known:
                    report.skipped += 1
                else:
                    columnar = None
                    try:
                        if path in cached:
                            rows, columnar = cached.pop(path)
                        else:
                            rows = read_rows(path, root.read)
                    except CatalogError as exc:
                        report.bad.append(BadFile(str(path), exc.message))
                    else:
                        if rows.run_id in known:
                            report.skipped += 1
                        else:
                            known.add(rows.run_id)
                            report.ingested += 1
                            if columnar is not None:
                                report.fast += 1
                            _reject(report, known, batch.add(rows, columnar))
                if batch.runs >= batch_runs or batch.interval_rows >= batch_rows:
                    _flush(catalog, batch, report, known, remote)
                    batch = _Batch()
                if progress:
                    progress(report.seen, total)
        if batch.runs or batch.pending:
            _flush(catalog, batch, report, known, remote)
    report.seconds = time.monotonic() - started
    return report


#: files per DuckDB read (bounded also by their compressed size)
FAST_CHUNK_FILES = 200
FAST_CHUNK_BYTES = 16 * 1024 * 1024


def _chunks(files: list[Any], known: set[str], batch_runs: int) -> Iterator[list[Any]]:
    """Consecutive files, cut so one chunk's new files stay within the read bounds."""
    chunk: list[Any] = []
    new = size = 0
    for path in files:
        chunk.append(path)
        if _stem(path.name) not in known:
            new += 1
            size += _size(path)
        if new >= min(FAST_CHUNK_FILES, max(batch_runs, 64)) or size >= FAST_CHUNK_BYTES:
            yield chunk
            chunk, new, size = [], 0, 0
    if chunk:
        yield chunk


def _size(path: Any) -> int:
    try:
        return os.lstat(path).st_size if isinstance(path, Path) else 0
    except OSError:
        return 0


def local_entries(top: Path) -> list[tuple[str, str, str]]:
    """``(d=…, campaign=…, file name)`` of ``ResultsRoot.files()`` — ``d=*/campaign=*/*.json.gz``,
    in the same order — by scandir and a sort on name tuples (10,000 Path objects and their
    comparisons cost a no-op ingest 0.3 s)."""
    found: list[tuple[str, str, str]] = []
    for day in _entries(top, "d="):
        for campaign in _entries(top / day, "campaign="):
            folder = top / day / campaign
            with os.scandir(folder) as it:
                found += [(day, campaign, e.name) for e in it if e.name.endswith(RAW_SUFFIX)]
    return sorted(found)


def local_files(top: Path) -> list[Path]:
    """``ResultsRoot.files()``, from :func:`local_entries`."""
    return [top / d / c / n for d, c, n in local_entries(top)]


def _stem(name: str) -> str:
    return name.removesuffix(RAW_SUFFIX)


def _entries(folder: Path, prefix: str) -> list[str]:
    """Names of the directories (links followed, as Path.glob does) under ``folder``."""
    try:
        with os.scandir(folder) as it:
            return [e.name for e in it if e.name.startswith(prefix) and e.is_dir()]
    except OSError:
        return []


class _Connection:
    """The columnar path's DuckDB connections, one per reader thread (each single-threaded:
    two queries side by side keep both cores busier than one query on two threads), opened
    when a chunk first has new files (a no-op ingest imports neither DuckDB nor pyarrow); with
    ``s3``, httpfs reads the raw objects."""

    def __init__(self, s3: bool = False) -> None:
        import threading

        self._local = threading.local()
        self._s3 = s3

    def get(self) -> Any:
        con = getattr(self._local, "con", None)
        if con is None:
            from netfleet.catalog.fastpath import connection

            con = connection(threads=1)
            if self._s3:
                from netfleet.catalog.httpfs import enable_s3

                enable_s3(con)
            self._local.con = con
        return con


def _readers() -> int:
    """Chunks read side by side, each by its own single-threaded DuckDB connection."""
    return max(1, min(os.cpu_count() or 1, 4))


def _fast_connection(root: RawStore) -> _Connection | None:
    """A local root's files are read by DuckDB from disk, an S3 root's through httpfs."""
    from netfleet.store.s3 import S3Root

    if isinstance(root, ResultsRoot):
        return _Connection()
    return _Connection(s3=True) if isinstance(root, S3Root) else None


def _prefetched(
    con: _Connection | None, chunks: Iterator[list[Any]], known: set[str], report: IngestReport
) -> Iterator[tuple[list[Any], dict[Any, tuple[RunRows, Columnar]]]]:
    """Each chunk with its columnar rows, in order. :func:`_readers` threads read the next
    chunks through DuckDB while the caller writes this one's Parquet parts (DuckDB and the
    Parquet writer release the GIL); at most that many chunks wait, read, beside the caller's."""
    if con is None:
        yield from ((chunk, {}) for chunk in chunks)
        return
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor

    readers = _readers()
    pool = ThreadPoolExecutor(readers, thread_name_prefix="netfleet-ingest")
    ahead: deque[tuple[list[Any], Future[_Read]]] = deque()
    try:
        for chunk in chunks:
            ahead.append((chunk, pool.submit(_fast_chunk, con, chunk, set(known))))
            if len(ahead) > readers:
                yield _taken(ahead.popleft(), report)
        while ahead:
            yield _taken(ahead.popleft(), report)
    finally:  # an error or Ctrl-C: the chunks not started yet are not read
        pool.shutdown(wait=True, cancel_futures=True)


class _Read(NamedTuple):
    """What a reader made of a chunk: rows by path, and the files left to the Python path."""

    cached: dict[Any, tuple[RunRows, Columnar]]
    fallback: list[BadFile]


def _taken(
    item: tuple[list[Any], Future[_Read]], report: IngestReport
) -> tuple[list[Any], dict[Any, tuple[RunRows, Columnar]]]:
    chunk, future = item
    read = future.result()
    report.fallback.extend(read.fallback)  # in chunk order, whichever reader finished first
    return chunk, read.cached


def _fast_chunk(con: _Connection, chunk: list[Any], known: set[str]) -> _Read:
    """Rows of the chunk's new files that the columnar path made, by path."""
    new = [p for p in chunk if _stem(p.name) not in known]
    if not new:
        return _Read({}, [])
    from netfleet.catalog.fastpath import fast_rows

    made = fast_rows(con.get(), new)
    return _Read(
        {new[n]: (run.rows, made.columnar(run)) for n, run in made.runs.items()},
        [BadFile(str(new[n]), why) for n, why in sorted(made.fallback.items())],
    )


def _reject(report: IngestReport, known: set[str], rejected: list[tuple[RunRows, str]]) -> None:
    for rows, reason in rejected:
        report.ingested -= 1
        known.discard(rows.run_id)
        report.bad.append(BadFile(str(rows.run["source"]), reason))


def _flush(
    catalog: Path, batch: _Batch, report: IngestReport, known: set[str], remote: S3Catalog | None
) -> None:
    _reject(report, known, batch.convert())
    if not batch.runs:
        return
    written = _write_batch(catalog, batch, remote)
    report.batches += 1
    for table, count in written.items():
        report.rows[table] += count
