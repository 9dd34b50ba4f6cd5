"""Printing a listing in the format asked: plain text for json, csv and markdown (no Rich
loaded), a Rich table for ``table``."""

from __future__ import annotations

import sys

from netfleet.report import OutputFormat, Tabular, render


def emit(data: Tabular, fmt: OutputFormat) -> None:
    """Print a Tabular in the chosen format (plain text for machine formats)."""
    from netfleet.text import printable

    out = render(data, fmt)
    if isinstance(out, str):
        print(out)
        if data.notes and fmt is OutputFormat.csv:
            # the CSV stays pure (header and rows): its notes — the same as the table's — go
            # to stderr, always, so an empty CSV never reads as success without a reason
            for note in data.notes:
                print(f"note: {printable(note, keep_newlines=False)}", file=sys.stderr)
    else:
        from netfleet.cli.console import console

        console.print(out)


def emit_all(tables: dict[str, Tabular], fmt: OutputFormat) -> None:
    """Several listings of one command: for JSON one document, ``{name: listing, …}`` (each as
    :func:`~netfleet.report.output.json_document`), never documents back to back; each in
    turn for the other formats."""
    if fmt is not OutputFormat.json:
        for table in tables.values():
            emit(table, fmt)
        return
    import json

    doc = {name: json.loads(render(table, fmt)) for name, table in tables.items()}
    print(json.dumps(doc, indent=2))
