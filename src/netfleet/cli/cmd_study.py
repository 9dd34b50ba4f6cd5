"""``netfleet report html`` (the study report, HTML or markdown) and ``netfleet report price``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

import typer

from netfleet.cli.console import console
from netfleet.cli.options import CatalogOpt, FormatOpt, ResultsOpt, catalog_dir, emit, results_url
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
    from netfleet.catalog.pending import pending_notes
    from netfleet.report.document import Paragraph
    from netfleet.report.html import write_report
    from netfleet.report.study_report import build_document

    cat = catalog_dir(catalog)
    doc = build_document(cat, campaign or (), compare=compare, target=target, title=title)
    if doc.sections:  # un-ingested raw results: said first, in the summary
        doc.sections[0].blocks[:0] = [
            Paragraph(n, "warn") for n in pending_notes(results_url(results), cat)
        ]
    path = write_report(doc, out, fmt)
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
    from netfleet import pricetable
    from netfleet.report.price import price_performance

    table = pricetable.load(pricetable.default_state_root())
    result = price_performance(catalog_dir(catalog), campaign or (), target=target, table=table)
    if fmt is OutputFormat.json:
        print(json.dumps(result.records(), indent=2, default=str))
        return
    emit(result.table() if fmt is OutputFormat.csv else result.report_table()[0], fmt)
