"""The tabular value type every layer may return (base rank 0): columns, rows, title, notes.

Rendering it (terminal table, JSON, CSV, markdown) is the report layer's job
(:func:`netfleet.report.render`); the catalog, analysis and advice only build these values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Tabular:
    """Columns and rows, plus a title and notes shown under a terminal table."""

    columns: list[str]
    rows: list[list[Any]]
    title: str | None = None
    notes: list[str] = field(default_factory=list)
    #: number of decimals for float cells in human formats (table, markdown)
    decimals: int = 3

    def records(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]
