"""``netfleet ingest``, ``cheatsheet`` and ``sql``: from raw files to answers."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from netfleet import api
from netfleet.cli import registered
from netfleet.cli.boundary import err_console
from netfleet.cli.console import bar_when_needed, console, file_bar
from netfleet.cli.options import CatalogOpt, FormatOpt, ResultsOpt, ScaleOpt, emit
from netfleet.errors import NetfleetError
from netfleet.report import OutputFormat
from netfleet.text import line

if TYPE_CHECKING:
    from netfleet.api import RegisterReport


def ingest(results: ResultsOpt = None, catalog: CatalogOpt = None) -> None:
    """Turn raw result files into the Parquet catalog. Idempotent: only new runs are added."""
    with file_bar("ingest") as tick:
        report = api.ingest(results=results, catalog=catalog, progress=tick)
    console.print(report.summary())
    for path, reason in report.bad:
        console.print(f"  [yellow]skipped[/] {line(path)}: {line(reason)}")


def cheatsheet(
    catalog: CatalogOpt = None,
    results: ResultsOpt = None,
    by: Annotated[
        str, typer.Option("--by", help="comma-separated label keys or run columns")
    ] = "instance_type,direction",
    side: Annotated[
        Literal["receiver", "sender"], typer.Option(help="receiver (truthful) or sender")
    ] = "receiver",
    campaign: Annotated[str | None, typer.Option(help="only this campaign")] = None,
    fmt: FormatOpt = OutputFormat.table,
    import_from: Annotated[
        list[str] | None,
        typer.Option(
            "--import-from",
            metavar="SOURCE",
            help="first import these files, folders, globs or s3:// prefixes by reference into "
            "--catalog, in the same process (as `netfleet import SOURCE --catalog CAT` does; "
            "only what changed is read; its report on stderr) (repeatable)",
        ),
    ] = None,
    pattern: Annotated[
        str | None,
        typer.Option(
            help="with --import-from: labels from the path, a preset ("
            + ", ".join(api.IMPORT_PRESETS)
            + ") or a pattern with {name} placeholders (as netfleet import --pattern)"
        ),
    ] = None,
    label: Annotated[
        list[str] | None,
        typer.Option("--label", help="with --import-from: key=value label for every run"),
    ] = None,
    scale: ScaleOpt = "lab",
) -> None:
    """Min / p5 / avg / p50 / p95 / max of interval goodput (Gbit/s) per group, over complete
    runs with omitted intervals left out — seed 002's Athena query on DuckDB. With
    --import-from, from a folder to the sheet in one command: the import's report goes to
    stderr, the sheet alone to stdout; exit 3 if some files could not be imported (the sheet
    is printed), 2 if none could (docs/import.md)."""
    reports: list[RegisterReport] = []

    def imported(report: RegisterReport) -> None:
        reports.append(report)
        print(registered.summary(report), file=sys.stderr)
        if registered.has_details(report):
            registered.details(report, err_console())

    with bar_when_needed("import") as tick:
        try:
            sheet = api.cheatsheet(
                catalog=catalog,
                results=results,
                by=by,
                side=side,
                campaign=campaign,
                import_from=import_from or (),
                pattern=pattern,
                label=label or (),
                progress=tick,
                imported=imported,
                scale=scale,
            )
        except NetfleetError:  # no sheet: the import's own failure (every file refused) first
            _outcomes(reports)
            raise
    emit(sheet, fmt)
    _outcomes(reports)


def _outcomes(reports: list[RegisterReport]) -> None:
    """Exit as the import said: 3 when some files were refused, 2 when every file was."""
    for report in reports:
        registered.registered_outcome(report)


def sql(
    statement: Annotated[
        str, typer.Argument(metavar="SQL", help="DuckDB SQL over views runs, intervals, ends")
    ],
    catalog: CatalogOpt = None,
    streams: Annotated[
        bool | None,
        typer.Option(
            "--streams/--no-streams",
            help="load the per-stream rows of registered files (default: when the SQL names "
            "streams, stream_id or 'stream')",
        ),
    ] = None,
    streams_of: Annotated[
        list[str] | None,
        typer.Option(
            "--streams-of",
            metavar="RUN_ID",
            help="load only these runs' per-stream rows, read from their files now (repeatable)",
        ),
    ] = None,
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """Run DuckDB SQL over the catalog's views."""
    with bar_when_needed("streams") as tick:
        table = api.sql(
            statement, catalog=catalog, streams=streams, streams_of=streams_of or (), progress=tick
        )
    emit(table, fmt)
