"""The catalog's one load loop (:func:`load`) and its two entry points: ``netfleet import
--catalog`` (:func:`register`: foreign files by reference, local paths or ``s3://`` objects; no
envelope is written) and ``netfleet ingest`` of a results root, local or S3, into a local or
S3 catalog (:mod:`netfleet.catalog.ingestion`). Each file is read once in worker tasks
(:mod:`netfleet.catalog.reader`), its rows written by the one batch writer
(:mod:`netfleet.catalog.writer`), its manifest row into the manifest
(:mod:`netfleet.catalog.manifest`).

Loading again decides by stat, as git's index does: a file whose size, mtime_ns and inode (S3:
size and ETag) are those of its manifest row is not opened. A file whose stat changed is read
again: the same bytes (touched) only refresh the row; other bytes are a new run, and the old
run's rows retire from the catalog (its manifest row says ``retired``). A file the manifest has
under one of the sources given that is gone is marked ``missing`` (its runs stay: they were
verified when read). A file that cannot be read is recorded with its reason (``bad``) and never
stops the others. Every load that changes anything writes the manifest with the next
generation; the cheat sheet's cache is keyed by it.

Crash safety: rows are committed batch by batch (runs part last), then old runs are retired
(their batches rewritten without them, through a journal: :mod:`netfleet.catalog.retire`), then
the manifest is written. A crash before the manifest leaves rows the manifest does not know:
the next load reads those files again, finds their runs in the catalog and records them.
"""

from __future__ import annotations

import fnmatch
import json
import operator
import os
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING

from netfleet.catalog import sourcelist
from netfleet.catalog.manifest import (
    COLUMNS,
    Index,
    load_index,
    read_index,
    read_manifest,
    rows_table,
    schema,
    still_current,
    write_index,
)
from netfleet.catalog.manifest import write_changes as _write_changes
from netfleet.catalog.memory import collector_paused
from netfleet.catalog.sourcelist import Found, Options
from netfleet.errors import InputError, named
from netfleet.plain import Plain

if TYPE_CHECKING:
    from typing import Any

    import pyarrow as pa

    from netfleet.catalog.keepcopy import Keeper
    from netfleet.catalog.remote import S3Catalog
    from netfleet.catalog.writer import Writer


# the readers (msgspec, isal, the import's builders, pyarrow) and the catalog's writing
# (reader, ingestion, retire, keepcopy) are imported where files are read: a no-op import
# lists, stats and compares with the manifest's index only

Progress = Callable[[int, int], None]

#: runs per batch of catalog parts (a batch's tables are held until it is written: ≈ 15 kB a
#: seed-002 run), and files read after the last batch but one is committed: with workers, what
#: landed before the last TAIL_FILES files (≈ 1 s of their CPU) is written while they read
#: those, and the batch written after the last read is a short one
BATCH_RUNS, TAIL_FILES = 5_000, 1_024


