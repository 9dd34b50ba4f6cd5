"""``netfleet import --catalog``: register files by reference (issue 26).

The files stay where they are (local paths, or ``s3://`` objects); each is read once — hashed,
inflated, decoded selectively (:mod:`netfleet.catalog.onepass`) in one worker process per CPU
— and its run's ``runs``, ``ends`` and interval-sum rows go straight into the catalog as one
batch of parts (:mod:`netfleet.catalog.layout`), its manifest row into
``CATALOG/manifest.parquet`` (:mod:`netfleet.catalog.manifest`). No envelope is written.

Importing again decides by stat, as git's index does: a file whose size, mtime_ns and inode
(S3: size and ETag) are those of its manifest row is not opened. A file whose stat changed is
read again: the same bytes (touched) only refresh the row; other bytes are a new run, and the
old run's rows retire from the catalog (its manifest row says ``retired``). A file the
manifest has under one of the sources given that is gone is marked ``missing`` (its runs stay:
they were verified when read). A file that cannot be read is recorded with its reason
(``bad``) and never stops the others. Every import that changes anything writes the manifest
with the next generation; the cheat sheet's cache is keyed by it.

Crash safety: rows are committed batch by batch (runs part last), then old runs are retired
(their batches rewritten without them, through a journal, :func:`_retire`), then the manifest
is replaced. A crash before the manifest leaves rows the manifest does not know: the next
import reads those files again, finds their runs in the catalog and records them.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from netfleet.catalog.ingestion import _Batch, _prepared, _write_batch
from netfleet.catalog.layout import IDS_DIR, TABLES, TEMP_PREFIX, committed_batches, ids_name
from netfleet.catalog.layout import part_name as _part_name
from netfleet.catalog.manifest import current_generation, read_index, read_manifest, rows_table
from netfleet.catalog.manifest import write_manifest as _write_manifest
from netfleet.durable import atomic_write
from netfleet.errors import InputError, StoreError

if TYPE_CHECKING:
    import pyarrow as pa

    from netfleet.catalog.onepass import Options, Read

# the readers (msgspec, isal, the import's builders, pyarrow) are imported where files are
# read: a no-op import lists, stats and compares with the manifest's index only

Progress = Callable[[int, int], None]

#: files to read at which reading spreads over worker processes: below, reading them here
#: (≈ 0.5 ms a seed-002 file) costs less than starting the workers (≈ 0.7 s, loading the
#: readers, partly hidden behind this process's own start)
PARALLEL_MIN = 512
#: files per task handed to a worker (their rows come back as Arrow tables)
TASK_FILES = 64
#: runs per batch of catalog parts
BATCH_RUNS = 20_000


@dataclass
class RegisterReport:
    """What one import by reference did."""

    catalog_dir: Path
    #: files read and registered (ok) this time
    registered: list[str] = field(default_factory=list)
    #: files whose stat matched the manifest: not opened
    unchanged: int = 0
    #: files whose bytes changed since the manifest's row: a new run, the old one retired
    changed: list[str] = field(default_factory=list)
    #: files whose stat changed but not their bytes (touched): the row refreshed
    touched: list[str] = field(default_factory=list)
    #: files the manifest had under these sources that are gone
    missing: list[str] = field(default_factory=list)
    #: (file, reason) of the files refused
    bad: list[tuple[str, str]] = field(default_factory=list)
    #: (file, number of interval values that do not add up)
    flagged: list[tuple[str, int]] = field(default_factory=list)
    #: (file, the file of this import it repeats): same bytes, campaign and labels, one run
    duplicates: list[tuple[str, str]] = field(default_factory=list)
    #: (file, run id): its run was in the catalog already
    already: list[tuple[str, str]] = field(default_factory=list)
    #: runs whose rows left the catalog (their file changed)
    retired: list[str] = field(default_factory=list)
    #: the manifest's generation after this import
    generation: int = 0
    seconds: float = 0.0


@dataclass(frozen=True)
class _Found:
    """A source file found by listing: where, its stat (local) or listing (S3)."""

    source: str
    path: str
    size: int | None
    mtime_ns: int | None = None
    inode: int | None = None
    etag: str | None = None


def register(
    sources: Iterable[str],
    catalog_dir: str | os.PathLike[str],
    *,
    campaign: str = "imported",
    labels: Iterable[str] = (),
    pattern: str | None = None,
    side: str = "auto",
    workers: int = 1,
    follow_links: bool = False,
    keep_copy: str | None = None,
    progress: Progress | None = None,
) -> RegisterReport:
    """Register every source file in ``catalog_dir``'s manifest and its rows in the catalog
    (see the module's text). ``keep_copy``: a folder (or ``s3://`` prefix) where each newly
    read file is kept as it is (hardlink or reflink when possible, else a copy; S3 to S3 a
    server-side copy), named by its SHA-256."""
    from netfleet.store.sources import SIDES, split_labels

    if side not in SIDES:
        raise InputError(f"--side {side!r}: expected one of {', '.join(SIDES)}")
    if str(catalog_dir).startswith("s3://"):
        raise InputError(
            "import by reference keeps its manifest in a local catalog",
            hint="give --catalog a local folder (the sources may be s3:// URLs)",
        )
    asked_labels = split_labels(labels)
    asked = json.dumps({"labels": asked_labels, "pattern": pattern, "side": side}, sort_keys=True)
    started = time.monotonic()
    sources = list(sources)
    found = list(_listed(sources, follow_links))
    catalog = Path(catalog_dir)
    report = RegisterReport(catalog)
    # nothing changed (every file's stat is its row's, none gone): decided from the manifest's
    # index alone — no lock taken, no reader loaded (rows only exist for options once checked)
    index = read_index(catalog)
    todo = found
    if index is not None:
        todo, gone = _work(found, sources, _active(index["rows"], campaign, asked))
        if not todo and not gone:
            report.unchanged = len(found)
            report.generation = int(index["generation"])
            report.seconds = time.monotonic() - started
            return report
    with _pool(workers, len(todo)) as pool:
        return _register(
            found, sources, catalog, asked, report, started, pool, keep_copy, progress,
            _options(campaign, labels, pattern, side), follow_links,
        )  # fmt: skip


def _register(
    found: list[_Found],
    sources: list[str],
    catalog: Path,
    asked: str,
    report: RegisterReport,
    started: float,
    pool: Any,
    keep_copy: str | None,
    progress: Progress | None,
    opts: Options,
    follow_links: bool,
) -> RegisterReport:
    """:func:`register`'s work once something is to be read or marked."""
    with _prepared(catalog, None) as (local, known):
        finish_retire(local)
        index = read_index(local)
        rows = index["rows"] if index is not None else read_manifest(local).to_pylist()
        todo, gone = _work(found, sources, _active(rows, opts.campaign, asked))
        report.unchanged = len(found) - len(todo)
        if not todo and not gone:
            report.generation = current_generation(local)
            report.seconds = time.monotonic() - started
            return report
        state = _State.load(local, opts.campaign, asked)
        generation = state.generation + 1
        writer = _Writer(local, known)
        reads = _reads(todo, opts, follow_links, pool)
        for done, (item, read, tables) in enumerate(reads, start=1):
            if tables is not None and writer.runs >= BATCH_RUNS:  # between two tasks' rows
                writer.flush()
            _settle(item, read, tables, state, writer, report, keep_copy)
            if progress is not None:
                progress(report.unchanged + done, len(found))
        writer.flush()
        for row in state.gone(sources, {f.source for f in found}):
            state.mark(row, state="missing", reason="gone from its source")
            report.missing.append(row["source"])
        report.retired = _retire(local, state.retiring())
        if state.changed:
            _write_manifest(local, rows_table(state.rows()), generation)
            report.generation = generation
        else:
            report.generation = state.generation
    report.seconds = time.monotonic() - started
    return report


def _options(campaign: str, labels: Iterable[str], pattern: str | None, side: str) -> Options:
    """The import's options, checked as a spec's are (labels, campaign, the pattern's names)."""
    from netfleet.catalog.onepass import Options
    from netfleet.store.sources import check_campaign, parse_labels, pattern_regex

    return Options(
        campaign=check_campaign(campaign),
        labels=parse_labels(labels),
        pattern=pattern_regex(pattern) if pattern else None,
        side=side,
    )


def _active(rows: list[dict[str, Any]], campaign: str, asked: str) -> dict[str, dict[str, Any]]:
    """source → its manifest row filed like this import, not retired."""
    return {
        r["source"]: r
        for r in rows
        if r["state"] != "retired" and r["campaign"] == campaign and r["asked"] == asked
    }


def _work(
    found: list[_Found], sources: list[str], active: dict[str, dict[str, Any]]
) -> tuple[list[_Found], list[dict[str, Any]]]:
    """The files to read (new, or their stat changed) and the rows whose file is gone."""
    todo = [f for f in found if not _same_stat(active.get(f.source), f)]
    seen = {f.source for f in found}
    gone = [
        row
        for source, row in active.items()
        if row["state"] != "missing"
        and source not in seen
        and any(_under(source, s) for s in sources)
    ]
    return todo, gone


#: a file modified this close before it was read ("racy", as git's index says it) is read
#: again by the next import even when its stat is the same: a write in the same timestamp
#: tick after the read would not show in the stat (2 s: the coarsest file-system clock)
RACY_NS = 2_000_000_000


def _same_stat(row: dict[str, Any] | None, item: _Found) -> bool:
    """The file is as its row says (size, mtime_ns, inode; S3: size and ETag), and was not
    modified within :data:`RACY_NS` before it was read."""
    if row is None:
        return False
    if item.etag is not None:
        return row.get("etag") == item.etag and row.get("size") == item.size
    if (row.get("size"), row.get("mtime_ns"), row.get("inode")) != (
        item.size,
        item.mtime_ns,
        item.inode,
    ):
        return False
    mtime, checked = row.get("mtime_ns"), row.get("checked_ns")
    return mtime is None or checked is None or checked - mtime >= RACY_NS


# --- listing -------------------------------------------------------------------------------


def _listed(sources: list[str], follow_links: bool) -> Iterator[_Found]:
    """Every file of the sources, with its stat (one ``lstat`` each: no file is opened)."""
    import stat as stat_mod

    from netfleet.store.sources import source_files

    for src in sources:
        if src.startswith("s3://"):
            yield from _s3_listed(src)
    seen: set[str] = set()
    for src in sources:
        if src.startswith("s3://"):
            continue
        for source in source_files(os.path.abspath(src), follow_links):
            if source in seen:
                continue
            seen.add(source)
            try:
                st = os.stat(source, follow_symlinks=follow_links)
            except OSError:
                yield _Found(source, source, None)
                continue
            if not stat_mod.S_ISREG(st.st_mode):  # never opened at listing: refused when read
                yield _Found(source, source, st.st_size)
                continue
            yield _Found(source, source, st.st_size, st.st_mtime_ns, st.st_ino)


def _s3_listed(url: str) -> Iterator[_Found]:
    """The objects under an ``s3://bucket/prefix`` (size and ETag from the listing)."""
    from netfleet.store.sources import SUFFIXES

    bucket, key = _s3_split(url)
    client = _s3_client()
    count = 0
    try:
        pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=key)
        for page in pages:
            for obj in page.get("Contents", []):
                name = obj["Key"]
                if name != key and not name.endswith(SUFFIXES):
                    continue
                count += 1
                yield _Found(
                    f"s3://{bucket}/{name}",
                    f"s3://{bucket}/{name}",
                    int(obj["Size"]),
                    etag=str(obj.get("ETag", "")).strip('"'),
                )
    except StoreError:
        raise
    except Exception as exc:
        raise StoreError(
            f"{url}: listing failed ({type(exc).__name__}: {exc})",
            hint="check AWS_ENDPOINT_URL, the credentials (boto3's standard chain) and the bucket",
        ) from exc
    if not count:
        raise InputError(f"{url}: no such object or prefix", hint="give s3://BUCKET/PREFIX")


