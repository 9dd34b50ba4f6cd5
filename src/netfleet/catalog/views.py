"""DuckDB views over the committed Parquet parts: ``runs``, ``intervals``, ``ends``.

``intervals`` holds only rows whose ``bits_per_second`` a link can carry (or none): NaN,
infinite, negative or above :data:`netfleet.units.MAX_RATE` — a broken or forged raw file —
never reach a statistic of any report reading the catalog (:data:`PLAUSIBLE`, the SQL of
:func:`netfleet.units.plausible_rate`). ``intervals_stored`` has every row as ingested;
:func:`impossible_note` counts the difference for the reports' notes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import duckdb

from netfleet.catalog.httpfs import enable_s3
from netfleet.catalog.layout import committed_parts
from netfleet.catalog.remote import S3Catalog, is_s3
from netfleet.units import MAX_RATE, fmt_rate

#: an interval row a statistic may use: no rate, or one :func:`netfleet.units.plausible_rate`
#: accepts (DuckDB orders NaN above every number, so BETWEEN refuses it too)
PLAUSIBLE = (
    "bits_per_second IS NULL OR (isfinite(bits_per_second)"
    f" AND bits_per_second BETWEEN 0 AND {MAX_RATE:.0f})"
)
#: the view with every interval row as ingested
STORED = "intervals_stored"


def _sql_list(paths: list[Any]) -> str:
    return "[" + ", ".join("'" + str(p).replace("'", "''") + "'" for p in paths) + "]"


def connect(catalog_dir: str | os.PathLike[str]) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with one view per catalog table.

    ``catalog_dir`` may be an ``s3://BUCKET/PREFIX`` URL (:mod:`netfleet.catalog.remote`).
    Only parts of committed batches are read (see :mod:`netfleet.catalog.layout`), so an
    interrupted ingest never shows interval or end rows without their run. Raises
    :class:`~netfleet.errors.CatalogError` when nothing was ingested yet.
    """
    parts: dict[str, list[Any]]
    if is_s3(catalog_dir):  # a catalog on S3: committed parts listed by boto3, read by httpfs
        parts = dict(S3Catalog.parse(str(catalog_dir)).committed_urls())
        con = duckdb.connect(":memory:")
        enable_s3(con)
    else:
        parts = dict(committed_parts(Path(catalog_dir)))
        con = duckdb.connect(":memory:")
    for table, paths in parts.items():
        name = STORED if table == "intervals" else table
        if not paths:  # a table added after these parts were written: an empty view
            _empty_view(con, table, name)
        else:  # table names are ours; paths are quoted by _sql_list
            con.execute(
                f"CREATE VIEW {name} AS SELECT * FROM read_parquet({_sql_list(paths)}, "  # noqa: S608
                "union_by_name = true)"
            )
        if table == "intervals":
            con.execute(f"CREATE VIEW intervals AS SELECT * FROM {STORED} WHERE {PLAUSIBLE}")  # noqa: S608
    return con


def impossible_count(con: duckdb.DuckDBPyConnection) -> int:
    """Interval rows ``intervals`` leaves out: rates no link can carry."""
    row = con.execute(f"SELECT count(*) FROM {STORED} WHERE NOT ({PLAUSIBLE})").fetchone()  # noqa: S608
    return int(row[0]) if row else 0


def impossible_note(catalog_dir: str | os.PathLike[str]) -> list[str]:
    """``[]``, or the note a report over the catalog shows: how many interval rows hold a rate
    no link can carry, left out of every statistic."""
    con = connect(catalog_dir)
    try:
        found = impossible_count(con)
    finally:
        con.close()
    return [impossible_text(found)] if found else []


def impossible_text(count: int) -> str:
    return (
        f"{count} interval row(s) in the catalog hold a rate no link can carry (NaN, infinite, "
        f"negative or above {fmt_rate(MAX_RATE)}: a broken or forged result): left out of "
        "every statistic (view intervals_stored in netfleet sql has them)"
    )


def _empty_view(con: duckdb.DuckDBPyConnection, table: str, name: str) -> None:
    """A view ``name`` with the table's columns and no rows."""
    import pyarrow as pa

    from netfleet.catalog.rows import SCHEMAS

    con.register(f"_empty_{table}", pa.Table.from_pylist([], schema=SCHEMAS[table]))
    con.execute(f"CREATE VIEW {name} AS SELECT * FROM _empty_{table}")  # noqa: S608
