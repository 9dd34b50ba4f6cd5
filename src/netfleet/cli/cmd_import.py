"""``netfleet import``: iperf3 / iperf 2 output made elsewhere → envelopes in the results root."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from netfleet import api
from netfleet.cli.console import console, file_bar
from netfleet.cli.options import ResultsOpt
from netfleet.errors import InputError


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
) -> None:
    """Import iperf3 JSON (-J or --json-stream) and iperf 2 output (-y C CSV, -e or plain text),
    client or server side, .gz or not, keeping each file's bytes untouched inside an envelope.
    Exit 2 if any file could not be imported."""
    with file_bar("import") as tick:
        report = api.import_(
            sources,
            results=results,
            campaign=campaign,
            label=label or (),
            pattern=pattern,
            side=side,
            progress=tick,
        )
    console.print(
        f"imported {len(report.imported)} file(s) into {escape(api.results_url(results))}"
    )
    for path, count in report.flagged:
        console.print(
            f"  [yellow]flagged[/] {escape(path)}: {count} interval value(s) that don't add up "
            "(see notes.imported.flags)"
        )
    for path, reason in report.bad:
        console.print(f"  [red]not imported[/] {escape(path)}: {escape(reason)}")
    if report.bad:
        raise InputError(
            f"{len(report.bad)} file(s) could not be imported",
            hint="the reasons are listed above; the other files were imported",
        )
