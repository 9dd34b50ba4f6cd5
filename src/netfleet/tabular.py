"""The tabular value type every layer may return (base rank 0): columns, rows, title, notes.

Rendering it (terminal table, JSON, CSV, markdown) is the report layer's job
(:func:`netfleet.report.render`); the catalog, analysis and advice only build these values.
"""

from __future__ import annotations

from typing import Any

from netfleet.plain import Plain


class Tabular(Plain):
    """Columns and rows, plus a title and notes shown under a terminal table. (A plain class
    that behaves as the dataclass it was — fields, order, defaults, ``==``, ``repr`` —: a
    dataclass costs every process that loads it half a millisecond to define, and loads
    ``inspect``; issue 26; :mod:`netfleet.plain`.)"""

    #: the fields, in their order (the constructor's, ``==``, ``repr``)
    __slots__ = ("columns", "rows", "title", "notes", "decimals")  # noqa: RUF023

    columns: list[str]
    rows: list[list[Any]]
    title: str | None
    notes: list[str]
    #: number of decimals for float cells in human formats (table, markdown)
    decimals: int

    def __init__(
        self,
        columns: list[str],
        rows: list[list[Any]],
        title: str | None = None,
        notes: list[str] | None = None,
        decimals: int = 3,
    ) -> None:
        self.columns = columns
        self.rows = rows
        self.title = title
        self.notes = [] if notes is None else notes
        self.decimals = decimals

    def records(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]
