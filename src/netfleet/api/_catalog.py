"""``cheatsheet``, ``sql`` and ``export``: answers from the catalog."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Literal

from netfleet.api._paths import catalog_dir, results_url

if TYPE_CHECKING:
    from netfleet.catalog.register import RegisterReport
    from netfleet.tabular import Tabular


def keys(by: str | Sequence[str], *, required: bool = True) -> tuple[str, ...]:
    """Group keys from ``"a,b"`` or ``("a", "b")`` (at least one if ``required``)."""
    from netfleet.errors import InputError

    items = by.split(",") if isinstance(by, str) else by
    found = tuple(k.strip() for k in items if k.strip())
    if required and not found:
        raise InputError("--by needs at least one key", hint="e.g. --by instance_type,direction")
    return found


def cheatsheet(
    *,
    catalog: str | os.PathLike[str] | None = None,
    results: str | None = None,
    by: str | Sequence[str] = ("instance_type", "direction"),
    side: Literal["receiver", "sender"] = "receiver",
    campaign: str | None = None,
    import_from: str | os.PathLike[str] | Iterable[str | os.PathLike[str]] = (),
    pattern: str | None = None,
    label: Iterable[str] = (),
    progress: Callable[[int, int], None] | None = None,
    imported: Callable[[RegisterReport], None] | None = None,
    scale: Literal["lab", "cloud"] = "lab",
) -> Tabular:
    """Min / p5 / avg / p50 / p95 / max of interval goodput (Gbit/s) per group, over complete
    runs with omitted intervals left out — seed 002's Athena query on DuckDB. ``by``: label
    keys or run columns. Raw results under ``results`` not yet in the catalog are noted.
    ``scale``: the rows of a scaled lab in the lab's figures (``lab``) or as the cloud figures
    they stand for (``cloud``: ÷ their ``lab_scale``, flagged ``cloud``).

    ``import_from``: files, folders, globs or ``s3://`` prefixes imported by reference into the
    catalog first, in the same call — as ``register(import_from, catalog=catalog,
    pattern=pattern, label=label)`` does (campaign ``imported``, side ``auto``; only what
    changed is read, ``progress(done, total)`` counting the files) — then the sheet of the
    whole catalog. ``imported(report)`` receives that import's ``RegisterReport`` (the files
    refused, changed, missing) before the sheet is made; a refused file never stops the
    others nor the sheet."""
    from netfleet.catalog.cheatsheet import cheatsheet_data
    from netfleet.errors import CatalogError

    sources = [import_from] if isinstance(import_from, (str, os.PathLike)) else list(import_from)
    labels = list(label)
    where = catalog_dir(catalog)
    if any(not os.fspath(s) for s in sources):
        from netfleet.errors import InputError

        raise InputError(
            "--import-from '': an empty source", hint="name a file, folder, glob or s3:// prefix"
        )
    group = keys(by, required=False)
    if sources:
        from netfleet.api._results import register

        told: list[int] = []  # the files the import reads (its first progress call)

        def ahead() -> None:  # while the workers read the last files (register.TAIL_FILES)
            if told[0] <= AHEAD_FILES:  # the sheet of the batches committed: its tally kept
                with contextlib.suppress(CatalogError):  # (the sheet after the import says it)
                    cheatsheet_data(where, group_by=group, side=side, campaign=campaign)

        report = register(
            sources,
            catalog=where,
            pattern=pattern,
            label=labels,
            progress=_loading(progress, told),
            ahead=ahead,
        )
        if report.read_files:  # a no-op gives back nothing
            # what the import freed, back to the system before the sheet's query in this
            # process. The files' names the report keeps were made by the listing, among
            # objects freed since: they held 60-70 MB of Python's arenas at 100,000 files
            # (1 MiB each, given back only when empty); copied now, they sit together
            from netfleet.catalog.memory import give_back

            report.registered = [_copy(name) for name in report.registered]
            give_back()
        if imported is not None:
            imported(report)
    elif pattern is not None or labels:
        from netfleet.errors import InputError

        raise InputError(
            "--pattern and --label name the labels of files imported by --import-from",
            hint="add --import-from FOLDER, or drop them",
        )
    from netfleet.report.cheatsheet import cheatsheet as build_cheatsheet

    # the raw results not yet ingested: those asked about, or the default root's when the
    # sheet is not of files just imported (their folder is not ./results: issue 36)
    pending = results_url(results) if results is not None or not sources else None
    try:
        return build_cheatsheet(
            where, group_by=group, side=side, campaign=campaign, results=pending, scale=scale
        )
    except CatalogError as exc:
        if "instance_type" not in group or not exc.message.startswith(NO_TYPE):
            raise
    # foreign files without an instance_type label: the sheet by client, and how to label them
    fallback = tuple(dict.fromkeys("client" if k == "instance_type" else k for k in group))
    table = build_cheatsheet(
        where, group_by=fallback, side=side, campaign=campaign, results=pending, scale=scale
    )
    table.notes.insert(0, NO_TYPE_NOTE)
    return table


#: files read at most for the sheet to be computed while the import's last files are read:
#: more, and its DuckDB memory (≈ 220 MB at 100,000 runs) would add to the import's own
AHEAD_FILES = 25_000

#: what the sheet's query loads (DuckDB ≈ 0.1 s of one core), loaded beside the import's workers
SHEET_MODULES = (
    "duckdb",
    "netfleet.catalog.views",
    "netfleet.catalog.sheetcache",
    "netfleet.catalog.sheetstate",
    "netfleet.report.cheatsheet",
)


def _loading(
    progress: Callable[[int, int], None] | None, told: list[int]
) -> Callable[[int, int], None]:
    """``progress``, loading :data:`SHEET_MODULES` at its first call — once the import's tasks
    are handed out — when workers read the files (``register.PARALLEL_MIN`` or more): loaded
    after the last task, they were the importing process's alone with a core idle. Fewer files
    (+100 files: the sheet from its kept tally, no DuckDB) and a no-op load none of them.
    ``told``: the files to read, added at that call."""
    import importlib

    from netfleet.catalog.register import PARALLEL_MIN

    def reading(done: int, total: int) -> None:
        if not told:
            told.append(total - done)
            for name in SHEET_MODULES if total - done >= PARALLEL_MIN else ():
                importlib.import_module(name)
        if progress is not None:
            progress(done, total)

    return reading


def _copy(text: str) -> str:
    """A new string equal to ``text`` (any str: a file name's undecodable bytes too)."""
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "surrogatepass")