class RegisterReport(Plain):
    """What one load did (:mod:`netfleet.plain`: the fields in ``__slots__``' order)."""

    __slots__ = (  # noqa: RUF023
        "catalog_dir", "registered", "unchanged", "changed", "touched", "missing", "bad",
        "flagged", "duplicates", "already", "recovered", "retired", "generation", "seconds",
        "batches", "rows",
    )  # fmt: skip

    catalog_dir: Path
    #: files read and registered (ok) this time
    registered: list[str]
    #: files whose stat matched the manifest: not opened
    unchanged: int
    #: files whose bytes changed since the manifest's row: a new run, the old one retired
    changed: list[str]
    #: files whose stat changed but not their bytes (touched): the row refreshed
    touched: list[str]
    #: files the manifest had under these sources that are gone
    missing: list[str]
    #: (file, reason) of the files refused
    bad: list[tuple[str, str]]
    #: (file, number of interval values that do not add up)
    flagged: list[tuple[str, int]]
    #: (file, the file of this import it repeats): same bytes, campaign and labels, one run
    duplicates: list[tuple[str, str]]
    #: (file, run id): its run was in the catalog already
    already: list[tuple[str, str]]
    #: files whose runs a load stopped before its manifest had committed (no manifest row held)
    recovered: list[str]
    #: runs whose rows left the catalog (their file changed)
    retired: list[str]
    #: the manifest's generation after this import
    generation: int
    seconds: float
    #: batches of catalog parts written, and the rows written per table
    batches: int
    rows: dict[str, int]

    def __init__(
        self,
        catalog_dir: Path,
        registered: list[str] | None = None,
        unchanged: int = 0,
        changed: list[str] | None = None,
        touched: list[str] | None = None,
        missing: list[str] | None = None,
        bad: list[tuple[str, str]] | None = None,
        flagged: list[tuple[str, int]] | None = None,
        duplicates: list[tuple[str, str]] | None = None,
        already: list[tuple[str, str]] | None = None,
        recovered: list[str] | None = None,
        retired: list[str] | None = None,
        generation: int = 0,
        seconds: float = 0.0,
        batches: int = 0,
        rows: dict[str, int] | None = None,
    ) -> None:
        self.catalog_dir = catalog_dir
        self.registered = [] if registered is None else registered
        self.unchanged = unchanged
        self.changed = [] if changed is None else changed
        self.touched = [] if touched is None else touched
        self.missing = [] if missing is None else missing
        self.bad = [] if bad is None else bad
        self.flagged = [] if flagged is None else flagged
        self.duplicates = [] if duplicates is None else duplicates
        self.already = [] if already is None else already
        self.recovered = [] if recovered is None else recovered
        self.retired = [] if retired is None else retired
        self.generation = generation
        self.seconds = seconds
        self.batches = batches
        self.rows = {} if rows is None else rows

    @property
    def read_files(self) -> bool:
        """Whether this import read any file (a no-op reads none: every file unchanged)."""
        lists = self.registered, self.changed, self.touched, self.bad, self.duplicates
        return any(lists) or bool(self.already or self.recovered)


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
    ahead: Callable[[], object] | None = None,
) -> RegisterReport:
    """Register every source file in ``catalog_dir``'s manifest and its rows in the catalog
    (see the module's text). ``keep_copy``: a folder (or ``s3://`` prefix) where each newly
    read file is kept as it is (hardlink or reflink when possible, else a copy; S3 to S3 a
    server-side copy), named by its SHA-256. ``ahead``: :func:`load`'s."""
    from netfleet.store.sources import SIDES, check_keep_copy, split_labels

    if side not in SIDES:
        raise InputError(f"--side {side!r}: expected one of {', '.join(SIDES)}")
    named("--catalog", os.fspath(catalog_dir))
    if str(catalog_dir).startswith("s3://"):
        raise InputError(
            "import by reference keeps its manifest in a local catalog",
            hint="give --catalog a local folder (the sources may be s3:// URLs)",
        )
    if keep_copy is not None:  # (an empty one is an error, not left out)
        check_keep_copy(keep_copy)
    asked_labels = split_labels(labels)
    asked = json.dumps({"labels": asked_labels, "pattern": pattern, "side": side}, sort_keys=True)
    sources = list(sources)
    return load(
        lambda: sourcelist.listed(sources, follow_links),
        sources,
        Path(catalog_dir),
        lambda: _options(campaign, labels, pattern, side),
        campaign,
        asked,
        workers=workers,
        follow_links=follow_links,
        keep_copy=keep_copy,
        progress=progress,
        ahead=ahead,
    )


