"""Issue 9 case 7: raw results written after the last ingest were silently left out of the cheat
sheet, the topology table, analyze and the report. Each now says how many wait and what to run,
in every output format (CSV: on stderr, the CSV itself stays pure)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from netfleet.catalog import ingest
from netfleet.catalog.pending import pending_raw
from netfleet.cli.boundary import guarded
from netfleet.cli.main import app
from netfleet.store import ResultsRoot
from tests.test_catalog import make_envelope

CAT = "cat"


@pytest.fixture(scope="module")
def half_ingested(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two runs ingested, then two more written (one of them not a netfleet result)."""
    tmp = tmp_path_factory.mktemp("pending")
    root = ResultsRoot(tmp / "results")
    root.write(make_envelope("tcp_1stream", "run-1"))
    root.write(make_envelope("tcp_p2", "run-2"))
    ingest(root, tmp / CAT)
    root.write(make_envelope("tcp_1stream", "run-3"))
    stray = tmp / "results" / "d=2026-11-22" / "campaign=camp" / "junk.json.gz"
    stray.write_bytes(b"not gzip")
    return tmp


def netfleet(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """One netfleet command, in process: its exit status, stdout and stderr."""
    capsys.readouterr()
    code = guarded(lambda: app(list(args), standalone_mode=False, prog_name="netfleet"))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_check_lists_names_and_never_opens_a_file(half_ingested: Path) -> None:
    found = pending_raw(half_ingested / "results", half_ingested / CAT)
    assert found is not None and found.count == 2  # run-3 and the junk file
    assert f"netfleet ingest -r {half_ingested / 'results'}" in found.note()
    # the unreadable junk file did not break the check: it was listed, not read
    assert pending_raw(half_ingested / "nothing-here", half_ingested / CAT) is None


def test_nothing_pending_after_ingest_means_no_note(tmp_path: Path) -> None:
    root = ResultsRoot(tmp_path / "results")
    root.write(make_envelope("tcp_1stream", "run-1"))
    ingest(root, tmp_path / CAT)
    assert pending_raw(root, tmp_path / CAT) is None


@pytest.mark.parametrize(
    "command",
    [
        ["cheatsheet"],
        ["report", "topology", "--by", "instance_type"],
        ["analyze"],
    ],
    ids=["cheatsheet", "topology", "analyze"],
)
def test_listings_name_the_waiting_raw_results_in_every_format(
    half_ingested: Path,
    command: list[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(half_ingested)
    args = [*command, "--catalog", CAT, "-r", "results"]
    expected = "2 raw results under results are not in the catalog yet"
    code, table, err = netfleet(capsys, *args)
    assert code == 0, err
    assert expected in " ".join(table.split())  # the table's caption wraps
    code, as_json, err = netfleet(capsys, *args, "-f", "json")
    assert code == 0, err
    notes = json.loads(as_json)["notes"]
    assert any(expected in n and "netfleet ingest -r results" in n for n in notes)
    _, md, _ = netfleet(capsys, *args, "-f", "markdown")
    assert any(line.startswith("- ") and expected in line for line in md.splitlines())
    _, as_csv, csv_err = netfleet(capsys, *args, "-f", "csv")
    assert expected not in as_csv  # the CSV stays pure ...
    assert f"note: {expected}" in csv_err  # ... its notes go to stderr


def test_the_report_says_it_first(
    half_ingested: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(half_ingested)
    out = half_ingested / "report.md"
    code, _, err = netfleet(
        capsys,
        "report",
        "html",
        "--catalog",
        CAT,
        "-r",
        "results",
        "-f",
        "markdown",
        "-o",
        str(out),
    )
    assert code == 0, err
    assert "2 raw results under results are not in the catalog yet" in out.read_text()
