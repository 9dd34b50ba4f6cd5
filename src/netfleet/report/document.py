"""A report as data: sections of paragraphs, tables and figures, rendered to HTML or markdown by
:mod:`netfleet.report.html` and :mod:`netfleet.report.markdown`. Nothing here is markup: every
string is user-visible text, escaped by the renderer."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from netfleet.report import Tabular


@dataclass(frozen=True)
class Paragraph:
    text: str
    tone: str = ""  # "" | "warn" | "note"


@dataclass(frozen=True)
class Bullets:
    items: tuple[str, ...]


@dataclass(frozen=True)
class Table:
    data: Tabular
    #: row index → a flag shown on that row (e.g. "burst-affected")
    flags: dict[int, str] = field(default_factory=dict)
    #: significant digits for floats
    digits: int = 3


@dataclass(frozen=True)
class Figure:
    name: str  # file stem for the markdown form: letters, digits, '-'
    caption: str
    png: bytes


Block = Paragraph | Bullets | Table | Figure


@dataclass
class Section:
    id: str
    title: str
    blocks: list[Block] = field(default_factory=list)

    def add(self, *blocks: Block) -> Section:
        self.blocks.extend(blocks)
        return self


@dataclass
class Document:
    title: str
    subtitle: str
    sections: list[Section] = field(default_factory=list)

    def section(self, sid: str) -> Section | None:
        return next((s for s in self.sections if s.id == sid), None)


def cell_text(value: Any, digits: int = 3) -> str:
    """A table cell as text: floats with ``digits`` significant digits (thousands separated),
    booleans as yes/no, nothing for None/NaN."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        if math.isinf(value):
            return "∞" if value > 0 else "−∞"
        if value == 0:
            return "0"
        decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
        return f"{value:,.{decimals}f}"
    if isinstance(value, int):
        return f"{value:,}" if abs(value) >= 10_000 else str(value)
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, dict | list | tuple):
        if isinstance(value, dict):
            return ", ".join(f"{k}={cell_text(v, digits)}" for k, v in value.items())
        return ", ".join(cell_text(v, digits) for v in value)
    return str(value)
