"""One renderer for every listing: ``--format table|json|csv|markdown``."""

from __future__ import annotations

import csv
import io
import json
from enum import StrEnum
from typing import Any

from netfleet.report.numbers import cell_text
from netfleet.tabular import Tabular
from netfleet.text import printable

#: cells a terminal table shows at most — as many rows as fit, never fewer than
#: :data:`MIN_TABLE_ROWS` (Rich measures and wraps every cell: ``sql "select * from runs"`` over
#: 100,000 runs, 45 columns, took 397 s and 4.5 GB as a table); the other formats print every row
MAX_TABLE_CELLS = 10_000
MIN_TABLE_ROWS = 100


class OutputFormat(StrEnum):
    table = "table"
    json = "json"
    csv = "csv"
    markdown = "markdown"


def _cell(value: Any, decimals: int) -> str:
    """A human cell (terminal, markdown): numbers by :func:`netfleet.report.numbers.cell_text`
    with at least 3 significant digits (``decimals`` asks for more)."""
    if value is None:
        return ""
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"), default=str)
    if isinstance(value, float):
        return cell_text(value, max(3, decimals))
    return str(value)


def _shown(value: Any) -> Any:
    """A text cell with its control characters and newlines shown, never obeyed (numbers as
    they are): one path for every text format (JSON escapes them itself)."""
    return printable(value, keep_newlines=False) if isinstance(value, str) else value


def json_document(data: Tabular) -> dict[str, Any]:
    """A listing as JSON: ``{"title", "columns", "rows": [records], "notes": [...]}`` — the
    notes are the table's, word for word."""
    return {
        "title": data.title,
        "columns": list(data.columns),
        "rows": data.records(),
        "notes": list(data.notes),
    }


def render(data: Tabular, fmt: OutputFormat | str) -> str | Any:
    """Text for json/csv/markdown; a Rich renderable for ``table``."""
    fmt = OutputFormat(fmt)
    if fmt is OutputFormat.json:
        # one object: the rows and the same notes (units, caveats, flags) as the table
        return json.dumps(json_document(data), indent=2, default=str)
    if fmt is OutputFormat.csv:
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow([_shown(c) for c in data.columns])
        for row in data.rows:
            writer.writerow(
                [_shown(_cell(v, 12) if isinstance(v, dict | list) else v) for v in row]
            )
        return buf.getvalue().rstrip("\n")
    if fmt is OutputFormat.markdown:
        lines = [
            "| " + " | ".join(_shown(c) for c in data.columns) + " |",
            "|" + "|".join("---" for _ in data.columns) + "|",
        ]
        for row in data.rows:
            lines.append("| " + " | ".join(_shown(_cell(v, data.decimals)) for v in row) + " |")
        if data.notes:  # the notes carry units, caveats and flags: never dropped
            lines += ["", *(f"- {_shown(note)}" for note in data.notes)]
        return "\n".join(lines)
    from rich.table import Table
    from rich.text import Text

    rows, notes = data.rows, list(data.notes)
    most = max(MIN_TABLE_ROWS, MAX_TABLE_CELLS // max(1, len(data.columns)))
    if len(rows) > most:  # bounded: the other formats print them all
        rows = rows[:most]
        notes.append(
            f"showing the first {most:,} of {len(data.rows):,} rows: -f csv, json or markdown "
            "prints them all"
        )
    # user and stored text (labels, names, notes) is shown, never read as markup or control codes
    table = Table(
        title=Text(printable(data.title)) if data.title else None,
        caption=Text(printable("\n".join(notes))) if notes else None,
        caption_justify="left",
    )
    for col, name in enumerate(data.columns):
        # the row's name (the first column) is folded onto more lines where the terminal is
        # narrow, never cut to "farga…" (issue 36); the other cells may end in "…"
        table.add_column(
            Text(printable(name)), justify="left", overflow="fold" if col == 0 else "ellipsis"
        )
    for row in rows:
        table.add_row(*(Text(printable(_cell(v, data.decimals))) for v in row))
    for col, name in enumerate(data.columns):
        if rows and all(isinstance(r[col], int | float) for r in rows if r[col] is not None):
            table.columns[col].justify = "right"
        del name
    return table
