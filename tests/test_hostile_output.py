"""What netfleet prints from hostile stored data (issue 23): impossible rates never reach the
cheat sheet's numbers (left out, counted in a note), and no stored string reaches the terminal
with its control codes on any output format."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import math
from pathlib import Path
from typing import Any

import pytest

from netfleet.catalog import ingest
from netfleet.catalog.cheatsheet import cheatsheet_data
from netfleet.cli.options import emit
from netfleet.report.cheatsheet import cheatsheet_table
from netfleet.report.output import OutputFormat, render
from netfleet.store.rawfile import partition_path
from netfleet.store.root import ResultsRoot
from netfleet.tabular import Tabular
from tests.test_catalog import make_envelope

BAD_RATES = {"huge": 1e308, "negative": -1e9, "nan": float("nan"), "inf": float("inf")}


def _set_rates(node: Any, value: float) -> int:
    """Every interval sum's bits_per_second set to ``value``; how many were set."""
    count = 0
    if isinstance(node, dict):
        for key, child in node.items():
            if key == "intervals" and isinstance(child, list):
                for iv in child:
                    iv["sum"]["bits_per_second"] = value
                    count += 1
            else:
                count += _set_rates(child, value)
    return count


def _write_raw(root: ResultsRoot, doc: dict[str, Any], rel: str) -> None:
    path = root.path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(json.dumps(doc).encode()))  # NaN/Infinity as JSON extensions


def _sheet(catalog: Path) -> Any:
    return cheatsheet_data(catalog, group_by=["instance_type"], campaign="camp")


def test_impossible_rates_are_left_out_and_counted(tmp_path: Path) -> None:
    labels = {"instance_type": "m5.large"}
    good_root = ResultsRoot(tmp_path / "good")
    good_root.write(make_envelope("tcp_1stream", "good", labels=labels))
    ingest(good_root, tmp_path / "good-cat")
    expected = _sheet(tmp_path / "good-cat")

    root = ResultsRoot(tmp_path / "raw")
    root.write(make_envelope("tcp_1stream", "good", labels=labels))
    bad = 0
    for name, value in BAD_RATES.items():
        env = make_envelope("tcp_1stream", f"bad-{name}", labels=labels)
        doc = json.loads(env.model_dump_json())
        bad += _set_rates(doc["result"], value)
        _write_raw(root, doc, partition_path(env))
    report = ingest(root, tmp_path / "cat")
    assert report.bad == [] and report.ingested == 1 + len(BAD_RATES)
    got = _sheet(tmp_path / "cat")
    (row,) = got.rows
    (want,) = expected.rows
    stats = row[3:9]  # group, runs, intervals, min p5 avg p50 p95 max, flag
    assert all(isinstance(v, float) and math.isfinite(v) and v >= 0 for v in stats), row
    assert row[1:9] == want[1:9]  # the good run's numbers alone
    assert got.impossible > 0 and got.impossible <= bad
    assert got.without_intervals == 0  # not "server without -J"
    notes = " ".join(cheatsheet_table(got).notes)
    assert f"{got.impossible} intervals with an impossible rate" in notes


HOSTILE = "\x1b]0;PWNED\x07\x1b[31mred\nFAKE,line"


@pytest.mark.parametrize("fmt", [OutputFormat.csv, OutputFormat.markdown, OutputFormat.json])
def test_no_output_format_prints_control_codes(fmt: OutputFormat) -> None:
    data = Tabular(
        columns=["label", HOSTILE],
        rows=[[HOSTILE, 1.0], [{"k": HOSTILE}, 2.0]],
        title=HOSTILE,
        notes=[f"note {HOSTILE}"],
    )
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        emit(data, fmt)
    text = out.getvalue() + err.getvalue()
    assert "\x1b" not in text and "\x07" not in text, text
    assert not any(line.startswith("FAKE") for line in text.splitlines())
    assert "\\x1b]0;PWNED" in render(data, fmt) or "\\u001b]0;PWNED" in render(data, fmt)


def test_every_report_over_the_catalog_leaves_impossible_rates_out_with_a_note(
    tmp_path: Path,
) -> None:
    """One filter (the catalog's ``intervals`` view) for analyze, compare, report topology and
    report html: rows with NaN, infinite, negative or > 10 Tbit/s rates never reach a
    statistic, and each says how many it left out."""
    from netfleet import api
    from netfleet.catalog import connect

    root = ResultsRoot(tmp_path / "raw")
    for n in range(3):
        root.write(make_envelope("tcp_1stream", f"good-{n}", campaign="other"))
    bad = 0
    for name, value in BAD_RATES.items():
        env = make_envelope("tcp_1stream", f"bad-{name}", labels={"topology": "x"})
        doc = json.loads(env.model_dump_json())
        (iv, *_) = doc["result"]["intervals"]
        iv["sum"]["bits_per_second"] = value  # one interval of each run
        bad += 1
        _write_raw(root, doc, partition_path(env))
    cat = tmp_path / "cat"
    assert ingest(root, cat).ingested == 3 + len(BAD_RATES)
    con = connect(cat)
    stored = con.execute("SELECT count(*) FROM intervals_stored").fetchone()
    kept = con.execute("SELECT count(*), max(bits_per_second), min(bits_per_second) FROM intervals")
    (count, high, low) = kept.fetchone() or (0, 0, 0)
    con.close()
    assert stored is not None and stored[0] - count >= bad
    assert math.isfinite(high) and 0 <= low <= high <= 10e12
    note = "hold a rate no link can carry"

    found = api.analyze(catalog=str(cat), campaign="camp")
    assert any(note in n for n in found.notes), found.notes
    for run in found.runs:
        for v in vars(run).values():
            assert not (isinstance(v, float) and math.isinf(v)), run
    cmp = api.compare("camp", "other", catalog=str(cat), metric=["goodput"])
    assert any(note in n for n in cmp.table().notes)
    assert all(math.isfinite(d.mean_a) for d in cmp.rows), cmp.rows
    topo = api.report_topology(catalog=str(cat), campaign="camp")
    assert any(note in n for n in topo.notes)
    html = api.report_html(catalog=str(cat), out=tmp_path / "r.html")
    assert note in html.read_text()


@pytest.mark.parametrize("value", list(BAD_RATES.values()), ids=list(BAD_RATES))
def test_analyze_of_one_raw_file_leaves_impossible_rates_out_with_a_note(
    tmp_path: Path, value: float
) -> None:
    from netfleet import api

    root = ResultsRoot(tmp_path / "raw")
    env = make_envelope("tcp_1stream", "bad")
    doc = json.loads(env.model_dump_json())
    for side in (doc["result"], doc["result"]["server_output_json"]):
        side["intervals"][1]["sum"]["bits_per_second"] = value  # one interval of each side
    _write_raw(root, doc, partition_path(env))
    (run,) = api.analyze("bad", results=str(root.path)).runs
    assert run.series is not None
    assert any("1 interval(s) with a rate no link can carry" in n for n in run.series.notes), (
        run.series.notes
    )