def _s3_split(url: str) -> tuple[str, str]:
    bucket, _, key = url.removeprefix("s3://").partition("/")
    if not bucket:
        raise InputError(f"{url!r}: no bucket", hint="use s3://BUCKET/PREFIX")
    return bucket, key


def _s3_client() -> Any:
    from netfleet import aws

    return aws.client("s3")


# --- reading -------------------------------------------------------------------------------


#: one task's outcome: per file its Read, and the rows of the task's ok files as Arrow tables
Task = tuple[list["Read"], dict[str, "pa.Table"]]


def read_task(items: list[_Found], opts: Options, follow_links: bool) -> Task:
    """Read a task's files (a worker's unit): each one's :class:`Read`, and the ok ones' rows
    as Arrow tables (converted here, in the worker; a run whose values Arrow refuses is
    refused alone, with its reason)."""
    from netfleet.catalog.onepass import read_local

    reads: list[Read] = []
    batch = _Batch()
    sums: list[tuple[Read, dict[str, list[Any]]]] = []
    seen: set[str] = set()  # each run's rows once per task
    for item in items:
        known = {"size": item.size, "mtime_ns": item.mtime_ns, "inode": item.inode}
        if item.etag is not None:
            read = _read_s3(item, opts)
        else:
            read = read_local(item.path, follow_links, opts, known)
        reads.append(read)
        if read.rows is not None and read.rows.run_id in seen:
            read.rows = read.sums = None  # the same run as a file before it: its rows are there
        if read.rows is not None:
            seen.add(read.rows.run_id)
            for rows, why in batch.add(read.rows):
                _refuse(reads, rows.run_id, why)
            if read.sums is not None:
                sums.append((read, read.sums))
    for rows, why in batch.convert():
        _refuse(reads, rows.run_id, why)
    import pyarrow as pa

    from netfleet.catalog.rows import SCHEMAS

    tables = {t: pa.Table.from_batches(batch.parts[t], schema=SCHEMAS[t]) for t in TABLES}
    kept = [(read, columns) for read, columns in sums if read.row.get("state") == "ok"]
    if kept:
        tables["intervals"] = pa.concat_tables([tables["intervals"], _sum_table(kept, reads)])
    for read in reads:
        read.rows = read.sums = None  # the rows travel as tables
    return reads, tables