#: the start of the catalog's error for a key no run has (``netfleet.catalog.cheatsheet``)
NO_TYPE = "unknown key 'instance_type'"
#: the note of a sheet grouped by client because no run has an instance type
NO_TYPE_NOTE = (
    "no run has an instance_type label, so the rows are by client instead (an imported file's "
    "hosts are 'client' and 'server'): label the files with --label instance_type=TYPE, or "
    "--pattern (e.g. seed002 for d={date}/{instance_type}-{epoch}.json.gz), to get a row per "
    "type"
)


def sql(
    statement: str,
    *,
    catalog: str | os.PathLike[str] | None = None,
    streams: bool | None = None,
    streams_of: Sequence[str] = (),
    progress: Callable[[int, int], None] | None = None,
) -> Tabular:
    """Run DuckDB SQL over the catalog's views (``runs``, ``intervals``, ``ends``,
    ``streams``). ``streams``: load the per-stream rows a catalog of registered files keeps
    lazy (True: built where missing, ``progress(done, total)`` counting the files read), or
    not (False); None: when the statement names ``streams``, ``stream_id`` or ``'stream'``.
    ``streams_of``: load only these runs' (read from their files now, nothing built)."""
    from netfleet.catalog.query import query

    wanted: bool | Sequence[str] | None = list(streams_of) if streams_of else streams
    return query(catalog_dir(catalog), statement, streams=wanted, progress=progress)


def export(
    dialect: str,
    *,
    location: str = "s3://BUCKET/PREFIX",
    catalog: str = "s3://BUCKET/CATALOG",
    side: str = "receiver",
    progress: Callable[[int, int], None] | None = None,
) -> str:
    """The DDL over the raw results layout and the Parquet catalog (runs, intervals, ends, the
    per-stream rows), each with its cheat-sheet query, in ``dialect`` (athena, trino or
    spark). A local catalog of registered files gets its per-stream rows built first (what is
    missing: ``progress(done, total)`` counts the files read)."""
    from netfleet.catalog.export import Dialect, export_sql
    from netfleet.errors import InputError

    if dialect not in ("athena", "trino", "spark"):
        raise InputError(f"export {dialect!r}: unknown dialect", hint="use athena, trino or spark")
    if side not in ("receiver", "sender"):
        raise InputError(f"--side {side!r}: unknown side", hint="use receiver or sender")
    d: Dialect = dialect  # type: ignore[assignment]
    if not catalog.startswith("s3://"):
        from pathlib import Path

        from netfleet.catalog.lazystreams import has_manifest, manifest_runs
        from netfleet.catalog.lazystreams_build import ensure_streams

        if has_manifest(Path(catalog)):
            ensure_streams(Path(catalog), manifest_runs(Path(catalog)), progress=progress)
    return export_sql(d, location, catalog, side=side)
