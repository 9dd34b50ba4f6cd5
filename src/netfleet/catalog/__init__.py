"""The catalog: raw results → Parquet tables (runs, intervals, ends) → DuckDB views and SQL.

::

    report = ingest("results/", Path("catalog/"))        # idempotent, streaming, crash-safe
    con = connect("catalog/")                            # DuckDB views runs / intervals / ends
    table = query("catalog/", "SELECT count(*) FROM runs")
    sheet = cheatsheet("catalog/", group_by=("instance_type", "direction"))

Tables and columns: docs/catalog.md.
"""

from netfleet.catalog.cheatsheet import CheatSheetData, cheatsheet_data
from netfleet.catalog.ingestion import BadFile, IngestReport, ingest
from netfleet.catalog.layout import CATALOG_FORMAT, TABLES
from netfleet.catalog.query import query
from netfleet.catalog.rows import SCHEMAS, RunRows, envelope_rows
from netfleet.catalog.views import connect

__all__ = [
    "CATALOG_FORMAT",
    "SCHEMAS",
    "TABLES",
    "BadFile",
    "CheatSheetData",
    "IngestReport",
    "RunRows",
    "cheatsheet_data",
    "connect",
    "envelope_rows",
    "ingest",
    "query",
]