def _sum_table(kept: list[tuple[Read, dict[str, list[Any]]]], reads: list[Read]) -> pa.Table:
    """The interval sums of a task's files as one table; a file whose values Arrow refuses is
    refused alone (its run's other rows are dropped by the caller with it)."""
    import pyarrow as pa

    from netfleet.catalog.rows import SCHEMAS

    schema = SCHEMAS["intervals"]
    try:
        return pa.Table.from_pydict(
            {name: [v for _, cols in kept for v in cols[name]] for name in schema.names},
            schema=schema,
        )
    except (pa.ArrowException, OverflowError, TypeError):
        pass
    good = []
    for read, cols in kept:
        try:
            good.append(pa.Table.from_pydict({n: cols[n] for n in schema.names}, schema=schema))
        except (pa.ArrowException, OverflowError, TypeError) as exc:
            _refuse(reads, str(read.row.get("run_id")), f"a value does not fit its column: {exc}")
    return pa.concat_tables([schema.empty_table(), *good])


def _refuse(reads: list[Read], run_id: str, why: str) -> None:
    for read in reads:
        if read.row.get("run_id") == run_id and read.row.get("state") == "ok":
            read.row.update(state="bad", reason=why)


def _read_s3(item: _Found, opts: Options) -> Read:
    """An S3 object read once (GET, at most the byte limit) and :func:`read_file` d."""
    from netfleet.catalog.onepass import Read, read_file
    from netfleet.store.limits import max_raw_bytes

    meta: dict[str, Any] = {"etag": item.etag, "size": item.size}
    limit = max_raw_bytes()
    if item.size is not None and item.size > limit:
        reason = f"{item.size:,} bytes: more than {limit:,} (NETFLEET_MAX_RAW_BYTES)"
        return Read({"source": item.source, "state": "bad", "reason": reason, **meta})
    bucket, key = _s3_split(item.source)
    try:
        got = _s3_client().get_object(Bucket=bucket, Key=key, IfMatch=item.etag)
        data = got["Body"].read(limit + 1)
        meta["version_id"] = got.get("VersionId")
    except Exception as exc:
        reason = f"unreadable ({type(exc).__name__}: {str(exc)[:200]})"
        return Read({"source": item.source, "state": "bad", "reason": reason, **meta})
    return read_file(item.source, data, meta, opts)


