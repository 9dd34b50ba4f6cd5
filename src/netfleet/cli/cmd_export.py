"""``netfleet export``: DDL and the cheat-sheet query for Athena, Trino or Spark."""

from __future__ import annotations

from typing import Annotated

import typer

from netfleet.catalog.export import Dialect, export_sql


def export(
    dialect: Annotated[str, typer.Argument(help="athena, trino or spark")],
    location: Annotated[
        str, typer.Option(help="where the raw results are (s3://bucket/prefix or a path)")
    ] = "s3://BUCKET/PREFIX",
) -> None:
    """Print the DDL over the raw results layout and seed 002's cheat-sheet query in the given
    engine's dialect (see docs/scale.md for the quantile definitions)."""
    from netfleet.errors import InputError

    if dialect not in ("athena", "trino", "spark"):
        raise InputError(f"export {dialect!r}: unknown dialect", hint="use athena, trino or spark")
    d: Dialect = dialect  # type: ignore[assignment]
    print(export_sql(d, location), end="")
