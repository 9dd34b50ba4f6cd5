"""``netfleet analyze`` and ``netfleet credit calc``: burst vs baseline, and what a bucket lets
you do."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from netfleet import api
from netfleet.cli.options import CampaignOpt, CatalogOpt, FormatOpt, ResultsOpt, emit
from netfleet.report import OutputFormat

RateOpt = Annotated[
    Literal["goodput", "wire"],
    typer.Option("--rate", help="goodput (as measured) or wire (L2, what clouds publish)"),
]
UnitOpt = Annotated[
    str, typer.Option("--unit", help="auto (Gbit from 1 Gbit/s up, else Mbit), kbit, mbit, gbit")
]
MatchOpt = Annotated[
    list[str] | None,
    typer.Option("--match", help="KEY=VALUE: only runs whose column or label matches (repeat)"),
]


def analyze(
    run_id: Annotated[
        str | None,
        typer.Argument(
            metavar="[RUN_ID]",
            help="one run (its id, or a raw .json.gz file); omit to analyse groups of the catalog",
            show_default=False,
        ),
    ] = None,
    results: ResultsOpt = None,
    catalog: CatalogOpt = None,
    campaign: CampaignOpt = None,
    by: Annotated[
        str, typer.Option("--by", help="group keys: label keys or run columns, comma-separated")
    ] = "instance_type,direction",
    match: MatchOpt = None,
    runs: Annotated[
        bool, typer.Option("--runs", help="one row per run instead of one per group")
    ] = False,
    rate: RateOpt = "goodput",
    unit: UnitOpt = "auto",
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot", help="write a plot of the series, levels and burst end here (.svg or .png)"
        ),
    ] = None,
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """Segment each run's receiver series (steady, burst-then-baseline, erratic, inconclusive)
    and estimate the credit bucket: peak, baseline, time at peak, credit (Gbit), each with ±."""
    from netfleet.report.analysis_tables import groups_table, runs_table

    human = fmt in (OutputFormat.table, OutputFormat.markdown)
    terminal = fmt is OutputFormat.table  # a scaled lab's cloud figures: a row, not one cell
    found = api.analyze(
        run_id,
        results=results,
        catalog=catalog,
        campaign=campaign,
        by=by,
        match=match,
        rate=rate,
        unit=unit,
        plot=plot,
    )
    if found.groups is None or runs:
        table = runs_table(found.runs, found.by, rate, unit, human, terminal)
    else:
        table = groups_table(found.groups, rate, unit, human, cloud_rows=terminal)
    table.notes += found.notes
    emit(table, fmt)


credit_app = typer.Typer(
    help="Network credits (token buckets): what a measured or given bucket lets you do.",
    no_args_is_help=True,
)


@credit_app.command("calc")
def calc(
    run_id: Annotated[
        str | None,
        typer.Argument(
            metavar="[RUN_ID]", help="take the bucket from this run", show_default=False
        ),
    ] = None,
    results: ResultsOpt = None,
    catalog: CatalogOpt = None,
    campaign: CampaignOpt = None,
    match: MatchOpt = None,
    baseline: Annotated[str | None, typer.Option(help="baseline ρ, e.g. 0.75gbit")] = None,
    peak: Annotated[str | None, typer.Option(help="peak C, e.g. 10gbit")] = None,
    bucket: Annotated[
        str | None, typer.Option(help="bucket σ, e.g. 2700gbit (1 credit = 1 Gbit)")
    ] = None,
    use: Annotated[
        str | None, typer.Option(help="average use u outside bursts, e.g. 0.6gbit")
    ] = None,
    burst_rate: Annotated[
        str | None, typer.Option("--burst-rate", help="burst rate X (default: the peak)")
    ] = None,
    burst_seconds: Annotated[
        float | None, typer.Option("--burst-seconds", help="burst length b in s, e.g. 10")
    ] = None,
    duty: Annotated[
        float | None, typer.Option("--duty", help="duty cycle f: fraction of time bursting")
    ] = None,
    rate: RateOpt = "goodput",
    unit: UnitOpt = "auto",
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """How long can I burst at X if my average use is u, how long does a refill take, what
    rate does a duty cycle sustain — from a measured run or group, or from given numbers."""
    from netfleet.report.analysis_tables import calc_table

    answers = api.calc(
        run_id,
        results=results,
        catalog=catalog,
        campaign=campaign,
        match=match,
        rate=rate,
        baseline=baseline,
        peak=peak,
        bucket=bucket,
        use=use,
        burst_rate=burst_rate,
        burst_seconds=burst_seconds,
        duty=duty,
    )
    emit(calc_table(answers, unit, fmt in (OutputFormat.table, OutputFormat.markdown)), fmt)
