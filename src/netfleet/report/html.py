"""``netfleet report html``: one self-contained ``.html`` per study — inline CSS, images as
``data:`` URIs, no script, no CDN, no request leaves the file. Every piece of user text (labels,
campaign names, advice evidence) is HTML-escaped.

::

    doc = build_document("catalog/", campaigns=["demo"])
    path = write_report(doc, Path("demo.html"))                      # or fmt="markdown"
"""

from __future__ import annotations

import base64
from datetime import date
from html import escape
from pathlib import Path
from typing import Literal

from netfleet.errors import InputError
from netfleet.report.document import Block, Bullets, Document, Figure, Paragraph, Table, cell_text
from netfleet.report.files import atomic_write

ReportFormat = Literal["html", "markdown"]

CSS = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#222;
 max-width:1100px;margin:0 auto;padding:24px 28px 60px;background:#fff}
h1{font-size:26px;margin:0 0 4px} .sub{color:#666;margin:0 0 18px}
nav{border:1px solid #ddd;border-radius:6px;padding:8px 14px;background:#fafafa;margin-bottom:18px}
nav a{margin-right:14px;color:#2a5d9f;text-decoration:none}
section{margin-top:28px;border-top:2px solid #e4e4e4;padding-top:6px}
h2{font-size:21px;margin:10px 0} h3{font-size:16px;margin:14px 0 6px}
table{border-collapse:collapse;margin:8px 0 4px;font-size:13px;display:block;overflow-x:auto}
th,td{border:1px solid #ddd;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f2f4f7} td.n{text-align:right;font-variant-numeric:tabular-nums}
td.n,td.t{white-space:nowrap}
tr.flag td{background:#fff4e0} td.flag{color:#9a5b00;font-size:12px}
.notes{color:#555;font-size:12.5px;margin:2px 0 10px;padding-left:18px}
p.warn{background:#fff4e0;border-left:4px solid #f0a030;padding:6px 10px}
p.note{color:#555;font-style:italic}
figure{margin:12px 0} figure img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{color:#555;font-size:13px}
"""


def _table_html(t: Table) -> str:
    d = t.data
    flagged = bool(t.flags)
    out = []
    if d.title:
        out.append(f"<h3>{escape(d.title)}</h3>")
    head = "".join(f"<th>{escape(str(c))}</th>" for c in d.columns)
    if flagged:
        head += "<th>flag</th>"
    out.append(f"<table><thead><tr>{head}</tr></thead><tbody>")
    for n, row in enumerate(d.rows):
        cells = []
        for v in row:
            numeric = isinstance(v, int | float) and not isinstance(v, bool)
            cls = ' class="n"' if numeric else ' class="t"' if isinstance(v, date) else ""
            cells.append(f"<td{cls}>{escape(cell_text(v, t.digits))}</td>")
        if flagged:
            flag = t.flags.get(n, "")
            cells.append(f'<td class="flag">{"⚠ " + escape(flag) if flag else ""}</td>')
        attr = ' class="flag"' if n in t.flags else ""
        out.append(f"<tr{attr}>{''.join(cells)}</tr>")
    out.append("</tbody></table>")
    if d.notes:
        out.append(
            '<ul class="notes">' + "".join(f"<li>{escape(x)}</li>" for x in d.notes) + "</ul>"
        )
    return "\n".join(out)


def _block_html(b: Block) -> str:
    if isinstance(b, Paragraph):
        cls = f' class="{b.tone}"' if b.tone in ("warn", "note") else ""
        return f"<p{cls}>{escape(b.text)}</p>"
    if isinstance(b, Bullets):
        return "<ul>" + "".join(f"<li>{escape(i)}</li>" for i in b.items) + "</ul>"
    if isinstance(b, Table):
        return _table_html(b)
    data = base64.b64encode(b.png).decode("ascii")
    return (
        f'<figure><img alt="{escape(b.caption)}" src="data:image/png;base64,{data}">'
        f"<figcaption>{escape(b.caption)}</figcaption></figure>"
    )


def render_html(doc: Document) -> str:
    nav = "".join(f'<a href="#{escape(s.id)}">{escape(s.title)}</a>' for s in doc.sections)
    body = []
    for s in doc.sections:
        inner = "\n".join(_block_html(b) for b in s.blocks)
        body.append(f'<section id="{escape(s.id)}"><h2>{escape(s.title)}</h2>\n{inner}</section>')
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "img-src data:; style-src 'unsafe-inline'\">"
        f"<title>{escape(doc.title)}</title><style>{CSS}</style></head><body>"
        f'<h1>{escape(doc.title)}</h1><p class="sub">{escape(doc.subtitle)}</p>'
        f"<nav>{nav}</nav>\n" + "\n".join(body) + "\n</body></html>\n"
    )


def write_report(doc: Document, path: Path, fmt: ReportFormat = "html") -> Path:
    """Write the report (markdown: plus its PNG files in ``<stem>-plots/`` beside it)."""
    if fmt == "markdown":
        from netfleet.report.markdown import write_markdown

        return write_markdown(doc, path)
    if fmt != "html":
        raise InputError(f"unknown report format {fmt!r}", hint="use html or markdown")
    try:
        atomic_write(path, render_html(doc).encode("utf-8"))
    except OSError as exc:
        raise InputError(f"cannot write the report to {path}: {exc}") from exc
    return path


__all__ = ["Figure", "atomic_write", "render_html", "write_report"]
