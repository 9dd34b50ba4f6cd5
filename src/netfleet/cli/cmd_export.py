"""``netfleet export``: DDL and the cheat-sheet query for Athena, Trino or Spark."""

from __future__ import annotations

from typing import Annotated

import typer

from netfleet import api
from netfleet.cli.console import bar_when_needed


def export(
    dialect: Annotated[str, typer.Argument(help="athena, trino or spark")],
    location: Annotated[
        str, typer.Option(help="where the raw results are (s3://bucket/prefix or a path)")
    ] = "s3://BUCKET/PREFIX",
    catalog: Annotated[
        str,
        typer.Option(
            help="where the Parquet catalog is (s3://bucket/prefix or a path; a local catalog's "
            "Hive partitions are read from its folders)"
        ),
    ] = "s3://BUCKET/CATALOG",
    side: Annotated[
        str,
        typer.Option(
            help="whose interval sums the catalog query reads: receiver (default, the truthful "
            "series) or sender (all a client-only -J file has)"
        ),
    ] = "receiver",
) -> None:
    """Print the DDL over the raw results layout and the Parquet catalog (runs, intervals, ends),
    each with its cheat-sheet query, in the given engine's dialect (docs/scale.md: when to use
    which, and the quantile definitions)."""
    with bar_when_needed("streams") as tick:
        text = api.export(dialect, location=location, catalog=catalog, side=side, progress=tick)
    print(text, end="")
