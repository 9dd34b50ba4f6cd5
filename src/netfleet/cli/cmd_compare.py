"""``netfleet compare A B``: two campaigns (or any two selections of runs) with confidence."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.markup import escape

from netfleet import api
from netfleet.cli.options import CatalogOpt, FormatOpt, emit
from netfleet.report import OutputFormat


def compare(
    a: Annotated[str, typer.Argument(help="A: a campaign name or KEY=VALUE[,KEY=VALUE]")],
    b: Annotated[str, typer.Argument(help="B: a campaign name or KEY=VALUE[,KEY=VALUE]")],
    catalog: CatalogOpt = None,
    by: Annotated[
        list[str] | None,
        typer.Option("--by", help="group key (runs column or label); repeatable"),
    ] = None,
    metric: Annotated[
        list[str] | None,
        typer.Option(
            "--metric", help=f"one of {', '.join(api.COMPARE_METRICS)}; repeatable (default: all)"
        ),
    ] = None,
    level: Annotated[float, typer.Option(help="confidence level of the interval")] = 0.95,
    resamples: Annotated[int, typer.Option(help="bootstrap resamples")] = 10_000,
    seed: Annotated[int, typer.Option(help="bootstrap seed (same seed, same interval)")] = 0,
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """Per metric and group: B − A with a bootstrap confidence interval, Hedges' g and a verdict
    (better / worse / no significant difference), or "too few runs" when a side has < 3."""
    result = api.compare(
        a,
        b,
        catalog=catalog,
        by=by,
        metric=metric,
        level=level,
        resamples=resamples,
        seed=seed,
    )
    if fmt is OutputFormat.json:
        print(json.dumps(result.records(), indent=2, default=str))
        return
    table = result.table()
    if fmt is OutputFormat.table:
        table.title = escape(table.title or "")
    emit(table, fmt)
