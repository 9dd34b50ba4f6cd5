"""Raw results → Parquet catalog: idempotent, streaming, crash-safe.

* Idempotent: a local root into a local catalog goes through the catalog's one load loop
  (:func:`netfleet.catalog.register.load`): every envelope gets a manifest row, and a file whose
  stat is its row's is not opened; one read (new, changed) whose run is in ``runs`` is
  skipped. An S3 root or catalog skips a run already in ``runs`` after reading its ``run_id``.
* Streaming: files are read one at a time; rows are flushed as one new batch of parts every
  ``batch_runs`` runs or ``batch_rows`` interval rows, so memory stays bounded.
* Crash-safe: see :mod:`netfleet.catalog.layout` — parts are written under temp names, fsynced,
  renamed with the runs part last (the commit marker); readers only see committed batches.
* A raw file that cannot be read or turned into rows is reported (path and reason) and skipped.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from netfleet.catalog.layout import TABLES, is_s3
from netfleet.catalog.pending import RAW_SUFFIX
from netfleet.catalog.remote import S3Catalog
from netfleet.catalog.writer import Writer, prepared
from netfleet.errors import InputError
from netfleet.store.root import RawStore, ResultsRoot, as_root

if TYPE_CHECKING:
    from netfleet.catalog.sourcelist import Found

# pyarrow, pydantic and the row parsers are imported where rows are made: a no-op ingest
# (everything already in the catalog) needs none of them


Progress = Callable[[int, int], None]


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
    rows: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TABLES, 0))
    seconds: float = 0.0
    #: results an earlier run or import left in the local upload spool of an S3 root, uploaded
    #: by this ingest before it listed the root
    uploaded: list[str] = field(default_factory=list)

    def summary(self) -> str:
        waited = f"{len(self.uploaded)} waiting in the local upload spool uploaded first; "
        spool = waited if self.uploaded else ""
        return (
            f"{spool}{self.seen} raw files: {self.ingested} ingested, {self.skipped} already in "
            f"the catalog, {len(self.bad)} bad ({self.seconds:.1f} s)"
        )


def ingest(
    results_root: RawStore | str | os.PathLike[str],
    catalog_dir: str | os.PathLike[str],
    progress: Progress | None = None,
    *,
    batch_runs: int = 500,
    batch_rows: int = 100_000,
    workers: int | None = None,
) -> IngestReport:
    """Add every raw result not yet in the catalog. Safe to re-run; safe to interrupt.
    ``workers``: processes reading the envelopes of a local root (default: one per CPU, at
    most 4; a few hundred files are read in this process)."""
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
    if remote is None and isinstance(root, ResultsRoot):
        return _load_local(root, Path(catalog_dir), progress, batch_runs, batch_rows, workers)
    report = IngestReport(Path(catalog_dir) if remote is None else remote.url)
    started = time.monotonic()
    # results a failed upload left spooled locally (an S3 root) belong in the catalog too
    report.uploaded = root.flush_pending()
    with prepared(catalog_dir, remote) as (catalog, known):
        if isinstance(root, ResultsRoot):
            # runs already in the catalog are counted by name: a no-op ingest makes no Path
            entries = local_entries(root.path)
            total = len(entries)
            files = [
                root.path / d / c / n
                for d, c, n in entries
                if n.removesuffix(RAW_SUFFIX) not in known
            ]
            report.seen = report.skipped = total - len(files)
        else:
            files = list(root.files())
            total = len(files)
        if progress:
            progress(report.seen, total)
        if files:  # (a no-op loads no reader: neither the models nor pyarrow)
            writer = Writer(catalog, known, remote)
            load(files, root, writer, report, progress, total, batch_runs, batch_rows, workers)
    report.seconds = time.monotonic() - started
    return report


def _load_local(
    root: ResultsRoot,
    catalog: Path,
    progress: Progress | None,
    batch_runs: int,
    batch_rows: int,
    workers: int | None,
) -> IngestReport:
    """A local root into a local catalog, through the catalog's one load loop
    (:func:`netfleet.catalog.register.load`): each envelope gets a manifest row (``source`` its
    raw path, ``asked`` :data:`~netfleet.catalog.manifest.INGESTED`), and what is already in is
    the manifest's rule — a file whose stat is its row's is not opened; one read again (new,
    changed, racy) whose run the catalog holds is skipped."""
    from netfleet.catalog.manifest import INGESTED
    from netfleet.catalog.register import load
    from netfleet.catalog.sourcelist import Options

    top = os.path.abspath(root.path)
    done = load(
        lambda: _listed(top),
        [top],
        catalog,
        lambda: Options("", {}, None, entry=INGESTED),
        None,
        INGESTED,
        workers=workers or max(1, min(os.cpu_count() or 1, 4)),
        progress=progress,
        batch_runs=batch_runs,
        batch_rows=batch_rows,
        task_files=1,  # a file a task in this process: the batch budgets checked after each
    )
    report = IngestReport(catalog, seen=done.unchanged + len(done.bad), seconds=done.seconds)
    report.ingested = len(done.registered)
    report.seen += report.ingested + len(done.touched) + len(done.duplicates) + len(done.already)
    report.skipped = report.seen - report.ingested - len(done.bad)
    report.bad = [BadFile(path, reason) for path, reason in done.bad]
    report.batches = done.batches
    report.rows.update(done.rows)
    return report


def _listed(top: str) -> list[Found]:
    """The root's envelopes (:func:`local_entries`), each with its stat (none opened)."""
    from stat import S_ISREG

    from netfleet.catalog.sourcelist import Found

    out: list[Found] = []
    make = tuple.__new__
    for day, campaign, name in local_entries(Path(top)):
        path = f"{top}/{day}/{campaign}/{name}"
        try:
            st = os.stat(path, follow_symlinks=False)
        except OSError:
            out.append(Found(path, path, None))
            continue
        if S_ISREG(st.st_mode):
            out.append(make(Found, (path, path, st.st_size, st.st_mtime_ns, st.st_ino, None)))
        else:  # a link or another kind: refused when read (never followed)
            out.append(Found(path, path, st.st_size))
    return out


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


