"""``netfleet analyze`` and ``netfleet credit calc``: burst vs baseline, and what a bucket lets
you do."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

import typer

from netfleet import api
from netfleet.analysis import (
    analyze_catalog,
    analyze_run,
)
from netfleet.catalog.pending import pending_notes
from netfleet.cli.options import CatalogOpt, FormatOpt, ResultsOpt, catalog_dir, emit, results_url
from netfleet.errors import InputError
from netfleet.report import OutputFormat
from netfleet.report.analysis_tables import calc_table, groups_table, runs_table
from netfleet.units import parse_rate, parse_size

RateOpt = Annotated[
    Literal["goodput", "wire"],
    typer.Option("--rate", help="goodput (as measured) or wire (L2, what clouds publish)"),
]
UnitOpt = Annotated[
    str, typer.Option("--unit", help="auto (Gbit from 1 Gbit/s up, else Mbit), kbit, mbit, gbit")
]
CampaignOpt = Annotated[str | None, typer.Option("--campaign", help="only this campaign")]
MatchOpt = Annotated[
    list[str] | None,
    typer.Option("--match", help="KEY=VALUE: only runs whose column or label matches (repeat)"),
]
_BARE = re.compile(r"^\s*[0-9.]+\s*$")


def _keys(text: str) -> tuple[str, ...]:
    keys = tuple(k.strip() for k in text.split(",") if k.strip())
    if not keys:
        raise InputError("--by needs at least one key", hint="e.g. --by instance_type,direction")
    return keys


def _match(items: list[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(
                f"--match {item!r} is not KEY=VALUE", hint="e.g. --match direction=out"
            )
        out[key.strip()] = value.strip()
    return out


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
    human = fmt in (OutputFormat.table, OutputFormat.markdown)
    keys = _keys(by)
    if run_id is not None:
        analyses = [analyze_run(results_url(results), run_id)]
        table = runs_table(analyses, keys, rate, unit, human)
    else:
        groups = analyze_catalog(catalog_dir(catalog), keys, campaign, _match(match))
        analyses = [a for g in groups for a in g.runs]
        table = (
            runs_table(analyses, keys, rate, unit, human)
            if runs
            else groups_table(groups, rate, unit, human)
        )
        table.notes += pending_notes(results_url(results), catalog_dir(catalog))
    if plot is not None:
        try:
            from netfleet.report.plots import analysis_figure

            fmt_: Literal["svg", "png"] = "png" if plot.suffix.lower() == ".png" else "svg"
            plot.write_bytes(analysis_figure(analyses, rate, unit, fmt=fmt_))
        except OSError as exc:
            raise InputError(f"cannot write the plot to {plot}: {exc}") from exc
    emit(table, fmt)


credit_app = typer.Typer(
    help="Network credits (token buckets): what a measured or given bucket lets you do.",
    no_args_is_help=True,
)


def _rate(option: str, text: str | None) -> float | None:
    if text is None:
        return None
    if _BARE.match(text):
        raise InputError(f"{option} {text}: give a unit", hint=f"e.g. {option} {text}gbit")
    try:
        return parse_rate(text)
    except ValueError as exc:
        raise InputError(f"{option}: {exc}") from None


def _bucket(text: str | None) -> float | None:
    if text is None:
        return None
    if _BARE.match(text):
        raise InputError(
            f"--bucket {text}: give a unit", hint=f"credits are Gbit: --bucket {text}gbit"
        )
    try:
        return parse_size(text) * 8
    except ValueError as exc:
        raise InputError(f"--bucket: {exc}") from None


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
    given = {
        "baseline": _rate("--baseline", baseline),
        "peak": _rate("--peak", peak),
        "bucket": _bucket(bucket),
    }
    answers = api.calc(
        run_id=run_id,
        results=results_url(results) if run_id is not None else None,
        catalog=Path(catalog_dir(catalog)) if run_id is None and (campaign or match) else None,
        campaign=campaign,
        match=_match(match),
        rate=rate,
        use=_rate("--use", use) or 0.0,
        burst_rate=_rate("--burst-rate", burst_rate),
        burst_seconds=burst_seconds,
        duty=duty,
        **given,
    )
    emit(calc_table(answers, unit, fmt in (OutputFormat.table, OutputFormat.markdown)), fmt)