def load(
    listing: Callable[[], list[Found]],
    sources: list[str],
    catalog: Path,
    options: Callable[[], Options],
    campaign: str | None,
    asked: str,
    *,
    workers: int = 1,
    follow_links: bool = False,
    keep_copy: str | None = None,
    progress: Progress | None = None,
    batch_runs: int | None = None,
    batch_rows: int | None = None,
    task_files: int | None = None,
    remote: S3Catalog | None = None,
    ahead: Callable[[], object] | None = None,
) -> RegisterReport:
    """The catalog's one load loop, for both entry points (``register``: foreign files by reference;
    ``ingest``: a results root's envelopes, ``asked`` :data:`INGESTED`). What is already in is
    decided by the manifest alone (:func:`_work`'s rule: a file whose stat is its row's is not
    opened); the files to read are read in worker tasks (:mod:`reader`), their runs written by the
    one writer a batch at a time (every ``batch_runs`` runs — default :data:`BATCH_RUNS` —, or
    ``batch_rows`` interval rows read), their manifest rows written last as the next generation.
    ``listing``: the files (called with the cycle collector paused); ``sources``: what was listed (a
    row under one whose file is gone is ``missing``); ``options``: the reads' options, made when
    something is to be read; ``campaign``: the campaign of this entry's rows (None: any — an
    envelope names its own); ``task_files``: files per task read in this process (default
    :data:`reader.TASK_FILES`); ``remote``: an S3 catalog (``catalog`` its staging directory), its
    manifest pulled from it under the lock and pushed back after the batches
    (:class:`~netfleet.catalog.remote.S3Catalog`). ``ahead``: this process's work while the workers
    read the last :data:`TAIL_FILES` files (after the batch before them is committed)."""
    started = time.monotonic()
    sourcelist.forget_client()
    # Python's cycle collector paused while the files are listed and compared: the listing's
    # tuples (one a file) would be walked by each collection meanwhile, and by the first after
    # — 1.5-4 ms of a no-op import of 10,000 files; they hold no cycles (issue 26)
    with collector_paused():
        found = list(listing())
        report = RegisterReport(catalog)
        # nothing changed (every file's stat is its row's, none gone): decided from the
        # manifest's index alone — no lock taken, no reader loaded (rows only exist for
        # options once checked)
        index = read_index(catalog) if remote is None else None  # (S3: pulled when locked)
        todo = found
        active: dict[str, int] = {}
        gone: list[str] = []
        if index is not None:
            if _unchanged(found, index, campaign, asked):
                todo = []
            else:
                active = _active(index, campaign, asked)
                todo, gone = _work(found, sources, index, active)
            if not todo and not gone:  # (always so when unchanged)
                report.bad = _still_refused(index, found, todo, active or None)
                report.unchanged = len(found) - len(report.bad)
                report.generation = index.generation
                report.seconds = time.monotonic() - started
                found.clear()  # freed before the collector resumes: none of it walked
                return report
    batch_runs = batch_runs or BATCH_RUNS
    with pool(workers, len(todo)) as workers_pool:  # what follows while the workers start
        from netfleet.catalog import reader
        from netfleet.catalog.keepcopy import Keeper
        from netfleet.catalog.retire import finish_retire, retire
        from netfleet.catalog.writer import Writer, prepared

        opts = options()
        with prepared(catalog, remote) as (local, known):
            if remote is not None:
                remote.pull_manifest(local)
            finish_retire(local)
            # what was found before the lock holds while no import came between
            if index is None or not still_current(local, index):
                index = read_index(local)
                if index is None:  # not the manifest files' own (a crash before it was written)
                    index = load_index(local)
                    write_index(local, index)
                active = _active(index, campaign, asked)
                todo, gone = _work(found, sources, index, active)
            report.bad = _still_refused(index, found, todo, active)
            report.unchanged = len(found) - len(todo) - len(report.bad)
            if not todo and not gone:
                report.generation = index.generation
                report.seconds = time.monotonic() - started
                return report
            _load_writer()  # (while the workers start: :func:`pool`)
            size = task_files or reader.TASK_FILES
            if workers_pool is not None:
                size = min(reader.TASK_FILES, batch_runs)
            tasks = reader.reads(todo, opts, follow_links, workers_pool, size)  # handed out at once
            state = _State(index, active, index.generation, asked)
            keep = Keeper(keep_copy, follow_links) if keep_copy else None
            writer = Writer(local, known, remote)
            done = 0
            tail = len(todo) - TAIL_FILES if workers_pool is not None else 0
            if progress is not None:
                progress(report.unchanged, len(found))
            for items, columns, tables in tasks:
                full = batch_rows is not None and writer.rows >= batch_rows
                cut = 0 < tail <= done
                if full or cut or writer.runs >= batch_runs:
                    writer.commit(report)  # between two tasks' rows
                    if cut and ahead is not None:
                        ahead()
                    tail = 0 if cut else tail
                _settle_task(items, columns, tables, state, writer, report, keep)
                done += len(items)
                if progress is not None:
                    progress(report.unchanged + done, len(found))
            writer.commit(report)
            for source in gone:  # (:func:`_work`'s: settling the files read changed none)
                state.mark(source, state="missing", reason="gone from its source")
                report.missing.append(source)
            report.retired = retire(local, state.retiring())
            report.generation = state.generation
            if state.changed:
                state.write(local)
                report.generation += 1
                if remote is not None:
                    remote.push_manifest(local)
    report.seconds = time.monotonic() - started
    return report


