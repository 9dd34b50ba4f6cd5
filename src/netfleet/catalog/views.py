"""DuckDB views over the committed Parquet parts: ``runs``, ``intervals``, ``ends``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import duckdb

from netfleet.catalog.httpfs import enable_s3
from netfleet.catalog.layout import committed_parts
from netfleet.catalog.remote import S3Catalog, is_s3


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
        if not paths:  # a table added after these parts were written: an empty view
            _empty_view(con, table)
            continue
        # table names are ours; paths are quoted by _sql_list
        con.execute(
            f"CREATE VIEW {table} AS SELECT * FROM read_parquet({_sql_list(paths)}, "  # noqa: S608
            "union_by_name = true)"
        )
    return con


def _empty_view(con: duckdb.DuckDBPyConnection, table: str) -> None:
    """A view with the table's columns and no rows."""
    import pyarrow as pa

    from netfleet.catalog.rows import SCHEMAS

    con.register(f"_empty_{table}", pa.Table.from_pylist([], schema=SCHEMAS[table]))
    con.execute(f"CREATE VIEW {table} AS SELECT * FROM _empty_{table}")  # noqa: S608
