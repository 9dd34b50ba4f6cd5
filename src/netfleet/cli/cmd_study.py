"""``netfleet report html`` (the study report, HTML or markdown) and ``netfleet report price``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

import typer

from netfleet import api
from netfleet.cli.console import console
from netfleet.cli.options import CatalogOpt, FormatOpt, ResultsOpt, emit
from netfleet.report import OutputFormat

CampaignsOpt = Annotated[
    list[str] | None,
    typer.Option("--campaign", help="only this campaign; repeatable (default: the whole catalog)"),
]


def html(
    catalog: CatalogOpt = None,
    results: ResultsOpt = None,
    campaign: CampaignsOpt = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="the report file")] = Path(
        "netfleet-report.html"
    ),
    fmt: Annotated[
        Literal["html", "markdown"],
        typer.Option("--format", "-f", help="html (one self-contained file) or markdown"),
    ] = "html",
    compare: Annotated[
        tuple[str, str] | None,
        typer.Option("--compare", help="A B: add a compare section (campaigns or KEY=VALUE)"),
    ] = None,
    target: Annotated[
        str | None, typer.Option(help="a sustained rate to meet, e.g. 5gbit (price section)")
    ] = None,
    title: Annotated[str | None, typer.Option(help="the report's title")] = None,
) -> None:
    """One file per study: summary with advice, cheat sheet (burst rows flagged), out vs in,
    measured ÷ advertised, burst vs baseline with the credit table, latency per topology,
    price per Gbit/s, compare, per-run appendix. Opens offline: no CDN, no script."""
    path = api.report_html(
        catalog=catalog,
        results=results,
        campaign=campaign or (),
        out=out,
        format=fmt,
        compare=compare,
        target=target,
        title=title,
    )
    console.print(f"report written: {path}", markup=False, highlight=False)


def price(
    catalog: CatalogOpt = None,
    campaign: CampaignsOpt = None,
    target: Annotated[
        str | None, typer.Option(help="the cheapest type meeting this sustained rate, e.g. 5gbit")
    ] = None,
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """$ per sustained and per peak Gbit/s and $/month: prices from the dated price table for
    cloud hosts (instance_type + region labels), else from price_per_hour labels."""
    result = api.report_price(catalog=catalog, campaign=campaign or (), target=target)
    if fmt is OutputFormat.json:
        print(json.dumps(result.records(), indent=2, default=str))
        return
    emit(result.table() if fmt is OutputFormat.csv else result.report_table()[0], fmt)