#: files to read at which reading spreads over worker processes: below, reading them here
#: (≈ 0.5 ms a seed-002 file) costs less than starting the workers (≈ 0.7 s, loading the
#: readers, hidden behind this process's own start)
PARALLEL_MIN = 512


@contextmanager
def pool(workers: int, files: int) -> Iterator[Any]:
    """Worker processes for :mod:`~netfleet.catalog.reader`'s tasks (``forkserver``; the
    readers loaded once, in the fork server, and each worker a fork of it), started at once in
    a thread of their own, before this process loads the readers itself: the fork server's
    loading (≈ 0.5 s of one core) runs beside this process's own (the reader, the writer, the
    lock, the manifest) — loaded one after the other, the workers had waited for both. None
    for one worker or few files. (Tasks handed out meanwhile wait for the start.)"""
    if workers < 2 or files < PARALLEL_MIN:
        yield None
        return
    import threading

    from netfleet.workers import process_pool

    started = process_pool(
        workers,
        preload=["netfleet.catalog.reader", "netfleet.catalog.build", "netfleet.iperf3json",
                 "netfleet.store.import_iperf3", "netfleet.store.import_labels",
                 "netfleet.catalog.schemas", "pyarrow.ipc", "isal.isal_zlib"],
    )  # fmt: skip
    start = threading.Thread(target=_start, args=(started,), name="netfleet-workers")
    start.start()
    try:
        yield started
    finally:
        start.join()
        started.shutdown(wait=True, cancel_futures=True)


def _start(started: Any) -> None:
    """Start the pool's workers: all of them at its first task (``int()``; the fork server
    has loaded the readers: :func:`netfleet.workers.process_pool`). A failure is the tasks' to
    report: they start them again, or raise."""
    with suppress(Exception):  # (raised again by the first task handed out)
        started.submit(int)


def _load_writer() -> None:
    """Load what writing the catalog's parts and the manifest needs (pyarrow, the schemas,
    Parquet, the batch's split by kind — not the row code: the engines and pydantic) while
    the workers start: loaded on first use, it was 0.3-0.5 s of one core alone at the end."""
    import importlib

    for name in ("pyarrow.parquet", "pyarrow.compute", "netfleet.catalog.schemas"):
        importlib.import_module(name)


def _options(campaign: str, labels: Iterable[str], pattern: str | None, side: str) -> Options:
    """The import's options, checked as a spec's are (labels, campaign, the pattern's names)."""
    from netfleet.store.sources import check_campaign, parse_labels, pattern_regex

    return Options(
        campaign=check_campaign(campaign),
        labels=parse_labels(labels),
        pattern=pattern_regex(pattern) if pattern else None,
        side=side,
    )