def _entries(folder: Path, prefix: str) -> list[str]:
    """Names of the directories (links followed, as Path.glob does) under ``folder``."""
    try:
        with os.scandir(folder) as it:
            return [e.name for e in it if e.name.startswith(prefix) and e.is_dir()]
    except OSError:
        return []


def load(
    files: list[Any],
    root: RawStore,
    writer: Writer,
    report: IngestReport,
    progress: Progress | None,
    total: int,
    batch_runs: int,
    batch_rows: int,
    workers: int | None,
) -> None:
    """The load loop of ``ingest``: tasks of envelopes read by the reader (in worker processes
    for many local files), each file settled (a run already in the catalog, or read twice, is
    skipped; a refused file is reported with its reason), the runs kept written by the writer
    a batch at a time (every ``batch_runs`` runs or ``batch_rows`` interval rows, between
    tasks)."""
    from netfleet.catalog import reader

    local = isinstance(root, ResultsRoot)
    count = (workers or max(1, min(os.cpu_count() or 1, 4))) if local else 1
    # in this process, a task a file (the batch budgets checked after each); in workers, tasks
    # of at most a batch's runs
    parallel = count > 1 and len(files) >= reader.PARALLEL_MIN
    size = min(reader.TASK_FILES, batch_runs) if parallel else 1
    with reader.pool(count, len(files)) as pool:
        for paths, outcomes, tables in reader.envelope_reads(files, root, pool, size):
            writer.take(tables)
            for path, (run_id, reason) in zip(paths, outcomes, strict=True):
                report.seen += 1
                if run_id is None:
                    report.bad.append(BadFile(str(path), str(reason)))
                elif run_id in writer.known or run_id in writer.first:
                    report.skipped += 1
                else:
                    writer.first[run_id] = str(path)
                    writer.keep(run_id)
                    report.ingested += 1
                if progress:
                    progress(report.seen, total)
            if writer.runs >= batch_runs or writer.rows >= batch_rows:
                writer.commit(report)
        writer.commit(report)
