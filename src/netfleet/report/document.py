"""A report as data: sections of paragraphs, tables and figures, rendered to HTML or markdown by
:mod:`netfleet.report.html` and :mod:`netfleet.report.markdown`. Nothing here is markup: every
string is user-visible text, escaped by the renderer."""

from __future__ import annotations

from dataclasses import dataclass, field

from netfleet.report import Tabular
from netfleet.report.numbers import cell_text

__all__ = ["Block", "Bullets", "Document", "Figure", "Paragraph", "Section", "Table", "cell_text"]


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
