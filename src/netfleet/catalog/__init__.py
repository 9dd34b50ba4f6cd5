"""The catalog: raw results → Parquet tables (runs, intervals, ends) → DuckDB views and SQL.

::

    report = ingest("results/", Path("catalog/"))        # idempotent, streaming, crash-safe
    con = connect("catalog/")                            # DuckDB views runs / intervals / ends
    table = query("catalog/", "SELECT count(*) FROM runs")
    sheet = cheatsheet("catalog/", group_by=("instance_type", "direction"))

Tables and columns: docs/catalog.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

    from netfleet.catalog.build import RunRows, envelope_rows
    from netfleet.catalog.cheatsheet import CheatSheetData, cheatsheet_data
    from netfleet.catalog.ingestion import BadFile, IngestReport, ingest
    from netfleet.catalog.layout import CATALOG_FORMAT, TABLES
    from netfleet.catalog.schemas import SCHEMAS
    from netfleet.catalog.views import connect

#: name → module; imported on first use, so ``netfleet ingest`` with nothing new to add loads
#: neither DuckDB nor pyarrow
_LAZY = {
    "CheatSheetData": "cheatsheet",
    "cheatsheet_data": "cheatsheet",
    "BadFile": "ingestion",
    "IngestReport": "ingestion",
    "ingest": "ingestion",
    "CATALOG_FORMAT": "layout",
    "TABLES": "layout",
    "SCHEMAS": "schemas",
    "RunRows": "build",
    "envelope_rows": "build",
    "connect": "views",
}


# eager: a submodule of the same name would shadow a lazy ``query`` once imported (cheap)
from netfleet.catalog.query import query  # noqa: E402


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'netfleet.catalog' has no attribute {name!r}")
    return getattr(importlib.import_module(f"netfleet.catalog.{_LAZY[name]}"), name)


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
