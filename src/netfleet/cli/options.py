"""Options shared by several commands (one definition each)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from netfleet.cli.emit import emit as emit
from netfleet.cli.emit import emit_all as emit_all
from netfleet.report import OutputFormat

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

MaxRunsOpt = Annotated[
    int | None,
    typer.Option(
        "--max-runs",
        min=1,
        help="refuse a campaign that plans more runs than this, before expanding it "
        "[env NETFLEET_MAX_RUNS; default 1,000,000]",
    ),
]

ScaleOpt = Annotated[
    Literal["lab", "cloud"],
    typer.Option(
        "--scale",
        help="a scaled lab's rates (label lab_scale): as measured (lab) or as the cloud "
        "figures they stand for (cloud: ÷ lab_scale, flagged)",
    ),
]