def _active(index: Index, campaign: str | None, asked: str) -> dict[str, int]:
    """source → the position in ``index`` of its row filed like this import (not retired:
    the index has no retired rows but those this import retires)."""
    cols = index.columns
    if _filed_alike(index, campaign, asked):
        # every row filed like this import (an index read from its file has no retired rows)
        return dict(zip(cols["source"], range(len(index)), strict=True))
    return {
        source: at
        for at, (source, state, its_campaign, its_asked) in enumerate(
            zip(cols["source"], cols["state"], cols["campaign"], cols["asked"], strict=True)
        )
        if (campaign is None or its_campaign == campaign)
        and its_asked == asked
        and state != "retired"
    }


def _filed_alike(index: Index, campaign: str | None, asked: str) -> bool:
    """Whether every row of the index (as its file lists the coded columns) is filed like this
    load: its ``asked``, and its campaign (``campaign`` None: any)."""
    if campaign is not None and index.distinct("campaign") != [campaign]:
        return False
    return index.distinct("asked") == [asked]


def _still_refused(
    index: Index, found: list[Found], todo: list[Found], active: dict[str, int] | None
) -> list[tuple[str, str]]:
    """The files listed and not read again (their stat unchanged) whose row says they were
    refused, with the reason then: a refusal stays in the report (and the exit status) until
    the file changes, so a cron job's next import does not call it fine. Nothing decoded when
    the index holds no refused row (the no-op's case)."""
    states = index.distinct("state")
    if states is not None and "bad" not in states:
        return []
    cols = index.columns
    state, reason = cols["state"], cols["reason"]
    if active is None:  # every row this import's (:func:`_unchanged`)
        active = dict(zip(cols["source"], range(len(index)), strict=True))
    read = {item.source for item in todo}
    return [
        (item.source, f"unchanged since it was refused: {reason[at]}")
        for item in found
        if (at := active.get(item.source)) is not None
        and state[at] == "bad"
        and item.source not in read
    ]


def _work(
    found: list[Found], sources: list[str], index: Index, active: dict[str, int]
) -> tuple[list[Found], list[str]]:
    """The files to read (new, or their stat changed: :data:`RACY_NS`'s rule, one loop over
    the index's columns — a function call per file was 0.15 s of 100,000) and the sources of
    the rows whose file is gone."""
    if not active:  # a new catalog (or new options): every file is read, none is gone
        return list(found), []
    cols = index.columns
    size, mtime, inode = cols["size"], cols["mtime_ns"], cols["inode"]
    checked, etag, state = cols["checked_ns"], cols["etag"], cols["state"]
    todo = []
    for item in found:
        source, _, its_size, its_mtime, its_inode, its_etag = item
        at = active.get(source)
        if at is None or state[at] == "missing":  # new, or back at its source: read it
            todo.append(item)
        elif its_etag is not None:
            if etag[at] != its_etag or size[at] != its_size:
                todo.append(item)
        elif (
            size[at] != its_size
            or mtime[at] != its_mtime
            or inode[at] != its_inode
            or (
                its_mtime is not None
                and checked[at] is not None
                and checked[at] - its_mtime < RACY_NS
            )
        ):
            todo.append(item)
    hits = len(found) - sum(1 for f in found if f.source not in active) if todo else len(found)
    if hits == len(active):  # every active row's file was found (sources are unique)
        return todo, []
    seen = {f.source for f in found}
    gone = [
        source
        for source, at in active.items()
        if state[at] != "missing" and source not in seen and any(_under(source, s) for s in sources)
    ]
    return todo, gone