def _reads(
    todo: list[_Found], opts: Options, follow_links: bool, pool: Any
) -> Iterator[tuple[_Found, Read, dict[str, pa.Table] | None]]:
    """Each file's read, in order, with its task's tables on the task's first file."""
    tasks = [todo[i : i + TASK_FILES] for i in range(0, len(todo), TASK_FILES)]
    run = partial(read_task, opts=opts, follow_links=follow_links)
    results = map(run, tasks) if pool is None or len(todo) < PARALLEL_MIN else pool.map(run, tasks)
    for items, (reads, tables) in zip(tasks, results, strict=True):
        for n, (item, read) in enumerate(zip(items, reads, strict=True)):
            yield item, read, tables if n == 0 else None


def _warm() -> None:
    """A worker's first task: nothing (its fork server has loaded the readers)."""


@contextmanager
def _pool(workers: int, files: int) -> Iterator[Any]:
    """Worker processes (``forkserver``; the readers loaded once, in the fork server, and each
    worker a fork of it), started at once: they start while this process checks the options,
    locks the catalog and reads its manifest. None for one worker or few files."""
    if workers < 2 or files < PARALLEL_MIN:
        yield None
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from netfleet.store.imports import _quiet_worker

    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(
        ["netfleet.catalog.register", "netfleet.catalog.onepass", "netfleet.catalog.rows",
         "netfleet.store.imports"]
    )  # fmt: skip
    pool = ProcessPoolExecutor(workers, mp_context=ctx, initializer=_quiet_worker)
    try:
        for _ in range(workers):
            pool.submit(_warm)
        yield pool
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


