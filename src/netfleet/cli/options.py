"""Options shared by several commands (one definition each)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from netfleet.report import OutputFormat, Tabular, render

CampaignOpt = Annotated[str | None, typer.Option("--campaign", help="only this campaign")]
FormatOpt = Annotated[
    OutputFormat, typer.Option("--format", "-f", help="table, json, csv or markdown")
]
ResultsOpt = Annotated[
    str | None,
    typer.Option(
        "--results",
        "-r",
        help="results root (path or URL) [env NETFLEET_RESULTS; default ./results]",
        show_default=False,
    ),
]
CatalogOpt = Annotated[
    str | None,
    typer.Option(
        "--catalog",
        "-c",
        help="catalog directory or s3://BUCKET/PREFIX [env NETFLEET_CATALOG; default ./catalog]",
        show_default=False,
    ),
]
LabStateOpt = Annotated[
    Path | None,
    typer.Option(
        "--state-dir",
        help="where lab state files live [env NETFLEET_STATE_DIR; default /run/netfleet/labs]",
        show_default=False,
    ),
]


def emit(data: Tabular, fmt: OutputFormat) -> None:
    """Print a Tabular in the chosen format (plain text for machine formats)."""
    from netfleet.cli.console import console
    from netfleet.text import printable

    out = render(data, fmt)
    if isinstance(out, str):
        print(out)
        if data.notes and fmt is OutputFormat.csv:
            # the CSV stays pure (header and rows): its notes — the same as the table's — go
            # to stderr, always, so an empty CSV never reads as success without a reason
            for note in data.notes:
                print(f"note: {printable(note, keep_newlines=False)}", file=sys.stderr)
    else:
        console.print(out)