def _unchanged(found: list[Found], index: Index, campaign: str | None, asked: str) -> bool:
    """Whether :func:`_work` would find nothing to read and nothing gone, decided column by
    column at C speed — no column decoded into Python values, no ``active`` map made — when
    the listing found exactly the index's rows, in the index's order, every row filed like
    this import and not ``missing``, every file a local one with its stat (the no-op
    import's case). False when it cannot tell so: then :func:`_active` and :func:`_work`'s
    loop decide, as they always did."""
    if not found or len(found) != len(index):
        return False
    # every row filed like this import, none retired or missing (a read index has no
    # retired rows; the coded columns' values as the file lists them)
    if not _filed_alike(index, campaign, asked):
        return False
    states = index.distinct("state")
    if states is None or "missing" in states or "retired" in states:
        return False
    sources, _, sizes, mtimes, inodes, etags = zip(*found, strict=True)
    if etags.count(None) != len(etags) or None in mtimes:
        return False  # S3 objects (size and ETag), or a file not stat'ed: the loop's
    # the listing's sources are unique (one folder's walk, or several sources' with repeats
    # dropped): equal to the source column, each row is its file's, in order
    columns = (("source", sources), ("size", sizes), ("mtime_ns", mtimes), ("inode", inodes))
    if not all(index.column_is(name, values) for name, values in columns):
        return False
    # racy (:data:`RACY_NS`): a null ``checked_ns`` (the lowest int64, or None when decoded)
    # is left to the loop; every file checked 2 s after the newest mtime: none racy, without
    # a subtraction per file
    checked = index.ints("checked_ns")
    try:  # (a None: TypeError)
        if min(checked) - max(mtimes) >= RACY_NS:  # type: ignore[type-var]
            return True
        return min(map(operator.sub, checked, mtimes)) >= RACY_NS
    except TypeError:
        return False


#: a file modified this close before it was read ("racy", as git's index says it) is read
#: again by the next import even when its stat is the same: a write in the same timestamp
#: tick after the read would not show in the stat (2 s: the coarsest file-system clock).
#: The rule (:func:`_work`): a file is not opened when its row is not ``missing`` and its
#: size, mtime_ns and inode (S3: size and ETag) are the row's, and it was not modified within
#: this before it was read
RACY_NS = 2_000_000_000


# --- the manifest's rows -------------------------------------------------------------------


class _State:
    """The manifest's stat index as this import changes it, and the rows it changes. (A plain
    class: a dataclass costs every import, the no-op too, half a millisecond to define.)"""

    def __init__(self, index: Index, active: dict[str, int], generation: int, asked: str):
        self.index = index
        #: source → position in the index of its row filed like this import, not retired
        self.active = active
        self.generation = generation
        self.asked = asked
        #: the rows this import made, column by column (a dict per row was ≈ 1 kB of 100k
        #: files)
        self.new: dict[str, list[Any]] = {n: [] for n, _ in COLUMNS}
        #: row_id → position in the index, of the rows this import changed
        self.marked: dict[int, int] = {}
        #: runs whose file changed: retired unless another row still holds them
        self.retire: set[str] = set()
        self.changed = False
        self.held_first: set[str] | None = None  # :meth:`held` when _settle first asks

    def old(self, source: str) -> dict[str, Any] | None:
        """The index's columns of ``source``'s active row (None: it has none)."""
        at = self.active.get(source)
        return None if at is None else self.index.row(at)

    def mark(self, source: str, **changes: Any) -> None:
        self.mark_at(self.active[source], **changes)

    def mark_at(self, at: int, **changes: Any) -> None:
        self.index.set(at, changes)
        self.marked[self.index.columns["row_id"][at]] = at
        self.changed = True

    def add(self, row: dict[str, Any]) -> None:
        self.add_columns({name: [value] for name, value in row.items()}, 1)

    def add_columns(self, columns: dict[str, list[Any]], count: int) -> None:
        """``count`` new rows at once, as columns (a list per column, a missing one null)."""
        first = self.index.next_row
        self.index.next_row += count
        columns = {
            **columns,
            "asked": [self.asked] * count,
            "generation": [self.generation + 1] * count,
            "row_id": list(range(first, first + count)),
        }
        self.index.extend(columns, count)
        nulls = [None] * count
        for name, values in self.new.items():
            values.extend(columns.get(name, nulls))
        self.changed = True

    def held(self) -> set[str]:
        """The runs the index's rows hold now (ok or missing)."""
        cols = self.index.columns
        return {
            run for run, state in zip(cols["run_id"], cols["state"], strict=True)
            if state in ("ok", "missing")
        }  # fmt: skip

    def retiring(self) -> set[str]:
        """The runs to retire that no row holds (the index's run ids decoded only if any)."""
        return {run for run in self.retire - self.held() if run} if self.retire else set()

    def write(self, catalog: Path) -> None:
        """The rows this import made or changed, as the manifest's next generation."""
        generation = self.generation + 1
        changed = []
        table = None
        if self.marked:  # their other columns (labels, file keys ...) from the manifest
            table = read_manifest(catalog)
            ids = table.column("row_id").to_pylist()
            wanted = [n for n, row in enumerate(ids) if row in self.marked]
            for full in table.take(wanted).to_pylist():
                now = self.index.row(self.marked[full["row_id"]])
                changed.append({**full, **now, "generation": generation})
        import pyarrow as pa

        made = pa.Table.from_pydict(self.new, schema=schema())
        self.new = {}
        rows = pa.concat_tables([rows_table(changed), made]) if changed else made
        _write_changes(catalog, rows, self.index, generation, table)


