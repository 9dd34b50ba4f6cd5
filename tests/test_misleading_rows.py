"""Issue 36, "Misleading": rows and lines that read as one level where the data has two, or as
one thing where it is another — checked on captured lab runs (tests/fixtures/series), ingested
as the demo's are."""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from netfleet.catalog import ingest
from netfleet.report.cheatsheet import cheatsheet
from netfleet.report.output import render

SERIES = Path(__file__).parent / "fixtures" / "series"
MANIFEST: dict[str, Any] = json.loads((SERIES / "MANIFEST.json").read_text())["fixtures"]


def _catalog(tmp: Path, *fixtures: str) -> Path:
    part = tmp / "results" / "d=2026-11-22" / "campaign=series"
    part.mkdir(parents=True)
    for name in fixtures:
        file = MANIFEST[name]["file"]
        (part / file).write_bytes((SERIES / file).read_bytes())
    ingest(tmp / "results", tmp / "catalog")
    return tmp / "catalog"


@pytest.fixture(scope="module")
def burst_and_steady(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A credit host's 30 s run (10 s at 400 Mbit/s, then 40) and a steady 300 Mbit/s host."""
    return _catalog(tmp_path_factory.mktemp("sheet"), "credit_out", "steady_out")


def test_a_row_mixing_burst_and_baseline_is_flagged_in_every_format(
    burst_and_steady: Path,
) -> None:
    sheet = cheatsheet(burst_and_steady, group_by=("instance_type", "direction"), unit="mbit")
    rows = {r["instance_type"]: r for r in sheet.records()}
    burst, steady = rows["lab-credit"], rows["lab-steady"]
    # the row's average is a value between the two levels that no interval had
    assert burst["p5"] < 50 < burst["avg"] < 350 < burst["p95"]
    assert burst["flag"] and "two levels" in burst["flag"]
    assert not steady["flag"]
    assert any("flag 'two levels'" in note for note in sheet.notes)
    # every format carries the flag on the burst row, and not on the steady one
    doc = json.loads(render(sheet, "json"))
    flags = {r["instance_type"]: r["flag"] for r in doc["rows"]}
    assert "two levels" in flags["lab-credit"] and not flags["lab-steady"]
    table = list(csv.DictReader(io.StringIO(render(sheet, "csv"))))
    assert [bool(r["flag"]) for r in table] == [True, False]
    md = render(sheet, "markdown").splitlines()
    assert "two levels" in next(line for line in md if "lab-credit" in line)
    assert "two levels" not in next(line for line in md if "lab-steady" in line)
    from rich.console import Console

    console = Console(width=400, file=io.StringIO(), color_system=None)
    console.print(render(sheet, "table"))
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert "two levels" in next(line for line in text.splitlines() if "lab-credit" in line)


def test_the_html_report_says_which_level_is_which(burst_and_steady: Path) -> None:
    from netfleet.report.document import Table
    from netfleet.report.study_report import build_document

    doc = build_document(burst_and_steady)
    section = doc.section("cheatsheet")
    assert section is not None
    (table,) = [b for b in section.blocks if isinstance(b, Table)]
    it = table.data.columns.index("instance_type")
    flagged = {table.data.rows[n][it]: text for n, text in table.flags.items()}
    # min and max ARE the two levels; the avg and p50 are what mixes them
    assert "min ≈ the baseline, max ≈ the burst" in flagged["lab-credit"]
    assert "mix the burst" not in flagged["lab-credit"]
    assert "lab-steady" not in flagged


def _envelope(fixture: str) -> Any:
    from netfleet.store.envelope import Envelope

    raw = gzip.decompress((SERIES / MANIFEST[fixture]["file"]).read_bytes())
    return Envelope.model_validate(json.loads(raw))


def test_a_run_line_gives_both_levels_of_a_burst_and_one_of_a_steady_run() -> None:
    from netfleet import api

    # 10 s at the 400 Mbit/s peak (≈383 goodput), then the 40 Mbit/s baseline (≈38.3)
    line = api.run_summary(_envelope("credit_out"))
    assert line.startswith(("382 → 38.3 Mbit/s after", "383 → 38.3 Mbit/s after")), line
    assert 9.5 <= float(line.split("after ")[1].split(" s")[0]) <= 10.5
    steady = api.run_summary(_envelope("steady_out"))
    assert "→" not in steady and "Mbit/s" in steady


def test_a_scaled_labs_run_line_gives_the_cloud_figures_beside_the_labs() -> None:
    """Issue 36, Misleading 2: a lab at ×0.05 (the labels its hosts put on every run) prints
    its run lines with the cloud figures they stand for, rates ÷ 0.05, durations ÷ 0.05."""
    from netfleet import api

    burst, steady = _envelope("credit_out"), _envelope("steady_out")
    for env in (burst, steady):
        env.labels.update(lab_scale=0.05, lab_time_scale=0.05)
    m = re.fullmatch(
        r"([\d.]+) → ([\d.]+) Mbit/s after ([\d.]+) s \(lab ×0\.05; cloud ([\d.]+) → "
        r"([\d.]+) Gbit/s after ([\d.]+) s\)",
        api.run_summary(burst),
    )
    assert m, api.run_summary(burst)
    lab_peak, lab_base, lab_s, peak, base, secs = map(float, m.groups())
    assert abs(peak * 1e3 / (lab_peak / 0.05) - 1) < 0.01
    assert abs(base * 1e3 / (lab_base / 0.05) - 1) < 0.01
    assert abs(secs / (lab_s / 0.05) - 1) < 0.01
    m = re.fullmatch(
        r"([\d.]+) Mbit/s \(lab ×0\.05; cloud ([\d.]+) Gbit/s\)", api.run_summary(steady)
    )
    assert m, api.run_summary(steady)
    assert abs(float(m[2]) * 1e3 / (float(m[1]) / 0.05) - 1) < 0.01
    assert "cloud" in api.RUN_LINE_LEGEND
    # a lab scaled in rate only (seed 000's Fargate profile: ×0.2, time ×1): one rate, one scale
    steady.labels.update(lab_scale=0.2, lab_time_scale=1.0)
    assert re.fullmatch(
        r"[\d.]+ Mbit/s \(lab ×0\.2; cloud 1\.4\d Gbit/s\)", api.run_summary(steady)
    )


def _line_styles(svg: bytes) -> list[str]:
    """Each drawn series' stroke (colour and dashes) in a matplotlib SVG, legend lines too."""
    text = svg.decode()
    found = re.findall(r'<path d="[^"]*"[^>]*style="([^"]*stroke-width: 1\.8[^"]*)"', text, re.S)
    return [re.sub(r"stroke-(linecap|dashoffset): [^;]*;? ?", "", s).strip("; ") for s in found]


def test_plots_of_more_than_ten_series_draw_each_its_own_way() -> None:
    from netfleet.report.plots import rate_cdf

    # 12 tiers: the 11th (e.g. 651 Mbit/s) must not look like the 1st (the smallest)
    groups = {f"tier{n}": [(n + 1) * 1e6, (n + 2) * 1e6] for n in range(12)}
    styles = _line_styles(rate_cdf(groups, fmt="svg"))
    assert len(styles) == 24  # 12 lines, 12 legend lines
    assert len(set(styles[:12])) == 12, styles[:12]
