"""The study report as markdown for a blog post: the same sections, tables as pipe tables, the
plots as PNG files in ``<stem>-plots/`` beside the ``.md`` (linked relatively)."""

from __future__ import annotations

import re
from pathlib import Path

from netfleet.errors import InputError
from netfleet.report.document import Block, Bullets, Document, Figure, Paragraph, Table, cell_text
from netfleet.report.files import atomic_write

_SPECIAL = re.compile(r"([\\`*_{}\[\]<>|#])")


def md_escape(text: str) -> str:
    """Markdown-inert text: specials backslashed, line breaks folded."""
    return _SPECIAL.sub(r"\\\1", text.replace("\r", " ").replace("\n", " "))


def _table_md(t: Table) -> list[str]:
    d = t.data
    out = [f"**{md_escape(d.title)}**", ""] if d.title else []
    cols = [*d.columns, *(["flag"] if t.flags else [])]
    out.append("| " + " | ".join(md_escape(str(c)) for c in cols) + " |")
    out.append("|" + "|".join("---" for _ in cols) + "|")
    for n, row in enumerate(d.rows):
        cells = [md_escape(cell_text(v, t.digits)) for v in row]
        if t.flags:
            flag = t.flags.get(n, "")
            cells.append("⚠ " + md_escape(flag) if flag else "")
        out.append("| " + " | ".join(cells) + " |")
    out += [""] + [f"- {md_escape(x)}" for x in d.notes]
    return out


def _block_md(b: Block, plots_dir: Path, rel: str) -> list[str]:
    if isinstance(b, Paragraph):
        return [("> " if b.tone else "") + md_escape(b.text)]
    if isinstance(b, Bullets):
        return [f"- {md_escape(i)}" for i in b.items]
    if isinstance(b, Table):
        return _table_md(b)
    assert isinstance(b, Figure)
    name = re.sub(r"[^A-Za-z0-9-]", "-", b.name) + ".png"
    atomic_write(plots_dir / name, b.png)
    return [f"![{md_escape(b.caption)}]({rel}/{name})", "", f"*{md_escape(b.caption)}*"]


def render_markdown(doc: Document, plots_dir: Path, rel: str) -> str:
    lines = [f"# {md_escape(doc.title)}", "", md_escape(doc.subtitle), ""]
    for s in doc.sections:
        lines += [f"## {md_escape(s.title)}", ""]
        for b in s.blocks:
            lines += [*_block_md(b, plots_dir, rel), ""]
    return "\n".join(lines)


def write_markdown(doc: Document, path: Path) -> Path:
    plots_dir = path.with_name(path.stem + "-plots")
    try:
        plots_dir.mkdir(parents=True, exist_ok=True)
        text = render_markdown(doc, plots_dir, plots_dir.name)
        atomic_write(path, text.encode("utf-8"))
    except OSError as exc:
        raise InputError(f"cannot write the report to {path}: {exc}") from exc
    return path