# --- the manifest's rows -------------------------------------------------------------------


@dataclass
class _State:
    """The manifest as this import changes it."""

    table: list[dict[str, Any]]
    generation: int
    campaign: str
    asked: str
    #: source → its row filed like this import (campaign and options), not retired
    active: dict[str, dict[str, Any]] = field(default_factory=dict)
    new: list[dict[str, Any]] = field(default_factory=list)
    #: runs whose file changed: retired unless another row still holds them
    retire: set[str] = field(default_factory=set)
    changed: bool = False

    @classmethod
    def load(cls, catalog: Path, campaign: str, asked: str) -> _State:
        rows = read_manifest(catalog).to_pylist()
        state = cls(rows, current_generation(catalog), campaign, asked)
        for row in rows:
            if row["state"] != "retired" and (row["campaign"], row["asked"]) == (campaign, asked):
                state.active[row["source"]] = row
        return state

    def gone(self, sources: list[str], found: set[str]) -> list[dict[str, Any]]:
        """Active rows under one of ``sources`` whose file was not found."""
        out = []
        for source, row in self.active.items():
            if source in found or row["state"] == "missing":
                continue
            if any(_under(source, s) for s in sources):
                out.append(row)
        return out

    def mark(self, row: dict[str, Any], **changes: Any) -> None:
        row.update(changes, generation=self.generation + 1)
        self.changed = True

    def add(self, row: dict[str, Any]) -> None:
        self.new.append({**row, "asked": self.asked, "generation": self.generation + 1})
        self.changed = True

    def retiring(self) -> set[str]:
        held = {r["run_id"] for r in [*self.table, *self.new] if r["state"] in ("ok", "missing")}
        return {run for run in self.retire if run and run not in held}

    def rows(self) -> list[dict[str, Any]]:
        return [*self.table, *self.new]


def _under(source: str, given: str) -> bool:
    """Whether ``source`` (absolute path or s3 URL) is what ``given`` names: the file, a file
    under the folder or prefix, or a match of the glob."""
    if given.startswith("s3://"):
        return source == given or source.startswith(given.rstrip("/") + "/")
    full = os.path.abspath(given)
    if source == full or source.startswith(full.rstrip("/") + "/"):
        return True
    return any(c in given for c in "*?[") and fnmatch.fnmatch(source, full)


