"""docs/api.md can't drift: every ``python`` block of it runs as it stands, in a folder holding
the files it names — made here from series captured through the lab (tests/fixtures/series) and
iperf3 output captured by scripts (tests/fixtures/import) — and prints what the page says."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "api.md"
SERIES = ROOT / "tests" / "fixtures" / "series"
IMPORT = ROOT / "tests" / "fixtures" / "import"


def blocks() -> dict[str, str]:
    """The page's ``python`` blocks by the heading they sit under."""
    found: dict[str, str] = {}
    heading = ""
    for part in re.split(r"^(## .*)$", PAGE.read_text(), flags=re.M):
        if part.startswith("## "):
            heading = part[3:].strip()
        for code in re.findall(r"^```python\n(.*?)^```", part, flags=re.S | re.M):
            found[heading] = code
    return found


def run_block(heading: str, where: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    code = next(c for h, c in blocks().items() if h.startswith(heading))
    monkeypatch.chdir(where)
    monkeypatch.delenv("NETFLEET_RESULTS", raising=False)
    monkeypatch.delenv("NETFLEET_CATALOG", raising=False)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, f"{PAGE}:{heading}", "exec"), {"__name__": "docs_api"})
    return out.getvalue()


def test_the_page_has_the_two_sessions() -> None:
    assert [h.split(":")[0] for h in blocks()] == [
        "Seed 004 in a notebook",
        "Seed 002 in a notebook",
    ]


def contains(cell: str, truth: float) -> bool:
    """Whether a table's ``value ± err`` cell holds ``truth``."""
    m = re.search(r"([\d,.]+) ± ([\d,.]+)", cell)
    assert m, cell
    value, err = (float(g.replace(",", "")) for g in m.groups())
    return abs(value - truth) <= err


@pytest.mark.slow  # ~5 s of CPU (segmentation of three series), more on a busy machine
def test_seed_004_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two outbound runs and one inbound of the lab's credit host (400 Mbit/s for 10 s, then
    40; a 3.6 Gbit bucket), filed as an r4.large campaign's raw results."""
    truth = json.loads((SERIES / "MANIFEST.json").read_text())["fixtures"]["credit_out"]["shaper"]
    part = tmp_path / "r4" / "results" / "d=2026-11-22" / "campaign=r4"
    part.mkdir(parents=True)
    for name in ("credit_out", "credit_omit2", "credit_in_p2"):
        doc = json.loads(gzip.decompress((SERIES / f"{name}.json.gz").read_bytes()))
        doc["campaign"], doc["labels"]["instance_type"] = "r4", "r4.large"
        (part / f"{name}.json.gz").write_bytes(gzip.compress(json.dumps(doc).encode()))
    out = run_block("Seed 004", tmp_path, monkeypatch)
    table = [line.split("|") for line in out.splitlines() if line.startswith("| ")]
    header = [c.strip() for c in table[0]]
    groups = {row[1].strip(): row for row in table if "burst" in "".join(row)}
    assert sorted(groups) == ["in", "out"], out
    credit = groups["out"][header.index("credit")]  # Mbit: the table's unit at this scale
    assert contains(credit, truth["bucket_bits"] / 1e6), out
    answers = {row[1].strip(): row for row in table}
    assert contains(answers["time at peak, full bucket"][2], truth["seconds_at_peak"]), out
    assert contains(answers["peak C"][2], truth["peak_bps"] / 1e6), out


def test_seed_002_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Three client-side iperf3 -J files (three captured iperf3 versions), in seed 002's
    layout: two t2.nano runs and one m5.large."""
    files = {
        "t2.nano-1524200000": "v3_12_tcp.client.json",
        "t2.nano-1524203600": "v3_18_tcp.client.json",
        "m5.large-1524207200": "v3_22_tcp.client.json",
    }
    folder = tmp_path / "seed002" / "d=2018-04-20"
    folder.mkdir(parents=True)
    for stem, fixture in files.items():
        (folder / f"{stem}.json.gz").write_bytes(gzip.compress((IMPORT / fixture).read_bytes()))
    out = run_block("Seed 002", tmp_path, monkeypatch)
    assert "3 files imported; 0 refused" in out, out
    rows = {line.split("|")[1].strip(): line.split("|") for line in out.splitlines()[1:]
            if line.startswith("| ") and "instance_type" not in line}  # fmt: skip
    assert sorted(rows) == ["m5.large", "t2.nano"], out
    assert rows["t2.nano"][2].strip() == "2" and rows["m5.large"][2].strip() == "1", out
    assert "{'type': 't2.nano', 'runs': 2}" in out and "{'type': 'm5.large', 'runs': 1}" in out
    assert "3 registered, 0 unchanged, manifest generation 1" in out  # by reference
    assert "0 file(s) not as imported" in out


def test_the_reference_page_is_current() -> None:
    """docs/api-reference.md is what scripts/api_reference.py writes from the docstrings."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "api_reference", ROOT / "scripts" / "api_reference.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert (ROOT / "docs" / "api-reference.md").read_text() == module.reference(), (
        "docs/api-reference.md is stale: run .venv/bin/python scripts/api_reference.py"
    )
