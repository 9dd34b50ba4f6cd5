"""The one batch writer of the catalog's load loop, and its one commit (both entry points,
``ingest`` and ``register``, write through it).

* Rows are converted to Arrow a few runs at a time (:class:`Batch`), so memory holds compact
  columns rather than Python rows; a run whose values Arrow refuses is rejected alone.
* A worker task's rows arrive as Arrow tables; :class:`Writer` keeps, of each task, the runs
  its entry point kept (a run already in the catalog, or read twice, is not) and writes them
  a batch at a time.
* Crash-safe (:mod:`netfleet.catalog.layout`): each batch is one part per table, written under
  a temp name, fsynced, renamed with the ``runs`` part last — the commit marker; readers only
  see committed batches, and the next load sweeps what a crash left (:func:`prepared`).
"""

from __future__ import annotations

import fcntl
import json
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from netfleet.catalog.layout import (
    IDS_DIR,
    TABLES,
    TEMP_PREFIX,
    batch_of,
    check_format,
    committed_batches,
    committed_run_ids,
    ids_name,
    part_name,
    write_format,
)
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
from netfleet.errors import CatalogError, EnvironmentProblem

if TYPE_CHECKING:
    import pyarrow as pa

    from netfleet.catalog.build import RunRows
    from netfleet.catalog.remote import S3Catalog

# pyarrow is imported where rows are written: a no-op load needs none of it


class Batch:
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

    def add(self, rows: RunRows) -> list[tuple[RunRows, str]]:
        """Queue one run; return the runs rejected by a conversion this triggered."""
        self.pending.append(rows)
        self.pending_rows += len(rows.intervals)
        self.runs += 1
        if len(self.pending) >= self.PENDING_RUNS or self.pending_rows >= self.PENDING_ROWS:
            return self.convert()
        return []

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
                self.runs -= 1
        return rejected

    def _append(self, runs: list[RunRows]) -> None:
        converted = {
            t: _interval_batch(runs)
            if t == "intervals"
            else _record_batch(t, [r for rows in runs for r in rows.table(t)])
            for t in TABLES
        }
        for table, records in converted.items():
            self.parts[table].append(records)

    def as_tables(self) -> dict[str, pa.Table]:
        """Each table's rows as one Arrow table."""
        import pyarrow as pa

        from netfleet.catalog.schemas import SCHEMAS

        return {t: pa.Table.from_batches(self.parts[t], schema=SCHEMAS[t]) for t in TABLES}

    def tables(self) -> dict[str, list[pa.Table]]:
        """Each table's rows, as the row groups of its part: for ``intervals`` the ``sum`` rows
        in a row group ahead of the per-stream rows (none when every row is a sum: an import by
        reference's), so a query on sums — the cheat sheet, analysis — skips the per-stream row
        groups by their min/max statistics instead of reading ten times the rows (``-P 10``)."""
        import pyarrow.compute as pc

        tables = self.as_tables()
        groups = {t: [rows] for t, rows in tables.items()}
        intervals = tables["intervals"]
        is_sum = pc.fill_null(pc.equal(intervals.column("kind"), "sum"), False)
        streams = intervals.filter(pc.invert(is_sum))
        if streams.num_rows:
            groups["intervals"] = [intervals.filter(is_sum), streams]
        return groups


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
    try:  # every row has every column (the builders' rows): a C-level pass per column
        columns = {name: list(map(itemgetter(name), rows)) for name in schema.names}
    except KeyError:
        columns = {name: [row.get(name) for row in rows] for name in schema.names}
    return pa.RecordBatch.from_pydict(columns, schema=schema)


def _interval_batch(runs: list[RunRows]) -> pa.RecordBatch:
    """The runs' ``intervals`` columns, one after the other, as one record batch: a text
    column by :func:`_texts` (its value once per run where every row of the run holds it)."""
    import pyarrow as pa

    from netfleet.catalog.schemas import SCHEMAS

    schema = SCHEMAS["intervals"]
    parts = [rows.intervals for rows in runs if len(rows.intervals)]
    if not parts:
        return _record_batch("intervals", [])
    held, size = set().union(*(c.lists for c in parts)), sum(map(len, parts))
    columns: dict[str, Any] = {}
    for f in schema:  # a column no run holds is made nulls at once
        lists = [c.column(f.name) for c in parts] if f.name in held else []
        columns[f.name] = (pa.nulls(size, f.type) if not lists else _texts(lists)
                           if f.type == pa.string() else _joined(lists))  # fmt: skip
    return pa.RecordBatch.from_pydict(columns, schema=schema)


def _joined(lists: list[list[Any]]) -> list[Any]:
    out: list[Any] = []
    for values in lists:
        out += values  # (a list's extend by a list: at once, not an item at a time)
    return out


