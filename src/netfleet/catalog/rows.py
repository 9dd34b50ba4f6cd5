"""Raw envelope → table rows: the engine-independent ``runs`` row, and the engine parsers (each
engine's ``table_rows``, from the engine registry) that produce ``intervals``, ``ends`` and
``latency`` rows. A run whose result is unusable still gets its ``runs`` row.
The tables' schemas live in :mod:`netfleet.catalog.schemas` (re-exported here), so a process
that only reads or writes the tables does not load the engines.
Column meanings are documented in docs/catalog.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from netfleet.catalog.runrow import (  # noqa: F401  (re-exported: their old home)
    RowError,
    RunRows,
    catalog_notes,
    run_row,
)
from netfleet.catalog.schemas import (  # noqa: F401  (re-exported: the schemas' old home)
    ENDS_SCHEMA,
    INTERVALS_SCHEMA,
    LATENCY_PHASES_SCHEMA,
    LATENCY_SAMPLES_SCHEMA,
    LATENCY_SCHEMA,
    RUNS_SCHEMA,
    SCHEMAS,
)
from netfleet.engines import ENGINES
from netfleet.engines.contract import TableRows
from netfleet.values import obj

TableParser = Callable[[str, Mapping[str, Any], Mapping[str, Any], Mapping[str, Any]], TableRows]

#: engine name (``engine.name`` in the envelope) → its catalog parser, derived from the engine
#: registry: ``(run_id, result, params, outputs)`` → table name → rows; a ``runs`` entry holds
#: one partial row whose non-NULL values fill the run's NULL columns (e.g. the chosen streams)
TABLE_PARSERS: dict[str, TableParser] = {name: e.table_rows for name, e in ENGINES.items()}


def envelope_rows(doc: Mapping[str, Any], source: str = "") -> RunRows:
    """All rows of one decoded raw file. Never raises on odd engine output (error shapes, empty
    ``end``, missing server output); raises :class:`RowError` when the envelope itself is
    unusable (no run_id, bad timestamps)."""
    run = run_row(doc, source)
    result = doc.get("result")
    name = run["engine"] or ""
    registered = ENGINES.get(name)  # an engine registered after this module was imported
    parser = TABLE_PARSERS.get(name) or (registered.table_rows if registered else None)
    if parser is None or not isinstance(result, Mapping):
        return RunRows(run)
    tables = parser(run["run_id"], result, obj(doc.get("params")), obj(doc.get("outputs")))
    for key, value in (tables.pop("runs", None) or [{}])[0].items():
        if run.get(key) is None and value is not None:
            run[key] = value
    intervals = tables.pop("intervals", [])
    ends = tables.pop("ends", [])
    return RunRows(run, intervals, ends, tables)