#: the reason of a manifest row ``netfleet verify --prune`` forgot
FORGOTTEN = "forgotten: gone from its source (netfleet verify --prune)"


def forget(catalog_dir: str | os.PathLike[str], gone: Callable[[dict[str, Any]], bool],
           sources: Iterable[str]) -> tuple[list[str], list[str]]:  # fmt: skip
    """Forget the manifest rows of ``sources`` (not retired) that are still gone from their
    source (``gone(row)``, asked again under the catalog's lock: a file back since is kept):
    each row retired with the reason :data:`FORGOTTEN`, and the runs they held — unless another
    row still holds them — taken out of the catalog. Returns the sources forgotten and the run
    ids taken out."""
    from netfleet.catalog.retire import finish_retire, retire
    from netfleet.catalog.writer import prepared

    wanted = set(sources)
    with prepared(catalog_dir, None) as (local, _known):
        finish_retire(local)
        index = load_index(local)
        state = _State(index, {}, index.generation, "")
        forgotten = []
        for at, row in list(enumerate(index.rows())):
            if row["state"] == "retired" or row["source"] not in wanted or not gone(row):
                continue
            state.mark_at(at, state="retired", reason=FORGOTTEN)
            forgotten.append(row["source"])
            if row["run_id"]:
                state.retire.add(row["run_id"])
        if not state.changed:
            return [], []
        runs = retire(local, state.retiring())
        state.write(local)
    return forgotten, runs


def _under(source: str, given: str) -> bool:
    """Whether ``source`` (absolute path or s3 URL) is what ``given`` names: the file, a file
    under the folder or prefix, or a match of the glob."""
    if given.startswith("s3://"):
        return source == given or source.startswith(given.rstrip("/") + "/")
    full = os.path.abspath(given)
    under = source == full or source.startswith(full.rstrip("/") + "/")
    return under or (any(c in given for c in "*?[") and fnmatch.fnmatch(source, full))


