"""``netfleet import``: iperf3 / iperf 2 output made elsewhere → envelopes in the results root."""

from __future__ import annotations

from typing import Annotated

import typer

from netfleet import api
from netfleet.cli.console import console, file_bar
from netfleet.cli.options import ResultsOpt
from netfleet.errors import InputError, PartlyDone
from netfleet.text import line


def import_(
    sources: Annotated[list[str], typer.Argument(help="files, folders or quoted globs")],
    results: ResultsOpt = None,
    campaign: Annotated[str, typer.Option(help="campaign the runs are filed under")] = "imported",
    label: Annotated[
        list[str] | None, typer.Option("--label", help="key=value label for every run")
    ] = None,
    pattern: Annotated[
        str | None,
        typer.Option(
            help="labels from the path: a preset ("
            + ", ".join(f"{k} = {v}" for k, v in api.IMPORT_PRESETS.items())
            + ") or a pattern with {name} placeholders"
        ),
    ] = None,
    side: Annotated[
        str,
        typer.Option(
            help="whose output the files are: " + "|".join(api.IMPORT_SIDES) + " (auto: iperf3 "
            "JSON and iperf2 text say it; iperf2 CSV from 'server' in the file name, else client)"
        ),
    ] = "auto",
    follow_links: Annotated[
        bool, typer.Option("--follow-links", help="read files through symbolic links")
    ] = False,
) -> None:
    """Import iperf3 JSON (-J or --json-stream) and iperf 2 output (-y C CSV, -e or plain text),
    client or server side, .gz or not, keeping each file's bytes untouched inside an envelope.
    Links and special files are refused unless --follow-links. Exit 3 if some files could not
    be imported (the others are), 2 if none could."""
    with file_bar("import") as tick:
        report = api.import_(
            sources,
            results=results,
            campaign=campaign,
            label=label or (),
            pattern=pattern,
            side=side,
            progress=tick,
            follow_links=follow_links,
        )
    dups = f", {len(report.duplicates)} duplicate(s)" if report.duplicates else ""
    dups += f", {len(report.already)} already imported" if report.already else ""
    url = line(api.results_url(results))
    console.print(f"imported {len(report.imported)} file(s){dups} into {url}")
    for path, first in report.duplicates:
        console.print(f"  duplicate {line(path)}: the same run as {line(first)}")
    for path, run_id in report.already:
        console.print(f"  duplicate {line(path)}: already imported as {line(run_id)}")
    for path, count in report.flagged:
        console.print(
            f"  [yellow]flagged[/] {line(path)}: {count} interval value(s) that don't add up "
            "(see notes.imported.flags)"
        )
    for path, reason in report.bad:
        console.print(f"  [red]not imported[/] {line(path)}: {line(reason)}")
    if report.bad and not (report.imported or report.duplicates or report.already):
        raise InputError(
            f"{len(report.bad)} file(s) could not be imported, none was",
            hint="the reasons are listed above",
        )
    if report.bad:  # exit 3: finished, some refused
        raise PartlyDone(
            f"{len(report.bad)} file(s) could not be imported",
            hint="the reasons are listed above; the other files were imported",
        )
