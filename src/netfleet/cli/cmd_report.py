"""``netfleet report topology`` (seed 001's table), ``report loaded`` (latency under load and
responsiveness), ``report pps`` (packets per second) and ``netfleet report advice``."""

from __future__ import annotations

from typing import Annotated

import typer

from netfleet import api
from netfleet.cli import cmd_study
from netfleet.cli.options import CatalogOpt, FormatOpt, ResultsOpt, ScaleOpt, emit
from netfleet.report import OutputFormat

app = typer.Typer(help="Answers over the catalog and the raw results.", no_args_is_help=True)
app.command("html")(cmd_study.html)
app.command("price")(cmd_study.price)


@app.command()
def topology(
    catalog: CatalogOpt = None,
    results: ResultsOpt = None,
    by: Annotated[str, typer.Option("--by", help="label key or runs column")] = "topology",
    campaign: Annotated[str | None, typer.Option(help="only this campaign")] = None,
    fmt: FormatOpt = OutputFormat.table,
    scale: ScaleOpt = "lab",
) -> None:
    """Seed 001's summary: request/response latency, ping and throughput per topology label."""
    table = api.report_topology(
        catalog=catalog, results=results, by=by, campaign=campaign, scale=scale
    )
    emit(table, fmt)


@app.command()
def loaded(
    catalog: CatalogOpt = None,
    campaign: Annotated[
        list[str] | None, typer.Option(help="only this campaign (repeatable)")
    ] = None,
    fmt: FormatOpt = OutputFormat.table,
    scale: ScaleOpt = "lab",
) -> None:
    """Latency under load per phase (idle, up, down, both): RTT percentiles, inflation over
    idle, responsiveness in round trips per minute (RPM), loss, the load's goodput."""
    emit(api.report_loaded(catalog=catalog, campaign=campaign or (), scale=scale), fmt)


@app.command()
def pps(
    results: ResultsOpt = None,
    campaign: Annotated[str | None, typer.Option(help="only this campaign")] = None,
    fmt: FormatOpt = OutputFormat.table,
    scale: ScaleOpt = "lab",
) -> None:
    """Packets per second of every pps run: sent, arrived and delivered, loss, sender-,
    receiver- or path-limited, and the ENA allowance deltas (pps, conntrack, linklocal) around
    each run."""
    emit(api.report_pps(results=results, campaign=campaign, scale=scale), fmt)


@app.command()
def advice(
    results: ResultsOpt = None,
    catalog: CatalogOpt = None,
    campaign: Annotated[str | None, typer.Option(help="only this campaign")] = None,
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """Advice with evidence over raw results: CPU-bound runs, per-flow caps, gateway MTU,
    in/out asymmetry, retransmits, ENA allowances. Runs imported by reference into --catalog
    are read from their files (a missing or changed file is an error naming it)."""
    from netfleet.report.advice import advice_table

    emit(advice_table(api.advice(results=results, catalog=catalog, campaign=campaign)), fmt)