def _settle(
    item: _Found,
    read: Read,
    tables: dict[str, pa.Table] | None,
    state: _State,
    writer: _Writer,
    report: RegisterReport,
    keep_copy: str | None,
) -> None:
    """One file's read into the manifest, the report and the writer."""
    if tables is not None:
        writer.take(tables)
    row = {"checked_ns": time.time_ns(), **read.row}
    old = state.active.get(item.source)
    fields = ("size", "mtime_ns", "inode", "etag")
    if (
        old is not None
        and old.get("file_id") is not None
        and old.get("file_id") == row.get("file_id")
        and (old["state"], row["state"]) in (("ok", "ok"), ("missing", "ok"), ("bad", "bad"))
        and old.get("reason") == row.get("reason")
    ):  # touched, back where it was, or hashed again (racy): the same bytes, the same run
        if any(old.get(k) != row.get(k) for k in fields) or old["state"] == "missing":
            report.touched.append(item.source)
        else:  # hashed again (racy), found as it was
            report.unchanged += 1
        state.mark(old, **{k: row.get(k) for k in (*fields, "checked_ns")}, state=row["state"])
        return
    if old is not None:
        state.mark(old, state="retired", reason="the file changed: a newer row holds it")
        if old.get("run_id"):
            state.retire.add(old["run_id"])
        report.changed.append(item.source)
    if row["state"] != "ok":
        report.bad.append((item.source, str(row.get("reason"))))
        state.add(row)
        return
    run_id = row["run_id"]
    flags = len(json.loads(row.get("flags") or "[]"))
    if flags:
        report.flagged.append((item.source, flags))
    if run_id in writer.first:
        report.duplicates.append((item.source, writer.first[run_id]))
    elif run_id in writer.known:
        writer.first[run_id] = item.source
        report.already.append((item.source, run_id))
    else:
        writer.first[run_id] = item.source
        writer.keep(run_id)
        report.registered.append(item.source)
    if keep_copy:
        row["kept"] = _keep(item, row["file_id"], keep_copy)
    state.add(row)


class _Writer:
    """The rows read, committed to the catalog a batch at a time: of each task's tables, the
    runs kept from that task (a run is in a task's tables once; a file repeating a run of an
    earlier task or of the catalog is not kept)."""

    def __init__(self, catalog: Path, known: set[str]) -> None:
        self.catalog = catalog
        self.known = known
        self.first: dict[str, str] = {}
        #: per task taken: its tables and the runs kept from them
        self.waiting: list[tuple[dict[str, pa.Table], set[str]]] = []
        self.runs = 0

    def take(self, tables: dict[str, pa.Table]) -> None:
        """A task's tables: the files :meth:`keep` names next are that task's."""
        self.waiting.append((tables, set()))

    def keep(self, run_id: str) -> None:
        self.waiting[-1][1].add(run_id)
        self.runs += 1

    def flush(self) -> None:
        import pyarrow as pa
        import pyarrow.compute as pc

        kept = [(tables, runs) for tables, runs in self.waiting if runs]
        self.waiting, self.runs = [], 0
        if not kept:
            return
        batch = _Batch()
        for tables, runs in kept:
            whole = len(runs) == tables["runs"].num_rows  # every run of the task: no filter
            wanted = None if whole else pa.array(sorted(runs), pa.string())
            for table, rows in tables.items():
                if wanted is not None and rows.num_rows:
                    rows = rows.filter(pc.is_in(rows.column("run_id"), value_set=wanted))
                batch.parts[table].extend(rows.to_batches())
            batch.runs += len(runs)
            self.known.update(runs)
        _write_batch(self.catalog, batch)


# --- retiring runs -------------------------------------------------------------------------

RETIRE_JOURNAL = "_retire.json"


def _retire(catalog: Path, runs: set[str]) -> list[str]:
    """Take ``runs``' rows out of the catalog: every committed batch holding one is written
    again without them (a new batch), then the old batch is deleted. A journal names both
    first, so a crash in between is finished by the next import (:func:`finish_retire`)."""
    if not runs:
        return []
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from netfleet.catalog.rows import SCHEMAS

    gone: list[str] = []
    for batch_id in committed_batches(catalog):
        ids = set(_batch_ids(catalog, batch_id))
        hit = ids & runs
        if not hit:
            continue
        drop = pa.array(sorted(hit), pa.string())
        batch = _Batch()
        for table in TABLES:
            part = catalog / table / _part_name(batch_id)
            rows = pq.read_table(part) if part.exists() else SCHEMAS[table].empty_table()
            rows = rows.filter(pc.invert(pc.is_in(rows.column("run_id"), value_set=drop)))
            batch.parts[table].extend(rows.cast(SCHEMAS[table]).to_batches())
        batch.runs = len(ids - hit)
        journal = catalog / RETIRE_JOURNAL
        entry = {"old": batch_id, "dropped": sorted(hit)}
        atomic_write(journal, json.dumps(entry).encode(), prefix=TEMP_PREFIX)
        if batch.runs:
            _write_batch(catalog, batch)
        _delete_batch(catalog, batch_id)
        journal.unlink()
        gone += sorted(hit)
    return gone


