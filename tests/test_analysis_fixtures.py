"""Segmentation and estimates on series captured through the lab (scripts/capture_series.py):
the classification of each, the estimates against the shaper's truth within their ± bounds,
groups from a catalog, the command line and the SVG plot."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from netfleet.analysis import (
    analyze_catalog,
    analyze_file,
    analyze_rows,
    run_from_envelope,
)
from netfleet.catalog import ingest
from netfleet.cli.boundary import guarded
from netfleet.cli.main import app
from netfleet.report.analysis_tables import runs_table
from netfleet.report.plots import analysis_figure
from netfleet.store import ResultsRoot
from netfleet.units import goodput_ratio

SERIES = Path(__file__).parent / "fixtures" / "series"
MANIFEST: dict[str, Any] = json.loads((SERIES / "MANIFEST.json").read_text())["fixtures"]
#: a probe whose burst is shorter than a level (3 intervals) still shows a drop
EXPECT = {"short-burst": "burst-then-baseline"}
FULL_BURSTS = ["credit_out", "credit_in_p2", "credit_omit2", "refill_drain", "refill_idle25",
               "refill_idle40"]  # fmt: skip


def cli(*args: str) -> int:
    return guarded(lambda: app(list(args), standalone_mode=False, prog_name="netfleet"))


def analysis(name: str) -> Any:
    return analyze_file(SERIES / MANIFEST[name]["file"])


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_classification_of_every_captured_series(name: str) -> None:
    expect = MANIFEST[name]["expect"]
    assert analysis(name).segmentation.classification == EXPECT.get(expect, expect)


@pytest.mark.parametrize("name", FULL_BURSTS)
def test_burst_estimates_match_the_shaper_within_their_bounds(name: str) -> None:
    truth = MANIFEST[name]["shaper"]
    wire = analysis(name).credit.as_wire()
    assert wire.kind == "burst"
    assert wire.peak is not None and wire.peak.contains(truth["peak_bps"])
    assert wire.baseline is not None and wire.baseline.contains(truth["rate_bps"])
    assert wire.bucket is not None and wire.bucket.contains(truth["bucket_bits"])
    assert wire.burst_seconds is not None and wire.burst_seconds.contains(truth["seconds_at_peak"])
    assert wire.bucket.value == pytest.approx(truth["bucket_bits"], rel=0.005)


def test_steady_rate_matches_the_shaper() -> None:
    wire = analysis("steady_out").credit.as_wire()
    assert wire.kind == "steady" and wire.rate is not None
    assert wire.rate.contains(MANIFEST["steady_out"]["shaper"]["rate_bps"])


def test_too_short_a_run_is_inconclusive_with_its_reason() -> None:
    c = analysis("short_2s").credit
    assert c.kind == "inconclusive" and "too little data: 2 interval" in c.reason
    assert c.rate is None and c.bucket is None


def test_an_unfinished_burst_is_a_lower_bound_with_the_groups_baseline() -> None:
    truth = MANIFEST["credit_unfinished"]["shaper"]
    base = analysis("credit_out").credit.baseline
    assert base is not None
    run, rows = run_from_envelope(ResultsRoot.read(SERIES / "credit_unfinished.json.gz"))
    c = analyze_rows(run, rows, baseline_hint=base).credit.as_wire()
    assert c.kind == "burst-unfinished"
    assert c.bucket is not None and c.bucket.lower_bound
    assert c.bucket.contains(truth["bucket_bits"])
    assert c.bucket.value == pytest.approx((truth["peak_bps"] - truth["rate_bps"]) * 6, rel=0.01)


def test_erratic_levels_follow_the_tc_schedule() -> None:
    fx = MANIFEST["erratic_out"]
    a = analysis("erratic_out")
    assert "rises" in a.credit.reason
    rates = [fx["shaper"]["rate_bps"], *(r for _, r in fx["schedule_s_bps"])]
    levels = [s.level / goodput_ratio(1500) for s in a.segmentation.segments]
    assert len(levels) == len(rates)
    for level, rate in zip(levels, rates, strict=True):
        assert level == pytest.approx(rate, rel=0.06)


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("series")
    part = root / "results" / "d=2026-11-22" / "campaign=series"
    part.mkdir(parents=True)
    for fx in MANIFEST.values():
        shutil.copy(SERIES / fx["file"], part / fx["file"])
    report = ingest(root / "results", root / "catalog")
    assert report.ingested == len(MANIFEST)
    return root


def test_groups_from_the_catalog(catalog: Path) -> None:
    groups = {tuple(g.keys.values()): g for g in analyze_catalog(catalog / "catalog")}
    credit = groups[("lab-credit", "out")]
    assert len(credit.runs) == 3
    kinds = sorted(r.credit.kind for r in credit.runs)
    assert kinds == ["burst", "burst", "burst-unfinished"]  # the 6 s run, with the hint
    wire = credit.combined("wire")
    truth = MANIFEST["credit_out"]["shaper"]
    assert wire.kind == "burst"
    assert wire.bucket is not None and wire.bucket.contains(truth["bucket_bits"])
    assert wire.peak is not None and wire.peak.contains(truth["peak_bps"])
    assert wire.baseline is not None and wire.baseline.contains(truth["rate_bps"])
    steady = groups[("lab-steady", "out")]
    assert "inconclusive ×1" in steady.classification
    # the credit engine's run is read from its raw file: the group knows its refill
    refill = groups[("lab-refill", "out")].refill
    assert refill is not None and refill.kind == "capped"
    assert refill.full_refill_seconds == pytest.approx(15.0, rel=0.03)


def test_catalog_groups_can_be_matched(catalog: Path) -> None:
    groups = analyze_catalog(catalog / "catalog", by=("direction",),
                             match={"instance_type": "lab-credit"})  # fmt: skip
    assert sorted(g.keys["direction"] for g in groups) == ["in", "out"]


def test_cli_analyze_groups_runs_and_plot(
    catalog: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cat = str(catalog / "catalog")
    assert cli("analyze", "--catalog", cat, "-f", "json") == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    credit = next(r for r in rows if (r["instance_type"], r["direction"]) == ("lab-credit", "in"))
    assert credit["credit"] == pytest.approx(3.6 * goodput_ratio(1500), rel=0.01)  # Gbit
    assert credit["credit_lower_bound"] is False and credit["credit_err"] > 0
    svg = tmp_path / "runs.svg"
    assert cli("analyze", "--catalog", cat, "--runs", "--match", "instance_type=lab-credit",
               "--rate", "wire", "-f", "markdown", "--plot", str(svg)) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert out.count("\n| credit-") == 4 and "≥ " in out  # the unfinished run's lower bound
    ET.fromstring(svg.read_text())  # well-formed


def test_cli_analyze_one_run_by_id(catalog: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_id = MANIFEST["credit_out"]["file"].removesuffix(".json.gz")  # files keep their name
    code = cli("analyze", run_id, "--results", str(catalog / "results"), "--unit", "mbit")
    assert code == 0
    out = capsys.readouterr().out
    assert "burst-then-baseline" in out and "Mbit" in out


def test_cli_analyze_errors_name_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli("analyze", "no-such-run", "--results", str(tmp_path)) == 2
    err = capsys.readouterr().err
    assert "no run 'no-such-run'" in err and "fix:" in err
    assert cli("analyze", "--catalog", str(tmp_path / "none")) == 2
    assert "ingest" in capsys.readouterr().err
    path = str(SERIES / MANIFEST["credit_out"]["file"])
    assert cli("analyze", path, "--unit", "furlong") == 2
    assert "unknown unit" in capsys.readouterr().err


def test_plot_draws_series_levels_baseline_peak_and_burst_end() -> None:
    import matplotlib

    a = analysis("credit_omit2")
    with matplotlib.rc_context({"svg.fonttype": "none"}):  # keep text as <text> to read it
        root = ET.fromstring(analysis_figure([a]))  # what `netfleet analyze --plot` draws
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    texts = " ".join("".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text"))
    for word in ("burst ends τ*", "peak C", "baseline ρ", "omitted", "σ = ", "(bucket)"):
        assert word in texts, word
    lines = [
        g
        for g in root.iter("{http://www.w3.org/2000/svg}g")
        if g.get("id", "").startswith("line2d")
    ]
    assert len(lines) >= 3


def test_runs_table_machine_columns_are_stable() -> None:
    table = runs_table([analysis("steady_out"), analysis("short_2s")], human=False)
    assert {"credit", "credit_err", "credit_lower_bound", "refill_s", "rate_err"} <= set(
        table.columns
    )
    human = runs_table([analysis("steady_out")])
    assert "refill_s" not in human.columns and "rate" in human.columns


def test_cli_credit_calc_from_a_run_and_from_a_group(
    catalog: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(SERIES / MANIFEST["credit_out"]["file"])
    assert cli("credit", "calc", path, "--rate", "wire", "-f", "json") == 0
    rows = {r["quantity"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert rows["time at peak, full bucket"]["value"] == pytest.approx(10.0, abs=0.05)
    assert rows["refill from empty, idle"]["value"] == pytest.approx(90.0, abs=0.5)
    cat = str(catalog / "catalog")
    assert cli("credit", "calc", "--catalog", cat, "--match", "instance_type=lab-credit") == 2
    assert "2 groups match (lab-credit/out; lab-credit/in)" in capsys.readouterr().err
    args = ["--catalog", cat, "--match", "instance_type=lab-credit", "--match", "direction=in"]
    assert cli("credit", "calc", *args, "-f", "json") == 0
    rows = {r["quantity"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert rows["bucket σ (initial/max credit)"]["value"] == pytest.approx(3.443, abs=0.005)
    assert cli("credit", "calc", "--catalog", cat, "--match", "instance_type=lab-steady") == 2
    assert "no burst measured (steady)" in capsys.readouterr().err