def _texts(lists: list[list[Any]]) -> pa.Array:
    """A text column of the runs' lists: each run's one value (run_id, side, role …) converted
    once where every row of the run holds it, then repeated by a take, not a conversion per
    row (Arrow's conversion refuses a value that is not text, as before)."""
    import numpy as np
    import pyarrow as pa

    values: list[Any] = []
    counts: list[int] = []
    for run in lists:  # (count: a C pass over the run's one value)
        same = run.count(run[0]) == len(run)
        values += run[:1] if same else run
        counts += [len(run)] if same else [1] * len(run)
    return pa.array(values, pa.string()).take(np.repeat(np.arange(len(values)), counts))


#: each table's empty batch (a RecordBatch is immutable: one serves every batch)
_EMPTY_BATCHES: dict[str, tuple[pa.Schema, pa.RecordBatch]] = {}


def _publish(temp: Path, final: Path, dfd: int) -> None:
    """Make one written part visible: renamed inside its table directory's descriptor (a
    separate function so tests can simulate a crash)."""
    rename_in(dfd, temp.name, final.name)


def write_batch(catalog_dir: Path, batch: Batch, remote: S3Catalog | None = None) -> dict[str, int]:
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


def sweep(catalog_dir: Path) -> None:
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
def prepared(
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
    with locked(local, wait=False) as held:
        if not held:
            raise EnvironmentProblem(
                f"{local}: another ingest is running",
                hint="wait for it to finish, then run netfleet ingest again",
            )
        if remote is None:
            check_format(local)
            write_format(local)
            sweep(local)
            yield local, committed_run_ids(local)
            return
        sweep(local)  # staging leftovers of a killed ingest
        remote.check_format()
        remote.write_format()
        remote.sweep()
        yield local, remote.ingested_ids()


@contextmanager
def locked(folder: Path, wait: bool = True) -> Iterator[bool]:
    """The folder's lock (``.lock``, never followed, never truncated); yields False when
    ``wait`` is off and another process holds it."""
    fd = open_in(folder, ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    with os.fdopen(fd, "r+b") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


class Writer:
    """The rows read, committed to the catalog a batch at a time: of each task's tables, the
    runs kept from that task (a run is in a task's tables once; a file repeating a run of an
    earlier task or of the catalog is not kept)."""

    def __init__(self, catalog: Path, known: set[str], remote: S3Catalog | None = None) -> None:
        self.catalog = catalog
        self.known = known
        self.remote = remote
        self.first: dict[str, str] = {}
        #: per task taken: its tables and the runs kept from them
        self.waiting: list[tuple[dict[str, pa.Table], set[str]]] = []
        self.runs = 0
        #: interval rows of the tasks taken (kept or not: a bound on the batch's memory)
        self.rows = 0

    def take(self, tables: dict[str, pa.Table]) -> None:
        """A task's tables: the files :meth:`keep` names next are that task's."""
        self.waiting.append((tables, set()))
        self.rows += tables["intervals"].num_rows

    def keep(self, run_id: str) -> None:
        self.waiting[-1][1].add(run_id)
        self.runs += 1

    def keep_all(self, runs: list[str]) -> None:
        """Every run of the task taken last (distinct, none kept before)."""
        self.waiting[-1][1].update(runs)
        self.runs += len(runs)

    def commit(self, report: Any) -> None:
        """:meth:`flush`, counted in ``report`` (its ``batches``, and its ``rows`` per table),
        and the batch's memory handed back (:func:`netfleet.catalog.memory.give_back`)."""
        from netfleet.catalog.memory import give_back

        written = self.flush()
        if written:
            report.batches += 1
            for table, count in written.items():
                report.rows[table] = report.rows.get(table, 0) + count
        give_back()

    def flush(self) -> dict[str, int]:
        """Commit the runs kept so far as one batch; return the rows written per table (none:
        nothing kept)."""
        import pyarrow as pa

        kept = [(tables, runs) for tables, runs in self.waiting if runs]
        self.waiting, self.runs, self.rows = [], 0, 0
        if not kept:
            return {}
        batch = Batch()
        for tables, runs in kept:
            whole = len(runs) == tables["runs"].num_rows  # every run of the task: no filter
            wanted = None if whole else pa.array(sorted(runs), pa.string())
            for table, rows in tables.items():
                if wanted is not None and rows.num_rows:
                    import pyarrow.compute as pc

                    rows = rows.filter(pc.is_in(rows.column("run_id"), value_set=wanted))
                batch.parts[table].extend(rows.to_batches())
            batch.runs += len(runs)
            self.known.update(runs)
        return write_batch(self.catalog, batch, self.remote)
