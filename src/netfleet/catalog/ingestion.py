"""Raw results → Parquet catalog: idempotent, streaming, crash-safe.

* Idempotent: every root into every catalog goes through the catalog's one load loop
  (:func:`netfleet.catalog.register.load`): every envelope gets a manifest row, and a file whose
  stat (an S3 object's size and ETag) is its row's is not opened; one read (new, changed) whose
  run is in ``runs`` is skipped.
* Streaming: files are read one at a time; rows are flushed as one new batch of parts every
  ``batch_runs`` runs or ``batch_rows`` interval rows, so memory stays bounded.
* Crash-safe: see :mod:`netfleet.catalog.layout` — parts are written under temp names, fsynced,
  renamed with the runs part last (the commit marker); readers only see committed batches.
* A raw file that cannot be read or turned into rows is reported (path and reason) and skipped.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, cast

from netfleet.catalog.layout import TABLES, is_s3
from netfleet.catalog.pending import RAW_SUFFIX
from netfleet.catalog.remote import S3Catalog
from netfleet.errors import InputError
from netfleet.store.root import RawStore, ResultsRoot, as_root

if TYPE_CHECKING:
    from netfleet.catalog.sourcelist import Found
    from netfleet.store.s3 import S3Root

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
    #: of ``skipped``, the files whose stat (an object's size and ETag) was their manifest
    #: row's: not opened (but one modified within 2 s of its last read: read again to be sure)
    unchanged: int = 0
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
            f"the catalog ({self.unchanged} not opened), {len(self.bad)} bad "
            f"({self.seconds:.1f} s)"
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
    most 4; a few hundred files are read in this process; an S3 root's are read here). Every
    root and catalog goes through the one load loop and its manifest (the module's text)."""
    from netfleet.catalog.manifest import INGESTED
    from netfleet.catalog.register import load
    from netfleet.catalog.sourcelist import Options

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
    # results a failed upload left spooled locally (an S3 root) belong in the catalog too
    uploaded = root.flush_pending()
    if isinstance(root, ResultsRoot):
        top = os.path.abspath(root.path)
        source, listing = top, partial(_listed, top)
        count = workers or max(1, min(os.cpu_count() or 1, 4))
    else:  # an S3 root: its listing's size and ETag, its objects read in this process
        source, listing, count = root.url, partial(_objects, cast("S3Root", root)), 1
    done = load(
        listing,
        [source],
        Path(catalog_dir) if remote is None else remote.state_dir(),
        lambda: Options("", {}, None, entry=INGESTED),
        None,
        INGESTED,
        workers=count,
        progress=progress,
        batch_runs=batch_runs,
        batch_rows=batch_rows,
        task_files=1,  # a file a task in this process: the batch budgets checked after each
        remote=remote,
    )
    report = IngestReport(Path(catalog_dir) if remote is None else remote.url)
    report.uploaded, report.seconds, report.unchanged = uploaded, done.seconds, done.unchanged
    report.ingested = len(done.registered)
    report.seen = done.unchanged + len(done.bad) + report.ingested + len(done.touched)
    report.seen += len(done.duplicates) + len(done.already) + len(done.recovered)
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


def _objects(root: S3Root) -> list[Found]:
    """An S3 root's envelopes, each with its size and ETag (one listing, none read)."""
    from netfleet.catalog.sourcelist import Found

    return [Found(url, url, size, etag=etag) for url, size, etag in root.listed()]


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