def _settle_task(
    items: list[Found],
    columns: dict[str, list[Any]],
    tables: dict[str, pa.Table],
    state: _State,
    writer: Writer,
    report: RegisterReport,
    keep: Keeper | None,
) -> None:
    """One task's reads into the manifest, the report and the writer. The common case —
    every file new to the manifest, read ok, its run new to this import and to the catalog —
    is settled column-wise (no Python per file: a dict and a dozen calls per file were
    0.5-0.8 s of this process at 10,000 files); any other task file by file."""
    writer.take(tables)
    checked = columns["checked_ns"]
    if None in checked:  # (a read that did not say when: S3)
        now = time.time_ns()
        columns["checked_ns"] = [now if c is None else c for c in checked]
    sources = [item.source for item in items]
    runs = columns["run_id"]
    if keep is None and _all_new(sources, columns, state, writer):
        writer.keep_all(runs)
        writer.first.update(zip(runs, sources, strict=True))
        report.registered += sources
        report.flagged += [
            (source, len(json.loads(flags)))
            for source, flags in zip(sources, columns["flags"], strict=True)
            if flags and flags != "[]"
        ]
        state.add_columns(columns, len(items))
        return
    for at, item in enumerate(items):
        row = {name: values[at] for name, values in columns.items()}
        _settle(item, row, state, writer, report, keep)


def _all_new(
    sources: list[str], columns: dict[str, list[Any]], state: _State, writer: Writer
) -> bool:
    """Whether every file of a task is new to the manifest, read ok, and of a run new to
    this import and to the catalog: what :func:`_settle` would register, each."""
    runs = columns["run_id"]
    return (
        columns["state"].count("ok") == len(sources)
        and (not state.active or state.active.keys().isdisjoint(sources))
        and len(set(runs)) == len(runs)
        and writer.first.keys().isdisjoint(runs)
        and writer.known.isdisjoint(runs)
    )


def _settle(
    item: Found,
    row: dict[str, Any],
    state: _State,
    writer: Writer,
    report: RegisterReport,
    keep: Keeper | None,
) -> None:
    """One file's read (its manifest row) into the manifest, the report and the writer."""
    old = state.old(item.source)
    fields = ("size", "mtime_ns", "inode", "etag")
    if (
        old is not None
        and old.get("file_id") is not None
        and old.get("file_id") == row.get("file_id")
        and (old["state"], row["state"]) in (("ok", "ok"), ("missing", "ok"), ("bad", "bad"))
        and (row["state"] == "ok" or old.get("reason") == row.get("reason"))
    ):  # touched, back where it was, or hashed again (racy): the same bytes, the same run
        if row["state"] == "bad":  # refused again: still in the report and the exit status
            report.bad.append((item.source, f"unchanged since it was refused: {row['reason']}"))
        elif any(old.get(k) != row.get(k) for k in fields) or old["state"] == "missing":
            report.touched.append(item.source)
        else:  # hashed again (racy), found as it was
            report.unchanged += 1
        reason = row.get("reason")
        stat = {k: row.get(k) for k in (*fields, "checked_ns")}
        state.mark(item.source, **stat, state=row["state"], reason=reason)
        return
    if old is not None:
        state.mark(item.source, state="retired", reason="the file changed: a newer row holds it")
        if old.get("run_id"):
            state.retire.add(old["run_id"])
        report.changed.append(item.source)
    if keep is not None and row["state"] == "ok":
        from netfleet.catalog.keepcopy import NotKept

        try:  # before it counts as read: a file not kept as read is not imported
            row["kept"] = keep.keep(item, row)
        except NotKept as exc:
            row.update(state="bad", reason=str(exc))
    if row["state"] != "ok":
        report.bad.append((item.source, str(row.get("reason"))))
        state.add(row)
        return
    run_id = row["run_id"]
    flags = row.get("flags")
    if flags and flags != "[]":
        report.flagged.append((item.source, len(json.loads(flags))))
    if run_id in writer.first:
        report.duplicates.append((item.source, writer.first[run_id]))
    elif run_id in writer.known:
        writer.first[run_id] = item.source
        if state.held_first is None:  # (the index's run ids decoded only then)
            state.held_first = state.held()
        if run_id in state.held_first:
            report.already.append((item.source, run_id))
        else:  # this file's own rows, committed before a load stopped: its row now
            report.recovered.append(item.source)
    else:
        writer.first[run_id] = item.source
        writer.keep(run_id)
        report.registered.append(item.source)
    state.add(row)
