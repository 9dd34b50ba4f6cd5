"""``import_files``, ``register``, ``ingest`` and ``verify``: results netfleet did not run, and raw
results → the catalog."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from netfleet.api._paths import catalog_dir, results_url
from netfleet.errors import InputError

if TYPE_CHECKING:
    from netfleet.catalog.ingestion import IngestReport
    from netfleet.catalog.register import RegisterReport
    from netfleet.catalog.verify import VerifyReport
    from netfleet.store.imports import ImportReport

#: the path presets and sides :func:`import_files` and :func:`register` know
#: (``netfleet.store.imports``; a test keeps them equal — the CLI's help names them without
#: importing the store)
IMPORT_PRESETS = {"seed002": "d={date}/{instance_type}-{epoch}.json.gz"}
IMPORT_SIDES = ("auto", "client", "server")
#: ``progress(done, total)``, called as files are handled (the total is known once it starts)
Progress = Callable[[int, int], None]


def import_files(
    sources: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    results: str | None = None,
    campaign: str = "imported",
    label: Iterable[str] = (),
    pattern: str | None = None,
    side: str = "auto",
    workers: int | None = None,
    progress: Progress | None = None,
    follow_links: bool = False,
) -> ImportReport:
    """Import iperf3 JSON (-J or --json-stream) and iperf 2 output (-y C CSV, -e or plain text),
    client or server side, .gz or not, into the results root: each file's bytes kept untouched
    inside an envelope, which :func:`ingest` then turns into catalog rows.

    ``sources``: files, folders or globs. ``label``: ``key=value`` for every run. ``pattern``:
    labels from the path (a preset such as ``seed002``, or ``{name}`` placeholders). A file that
    cannot be imported is listed in ``ImportReport.bad`` with its reason; the others are
    imported (links and special files are refused unless ``follow_links``). A file repeating
    another of this import (same bytes, campaign and labels) is in ``ImportReport.duplicates``,
    one whose run an earlier import wrote in ``ImportReport.already`` (with its run id); neither
    is written again. ``workers`` default: one per CPU, at most 4 (a script must then guard its
    entry point with ``if __name__ == "__main__"``)."""
    from netfleet.store import open_root
    from netfleet.store.imports import import_files as run_import
    from netfleet.store.sources import default_workers

    return run_import(
        _paths(sources),
        open_root(results_url(results)),
        campaign=campaign,
        labels=label,
        pattern=pattern,
        side=side,
        progress=progress,
        workers=default_workers() if workers is None else workers,
        follow_links=follow_links,
    )


def register(
    sources: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    catalog: str | os.PathLike[str] | None = None,
    campaign: str = "imported",
    label: Iterable[str] = (),
    pattern: str | None = None,
    side: str = "auto",
    workers: int | None = None,
    progress: Progress | None = None,
    follow_links: bool = False,
    keep_copy: str | None = None,
    ahead: Callable[[], object] | None = None,
) -> RegisterReport:
    """Import the same files by reference into ``catalog`` (docs/import.md): no envelope; each
    file is read once and registered in the catalog's manifest, its run's rows (runs, ends,
    interval sums) written into the catalog; sources may be ``s3://`` prefixes; importing
    again reads only the files whose stat changed. Options as :func:`import_files`'s.

    Returns a ``RegisterReport`` (registered, unchanged, changed, touched, missing, bad,
    duplicates, already, recovered, retired runs, the manifest's generation). ``keep_copy``: a
    folder or ``s3://`` prefix where each file read is kept as it is (a root-owned copy or
    reflink, a hardlink only to a file the user owns; S3 to S3 server-side), named by its
    SHA-256; a file no longer the one read is refused. ``ahead()`` is called once, with workers,
    while they read the last files (what landed before them is committed): :func:`cheatsheet`
    computes the sheet there."""
    from netfleet.catalog.register import register as run_register
    from netfleet.store.sources import default_workers

    return run_register(
        _paths(sources),
        catalog_dir(catalog),
        campaign=campaign,
        labels=label,
        pattern=pattern,
        side=side,
        workers=default_workers() if workers is None else workers,
        follow_links=follow_links,
        keep_copy=keep_copy,
        progress=progress,
        ahead=ahead,
    )


def _paths(sources: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> list[str]:
    if isinstance(sources, (str, os.PathLike)):
        sources = [sources]
    return [os.fspath(s) for s in sources]


def ingest(
    *,
    results: str | None = None,
    catalog: str | os.PathLike[str] | None = None,
    progress: Progress | None = None,
) -> IngestReport:
    """Turn raw result files into the Parquet catalog. Idempotent: only new runs are added."""
    from netfleet.catalog.ingestion import ingest as run_ingest
    from netfleet.store import open_root

    return run_ingest(open_root(results_url(results)), catalog_dir(catalog), progress=progress)


def verify(
    *,
    catalog: str | os.PathLike[str] | None = None,
    prune: bool = False,
    dry_run: bool = False,
    yes: bool = False,
    ask: Callable[[str], bool] | None = None,
) -> VerifyReport:
    """Hash every file the catalog's manifest holds again (an import by reference) and report
    the changed (rewritten since), corrupt (other bytes, same stat, or unreadable) and missing
    ones (a kept copy holding the bytes is named); files refused when read and gone since are
    listed apart (no run: not a problem). Writes nothing, unless ``prune``: the missing and
    gone-refused files are then forgotten — their manifest rows retired, their runs out of the
    catalog — once ``yes`` or ``ask(question)`` answers True (``dry_run``: named, nothing
    written). Nothing on disk is deleted."""
    from netfleet.catalog.verify import prune as forget_gone
    from netfleet.catalog.verify import verify as run_verify

    where = catalog_dir(catalog)
    if isinstance(where, str):  # an s3:// URL
        raise InputError(
            f"{where}: netfleet verify hashes the files of a local catalog's manifest",
            hint="an S3 catalog's manifest (its manifest.parquet object, written by ingest) is "
            "not verified yet; ingest the same results into a local catalog to verify them",
        )
    report = run_verify(where)
    if not prune or not report.prunable:
        return report
    if dry_run:
        return forget_gone(report, dry_run=True)
    runs = len(report.runs)
    question = (
        f"forget {len(report.prunable)} file(s) gone from their source"
        f" and take their {runs} run(s) out of {report.catalog_dir}?"
    )
    if not yes:
        if ask is None:
            raise InputError(
                f"{report.catalog_dir}: --prune would forget {len(report.prunable)} file(s)"
                f" and {runs} run(s); nothing was changed",
                hint="confirm with --yes (api: yes=True), or list them first with --dry-run",
            )
        if not ask(question):
            return report
    return forget_gone(report)