def finish_retire(catalog: Path) -> None:
    """Finish a retirement a crash interrupted (``_retire.json`` names the old batch and the
    runs it drops). When every other run of the old batch is in another committed batch, the
    new batch was committed: the old one is deleted. Otherwise the new batch never committed
    (the sweep deletes its parts) and the old batch stays whole: the manifest, written only
    after the retirement, still holds the old rows, so the next import sees those files
    changed and retires their runs again."""
    journal = catalog / RETIRE_JOURNAL
    try:
        entry = json.loads(journal.read_text())
        old, dropped = str(entry["old"]), {str(r) for r in entry["dropped"]}
        if not re.fullmatch(r"[0-9A-Za-z-]+", old):  # a batch name, never a path
            raise ValueError(old)
    except (OSError, ValueError, KeyError, TypeError):
        journal.unlink(missing_ok=True)
        return
    others: set[str] = set()
    for batch_id in committed_batches(catalog):
        if batch_id != old:
            others.update(_batch_ids(catalog, batch_id))
    if set(_batch_ids(catalog, old)) - dropped <= others:
        _delete_batch(catalog, old)
    journal.unlink(missing_ok=True)


def _batch_ids(catalog: Path, batch_id: str) -> list[str]:
    try:
        text = (catalog / IDS_DIR / ids_name(batch_id)).read_text()
        return [json.loads(line) for line in text.splitlines()]
    except (OSError, ValueError):
        import pyarrow.parquet as pq

        part = catalog / "runs" / _part_name(batch_id)
        try:
            return [str(i) for i in pq.read_table(part, columns=["run_id"])["run_id"].to_pylist()]
        except OSError:
            return []


def _delete_batch(catalog: Path, batch_id: str) -> None:
    """Uncommit (runs part first), then delete the other parts and the ids file."""
    for table in ("runs", *[t for t in TABLES if t != "runs"]):
        (catalog / table / _part_name(batch_id)).unlink(missing_ok=True)
    (catalog / IDS_DIR / ids_name(batch_id)).unlink(missing_ok=True)


# --- keeping a copy ------------------------------------------------------------------------


def _keep(item: _Found, digest: str, dest: str) -> str:
    """Keep the file as it is under ``dest``, named by its SHA-256 (and its name's suffix)."""
    name = digest + "".join(Path(item.source).suffixes[-2:])
    if dest.startswith("s3://"):
        bucket, prefix = _s3_split(dest)
        key = f"{prefix.rstrip('/')}/{name}" if prefix else name
        client = _s3_client()
        if item.source.startswith("s3://"):  # server-side: the bytes never come here
            src_bucket, src_key = _s3_split(item.source)
            client.copy_object(
                Bucket=bucket, Key=key, CopySource={"Bucket": src_bucket, "Key": src_key}
            )
        else:
            client.put_object(Bucket=bucket, Key=key, Body=Path(item.path).read_bytes())
        return f"s3://{bucket}/{key}"
    folder = Path(dest)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    if target.exists():
        return str(target.resolve())
    if item.source.startswith("s3://"):
        bucket, key = _s3_split(item.source)
        data = _s3_client().get_object(Bucket=bucket, Key=key)["Body"].read()
        atomic_write(target, data, prefix=TEMP_PREFIX)
        return str(target.resolve())
    try:
        os.link(item.path, target, follow_symlinks=False)
    except OSError:
        _copy(Path(item.path), target)
    return str(target.resolve())


def _copy(src: Path, target: Path) -> None:
    """A reflink when the file system can (one ioctl, no bytes moved), else a plain copy."""
    import fcntl
    import shutil

    tmp = target.with_name(TEMP_PREFIX + target.name)
    with open(src, "rb") as fin, open(tmp, "wb") as fout:
        try:
            fcntl.ioctl(fout.fileno(), 0x40049409, fin.fileno())  # FICLONE
        except OSError:
            shutil.copyfileobj(fin, fout)
        fout.flush()
        os.fsync(fout.fileno())
    os.replace(tmp, target)
