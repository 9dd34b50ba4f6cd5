"""A run's rows, by one builder per engine: the ``runs`` row from the tables' declaration
(:func:`netfleet.catalog.columns.run_row`) and the engine's own rows (each engine's
``table_rows``, from the engine registry: ``intervals``, ``ends``, ``latency`` …). Every way
into the catalog — an ingested envelope, a foreign file imported by reference — builds its
rows here. A run whose result is unusable still gets its ``runs`` row.
Column meanings are documented in docs/catalog.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from netfleet.catalog.columns import DECLARED, RowError, run_row
from netfleet.engines import ENGINES
from netfleet.values import Columns, obj

__all__ = ["RowError", "RunRows", "envelope_rows", "run_row"]

Row = dict[str, Any]


@dataclass
class RunRows:
    """The rows of one run, ready to append to the tables: ``intervals`` as columns (hundreds
    of rows a run), the other tables as a dict per row."""

    run: Row
    intervals: Columns = field(default_factory=Columns)
    ends: list[Row] = field(default_factory=list)
    #: rows of the other tables (e.g. ``latency``), by table name
    extra: dict[str, list[Row]] = field(default_factory=dict)

    @property
    def run_id(self) -> str:
        return str(self.run["run_id"])

    def table(self, name: str) -> list[Row]:
        """One table's rows, a dict each."""
        if name == "runs":
            return [self.run]
        if name == "intervals":
            return self.intervals.rows()
        if name == "ends":
            return list(self.ends)
        return self.extra.get(name, [])


def envelope_rows(doc: Mapping[str, Any], source: str = "") -> RunRows:
    """All rows of one decoded envelope. Never raises on odd engine output (error shapes, empty
    ``end``, missing server output); raises :class:`RowError` when the envelope itself is
    unusable (no run_id, bad timestamps)."""
    run = run_row(doc, source)
    result = doc.get("result")
    name = run["engine"] or ""
    engine = ENGINES.get(name)  # (the registry loads only this engine's module)
    if engine is None or not isinstance(result, Mapping):
        return RunRows(run)
    params, outputs = obj(doc.get("params")), obj(doc.get("outputs"))
    tables = dict(engine.table_rows(run["run_id"], result, params, outputs))
    for key, value in (as_rows(tables.pop("runs", [])) or [{}])[0].items():
        if run.get(key) is None and value is not None:
            run[key] = value
    intervals = tables.pop("intervals", [])
    if not isinstance(intervals, Columns):  # a small engine's dict rows
        intervals = Columns.of_rows(intervals, (c.name for c in DECLARED["intervals"]))
    ends = tables.pop("ends", [])
    return RunRows(run, intervals, as_rows(ends), {t: as_rows(r) for t, r in tables.items()})


def as_rows(rows: list[Row] | Columns) -> list[Row]:
    """A table's rows, a dict each."""
    return rows.rows() if isinstance(rows, Columns) else rows
