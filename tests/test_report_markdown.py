"""The markdown report checked as a reader's tool would see it: the report of a real catalog (the
runs captured through the lab in tests/fixtures/series) written as ``.md`` with its PNG files
beside it, parsed with markdown-it (CommonMark + GFM tables; installed with rich): every image it
links exists beside the file and is a drawn plot, every table keeps its columns (escaped pipes
do not split cells), the sections are headings, and no user text turns into markup."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

from netfleet.catalog import ingest
from netfleet.cloud.aws.plan import prices
from netfleet.report.document import Document, Paragraph, Section, Table
from netfleet.report.html import write_report
from netfleet.report.study_report import build_document
from netfleet.tabular import Tabular
from tests import pngkit

SERIES = Path(__file__).parent / "fixtures" / "series"
MANIFEST: dict[str, Any] = json.loads((SERIES / "MANIFEST.json").read_text())["fixtures"]


def check_markdown(md: Path) -> dict[str, Any]:
    """Parse ``md`` and check what a browser showing its rendering would need; returns the
    headings, the image paths and the number of tables."""
    text = md.read_text(encoding="utf-8")
    parser = MarkdownIt("commonmark").enable("table")
    tokens = parser.parse(text)
    html = parser.render(text)
    images: list[str] = []
    headings: list[str] = []
    tables = 0
    for n, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.tag == "h2":
            headings.append(tokens[n + 1].content)
        if tok.type == "table_open":
            tables += 1
        for child in tok.children or ():
            if child.type == "image":
                images.append(str(child.attrs["src"]))
    for src in images:
        path = (md.parent / src).resolve()
        assert path.is_file(), f"{md.name} links {src}, which is not beside it"
        assert path.is_relative_to(md.parent.resolve()), src
        assert pngkit.variance(path.read_bytes()) > 100, f"{src} is blank"
    # every pipe-table row has as many cells as its header: no cell split by a stray pipe
    block: list[int] = []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            block.append(line.replace("\\|", "").count("|") - 1)
        elif block:
            assert len(set(block)) == 1, f"a table's rows have {block} cells"
            block = []
    assert html.count("<table>") == tables
    return {"headings": headings, "images": images, "tables": tables, "html": html}


#: after load, the page writes how many of its images the browser decoded (naturalWidth > 0)
PROBE = """<script>addEventListener("load", () => { const i = [...document.images];
document.body.setAttribute("data-loaded", i.filter(x => x.complete && x.naturalWidth > 0).length
+ "/" + i.length); });</script>"""


def browser_loaded_images(md: Path, html: str) -> str:
    """Open the markdown's rendering beside it in headless Chromium (no network: the proxy is a
    closed port) and return "decoded/total" images as the browser saw them."""
    page = md.with_name(md.stem + "-rendered.html")
    page.write_text(f"<!DOCTYPE html><meta charset='utf-8'><body>{html}{PROBE}</body>")
    proc = subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--proxy-server=http://127.0.0.1:9", "--virtual-time-budget=5000", "--dump-dom",
         page.as_uri()],
        capture_output=True, text=True, timeout=120, cwd=md.parent,
    )  # fmt: skip
    page.unlink()
    assert proc.returncode == 0, proc.stderr[-2000:]
    found = re.search(r'data-loaded="(\d+/\d+)"', proc.stdout)
    assert found, proc.stdout[-2000:]
    return found.group(1)


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("series")
    part = root / "results" / "d=2026-11-22" / "campaign=series"
    part.mkdir(parents=True)
    for fx in MANIFEST.values():
        shutil.copy(SERIES / fx["file"], part / fx["file"])
    ingest(root / "results", root / "catalog")
    return root / "catalog"


def test_the_markdown_report_of_real_runs_renders_with_its_plots(
    catalog: Path, tmp_path: Path
) -> None:
    doc = build_document(catalog, price_table=prices.load(None))
    md = write_report(doc, tmp_path / "study.md", "markdown")
    found = check_markdown(md)
    assert found["headings"] == [s.title for s in doc.sections]
    ids = {s.id for s in doc.sections}
    assert {"summary", "cheatsheet", "burst", "appendix"} <= ids
    # sections only where the data supports them: these runs have no latency tests, no prices
    # (lab types without region or price_per_hour labels), no advertised rates, no compare
    assert not {"latency", "price", "advertised", "compare"} & ids, ids
    figures = sorted((tmp_path / "study-plots").glob("*.png"))
    assert len(found["images"]) == len(figures) >= 3
    assert {Path(i).name for i in found["images"]} == {p.name for p in figures}
    tables = sum(isinstance(b, Table) for s in doc.sections for b in s.blocks)
    assert found["tables"] == tables
    # the burst section's numbers carry units at the precision their ± allows
    assert " Mbit/s" in found["html"] and ".922" not in found["html"]
    if shutil.which("chromium"):  # Debian's package, installed by the bootstrap
        n = len(found["images"])
        assert browser_loaded_images(md, found["html"]) == f"{n}/{n}"
        (tmp_path / "study-plots" / "rate-cdf.png").unlink()  # the check can fail
        assert browser_loaded_images(md, found["html"]) == f"{n - 1}/{n}"


def test_user_text_stays_text_in_markdown(tmp_path: Path) -> None:
    evil = "a|b <img src=x onerror=alert(1)> **bold** [link](http://example.com) `code`"
    doc = Document(evil, evil)
    doc.sections.append(
        Section("summary", evil).add(
            Paragraph(evil), Table(Tabular([evil, "n"], [[evil, 1.5]], title=evil, notes=[evil]))
        )
    )
    md = write_report(doc, tmp_path / "evil.md", "markdown")
    html = check_markdown(md)["html"]
    assert "<img" not in html and "<a " not in html and "<code>" not in html, html
    assert html.count("<strong>") == 1  # the renderer's own: the table title, set in bold
    # literal in all 8 places: title, subtitle, heading, paragraph, table title, header, cell, note
    assert html.count("**bold**") == 8
    assert html.count("<th>") == 2  # the pipe in the header did not make a third column
