"""Runs imported by reference are first-class (issue 34.3): ``analyze RUN_ID``, ``credit calc
RUN_ID``, ``report advice`` and ``report html`` read such a run from its source file, checked
against the manifest's SHA-256 — a changed or missing file is an error naming it, a kept copy
stands in — through the CLI, on iperf3 files captured through a real per-flow cap
(tests/fixtures/import/flowcap, scripts/capture_flowcap_fixtures.py), uncompressed as captured
(``report html`` read them as envelopes: "not gzip", issue 37)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from netfleet.catalog.query import query
from netfleet.errors import ExitStatus
from tests.test_import_reference import _age, cli

FLOWCAP = Path(__file__).parent / "fixtures" / "import" / "flowcap"


@pytest.fixture
def catalog(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, dict[str, str]]:
    """The four flow-cap files imported by reference (``--keep-copy`` into ``kept/``): the
    catalog and each file's run id by its name."""
    src = tmp_path / "src"
    src.mkdir()
    for f in sorted(FLOWCAP.glob("p*.json")):
        shutil.copy(f, src / f.name)
    _age(src)
    cat = tmp_path / "cat"
    args = ["import", str(src), "--catalog", str(cat), "--label", "instance_type=r4.large"]
    assert cli(*args, "--keep-copy", str(tmp_path / "kept")) == 0
    capsys.readouterr()
    rows = query(cat, "SELECT source, run_id FROM runs").rows
    return cat, {Path(str(source)).name: str(run_id) for source, run_id in rows}


def _json(capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    out = capsys.readouterr().out
    return dict(json.loads(out))


def test_a_run_imported_by_reference_is_analysed_by_its_id(
    catalog: tuple[Path, dict[str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    cat, runs = catalog
    run_id = runs["p2-1.json"]
    assert cli("analyze", run_id, "--catalog", str(cat), "--format", "json") == 0
    [row] = _json(capsys)["rows"]  # type: ignore[misc]
    assert row["run_id"] == run_id and row["instance_type"] == "r4.large"
    # credit calc reads the same run: a steady flow-capped run has no burst to measure
    assert cli("credit", "calc", run_id, "--catalog", str(cat)) == ExitStatus.INVALID_INPUT
    err = capsys.readouterr().err
    assert f"run {run_id}: no burst measured" in err and "no run" not in err
    # an id neither the results root nor the catalog holds: both places named
    assert cli("analyze", "import-0000", "--catalog", str(cat)) == ExitStatus.INVALID_INPUT
    assert f"nor in the catalog {cat}" in capsys.readouterr().err


def test_a_changed_or_missing_file_is_an_error_naming_it(
    catalog: tuple[Path, dict[str, str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cat, runs = catalog
    source = tmp_path / "src" / "p1-1.json"
    original = source.read_bytes()
    source.write_bytes(original.replace(b'"version"', b'"versi0n"', 1))
    shutil.rmtree(tmp_path / "kept")  # no copy to stand in
    assert cli("analyze", runs["p1-1.json"], "--catalog", str(cat)) == ExitStatus.INVALID_INPUT
    err = capsys.readouterr().err
    assert str(source) in err and "changed since it was imported" in err
    source.unlink()
    assert cli("analyze", runs["p1-1.json"], "--catalog", str(cat)) == ExitStatus.INVALID_INPUT
    err = capsys.readouterr().err
    assert str(source) in err and "cannot read the registered file" in err
    # advice over the catalog: the same error, naming the file
    assert cli("report", "advice", "--catalog", str(cat)) == ExitStatus.INVALID_INPUT
    assert str(source) in capsys.readouterr().err


def test_a_kept_copy_stands_in_for_a_missing_source(
    catalog: tuple[Path, dict[str, str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cat, runs = catalog
    (tmp_path / "src" / "p2-2.json").unlink()
    assert cli("analyze", runs["p2-2.json"], "-c", str(cat), "-f", "json") == 0
    [row] = _json(capsys)["rows"]  # type: ignore[misc]
    assert row["run_id"] == runs["p2-2.json"]


def test_advice_and_the_report_read_the_runs_from_their_files(
    catalog: tuple[Path, dict[str, str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cat, runs = catalog
    # no results root at all: the advice is the catalog's runs'
    assert cli("report", "advice", "--catalog", str(cat), "--format", "json") == 0
    [cap] = _json(capsys)["rows"]  # type: ignore[misc]
    assert cap["code"] == "per-flow-cap" and "instance_type=r4.large" in cap["finding"]
    assert sorted(cap["runs"].split(", ")) == sorted(runs.values())
    out = tmp_path / "report.html"
    assert cli("report", "html", "--catalog", str(cat), "--out", str(out)) == 0
    page = out.read_text()
    assert "capped near 286 Mbit/s" in page  # the per-flow-cap advice, from the uncompressed files


def test_the_report_names_a_missing_file_beside_the_advice_of_the_rest(
    catalog: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    # p2-1 gone (and its kept copy): the per-flow cap is still seen in the other three runs,
    # and the report says which file it could not read, not advice over 3 runs as if over 4
    source = tmp_path / "src" / "p2-1.json"
    source.unlink()
    shutil.rmtree(tmp_path / "kept")
    out = tmp_path / "report.html"
    assert cli("report", "html", "--catalog", str(catalog[0]), "--out", str(out)) == 0
    page = out.read_text()
    assert "capped near 286 Mbit/s" in page
    assert "1 run(s) could not be read" in page and str(source) in page
