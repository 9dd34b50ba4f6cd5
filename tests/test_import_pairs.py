"""Issue 36: the client's and the server's iperf3 file of one test, imported together, are one
run in one direction (paired by iperf3's cookie); UDP files stay apart; a paced run (-b) is
said to measure its pacing. On the captured fixtures (tests/fixtures/import: both ends of one
test, each run at -b 100M by scripts/capture_import_fixtures.py)."""

from __future__ import annotations

import json
from pathlib import Path

from netfleet.advice import advise
from netfleet.catalog.ingestion import ingest
from netfleet.report.cheatsheet import cheatsheet
from netfleet.store import ResultsRoot
from netfleet.store.imports import import_files

FIX = Path(__file__).parent / "fixtures" / "import"
TCP = [FIX / "v3_18_tcp.client.json", FIX / "v3_18_tcp.server.json"]
UDP = [FIX / "v3_18_udp_reverse.client.json", FIX / "v3_18_udp_reverse.server.json"]


def test_a_tests_client_and_server_files_are_one_run(tmp_path: Path) -> None:
    root = ResultsRoot(tmp_path / "r")
    report = import_files([str(p) for p in TCP], root)
    assert report.bad == [] and len(report.imported) == 1
    assert report.paired == [(str(TCP[1]), str(TCP[0]))]
    (doc,) = map(root.read, root.files())
    assert doc["direction"] == "out" and doc["subject"] == "client"
    server = json.loads(TCP[1].read_text())
    assert doc["result"]["server_output_json"] == server
    assert doc["notes"]["imported"]["server_file"]["original"] == TCP[1].read_text()
    assert doc["notes"]["imported"]["paired_by"] == "iperf3 cookie"
    # the pair again: the same run, nothing written
    again = import_files([str(p) for p in reversed(TCP)], root)
    assert again.imported == [] and len(again.already) == 1
    # one row, the receiver's (the server's) intervals, no "sender side" stand-in
    ingest(root, tmp_path / "c")
    sheet = cheatsheet(tmp_path / "c", group_by=("direction",))
    (row,) = sheet.records()
    assert row["direction"] == "out" and row["runs"] == 1 and not row["flag"]


def test_udp_files_stay_apart_and_a_paced_run_says_so(tmp_path: Path) -> None:
    root = ResultsRoot(tmp_path / "r")
    report = import_files([str(p) for p in [*UDP, *TCP]], root)
    assert len(report.imported) == 3 and len(report.paired) == 1
    docs = list(map(root.read, root.files()))
    assert sorted(d["params"]["protocol"] for d in docs) == ["TCP", "UDP", "UDP"]
    assert all(d["params"]["bitrate"] == "100000000bit" for d in docs)
    tcp = next(d for d in docs if d["params"]["protocol"] == "TCP")
    [paced] = [a for a in advise([tcp]) if a.code == "paced"]
    assert "paced at 100 Mbit/s (-b)" in paced.message and "not the path" in paced.message
