"""Issue 27: what a user reads around the numbers tells the truth — seed 002's own files keep
their region and instance type, and a sender-only import still gives a cheat sheet (said so).
Parsing and DuckDB only: the files are real iperf3 3.12 captures (tests/fixtures/import) with
the top-level keys seed 002's script appended."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from netfleet.catalog.ingestion import ingest
from netfleet.cli.boundary import guarded
from netfleet.cli.main import app
from netfleet.report.cheatsheet import cheatsheet
from netfleet.store import ResultsRoot
from netfleet.store.imports import import_files

FIX = Path(__file__).parent / "fixtures" / "import"


def cli(*args: str) -> int:
    return guarded(lambda: app(list(args), standalone_mode=False, prog_name="netfleet"))


def seed002_file(root: Path, day: str, name: str, **top: Any) -> Path:
    """A client-side -J capture (no server output: sender side only) as seed 002 stored it."""
    doc = json.loads((FIX / "v3_12_tcp.client.json").read_bytes())
    doc.update(top)
    src = root / f"d={day}" / f"{name}.json.gz"
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_bytes(gzip.compress(json.dumps(doc).encode()))
    return src


def test_seed002_files_keep_their_region_and_instance_type(tmp_path: Path, capsys: Any) -> None:
    raw = tmp_path / "in"
    seed002_file(
        raw, "2018-04-10", "t2.nano-1523348026", instanceType="t2.nano", region="us-east-1"
    )
    seed002_file(
        raw, "2018-04-11", "m5.large-1523348099", instanceType="m5.large", region="eu-west-1"
    )
    root = ResultsRoot(tmp_path / "r")
    report = import_files([str(raw)], root, pattern="seed002")
    assert report.bad == [] and len(report.imported) == 2
    labels = sorted((d["labels"] for d in map(root.read, root.files())), key=str)
    assert labels == [
        {"instance_type": "m5.large", "region": "eu-west-1"},
        {"instance_type": "t2.nano", "region": "us-east-1"},
    ]
    ingest(root, tmp_path / "c")
    code = cli(
        "cheatsheet", "--catalog", str(tmp_path / "c"), "--by", "region,instance_type",
        "--format", "json",
    )  # fmt: skip
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert [(r["region"], r["instance_type"]) for r in out["rows"]] == [
        ("eu-west-1", "m5.large"),
        ("us-east-1", "t2.nano"),
    ]


def test_a_path_that_disagrees_with_the_file_is_reported(tmp_path: Path) -> None:
    raw = tmp_path / "in"
    bad = seed002_file(raw, "2018-04-10", "c4.large-1523348026", instanceType="t2.nano")
    root = ResultsRoot(tmp_path / "r")
    report = import_files([str(raw)], root, pattern="seed002")
    assert report.imported == [] and len(report.bad) == 1
    where, why = report.bad[0]
    assert where == str(bad)
    assert "instance_type='c4.large'" in why and "'instanceType' is 't2.nano'" in why
    assert "--label instance_type=" in why
    assert list(root.files()) == []


def test_a_sender_only_import_gives_a_cheat_sheet_that_says_so(tmp_path: Path, capsys: Any) -> None:
    raw = tmp_path / "in"
    seed002_file(
        raw, "2018-04-10", "t2.nano-1523348026", instanceType="t2.nano", region="us-east-1"
    )
    root = ResultsRoot(tmp_path / "r")
    assert import_files([str(raw)], root, pattern="seed002").bad == []
    ingest(root, tmp_path / "c")
    sheet = cheatsheet(tmp_path / "c")  # the default: receiver side
    (row,) = sheet.records()
    assert row["instance_type"] == "t2.nano" and row["runs"] == 1 and row["avg"] > 0
    assert "sender side" in str(row["flag"])
    assert "sender where absent" in str(sheet.title)
    assert any("no receiver-side intervals" in n for n in sheet.notes)
    assert cli("cheatsheet", "--catalog", str(tmp_path / "c"), "--format", "json") == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rows"] and any("sender" in n for n in out["notes"])
    # asked for the sender side, nothing is said: it is what was asked
    sender = cheatsheet(tmp_path / "c", side="sender")
    assert sender.records()[0]["avg"] == row["avg"] and not sender.records()[0]["flag"]
    assert not any("no receiver-side intervals" in n for n in sender.notes)
