"""`netfleet import` over real iperf3 outputs (tests/fixtures/import, captured by
scripts/capture_import_fixtures.py from iperf3 3.12 and 3.18): bytes kept, provenance, labels
from a path pattern, interval checks, truncated files, idempotence, and the catalog."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest

from netfleet.catalog.ingestion import ingest
from netfleet.catalog.query import query
from netfleet.cli.boundary import guarded
from netfleet.cli.main import app
from netfleet.errors import ExitStatus
from netfleet.store import ResultsRoot
from netfleet.store.imports import import_files

FIX = Path(__file__).parent / "fixtures" / "import"
FILES = sorted(FIX.glob("*.json"))
RUNS = [p for p in FILES if p.name != "MANIFEST.json"]


def cli(*args: str) -> int:
    return guarded(lambda: app(list(args), standalone_mode=False, prog_name="netfleet"))


def test_every_captured_output_imports_with_its_bytes_and_provenance(tmp_path: Path) -> None:
    root = ResultsRoot(tmp_path / "r")
    report = import_files([str(p) for p in RUNS], root, labels=["cloud=lab"])
    assert report.bad == [] and len(report.imported) == len(RUNS)
    docs = {d["notes"]["imported"]["from"]: d for d in map(root.read, root.files())}
    for path in RUNS:
        doc = docs[str(path)]
        imp = doc["notes"]["imported"]
        data = path.read_bytes()
        assert imp["original"].encode() == data  # the file's bytes, untouched
        assert imp["sha256"] == hashlib.sha256(data).hexdigest()
        assert "client" in imp["inferred"] and doc["labels"] == {"cloud": "lab"}
        assert doc["subject"] == ("server" if ".server." in path.name else "client")
        assert doc["engine"]["version"].startswith(("3.12", "3.18"))
        if "_udp_reverse.client" in path.name:
            assert doc["direction"] == "in"
        assert imp["flags"] == [], (path.name, imp["flags"])
    stream = docs[str(FIX / "v3_18_stream.client.json")]["result"]
    assert len(stream["intervals"]) == 2 and "end" in stream


def test_reimport_is_a_no_op_and_ingest_reads_the_numbers(tmp_path: Path) -> None:
    root = ResultsRoot(tmp_path / "r")
    import_files([str(p) for p in RUNS], root)
    import_files([str(p) for p in RUNS], root)
    assert len(list(root.files())) == len(RUNS)
    rep = ingest(root, tmp_path / "c")
    assert (rep.ingested, rep.bad) == (len(RUNS), [])
    path = FIX / "v3_12_tcp_gso.client.json"
    raw = json.loads(path.read_bytes())
    run_id = "import-" + hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    got = query(
        tmp_path / "c",
        "SELECT sum(bytes) FROM intervals WHERE run_id = ? AND role = 'receiver' AND kind = 'sum'",
        [run_id],
    ).rows
    expected = sum(iv["sum"]["bytes"] for iv in raw["server_output_json"]["intervals"])
    assert got == [[expected]] and expected > 0


def test_seed002_pattern_gz_and_flags(tmp_path: Path) -> None:
    doc = json.loads((FIX / "v3_12_tcp.client.json").read_bytes())
    doc["intervals"][0]["sum"]["bits_per_second"] *= 3  # does not add up
    del doc["start"]["timestamp"]  # the start time must come from the path
    src = tmp_path / "in" / "d=2018-04-10" / "c4.2xlarge-1523348026.json.gz"
    src.parent.mkdir(parents=True)
    src.write_bytes(gzip.compress(json.dumps(doc).encode()))
    root = ResultsRoot(tmp_path / "r")
    report = import_files([str(tmp_path / "in" / "**" / "*.gz")], root, pattern="seed002")
    assert report.bad == [] and report.flagged == [(str(src), 1)]
    (out,) = (root.read(p) for p in root.files())
    assert out["labels"] == {"instance_type": "c4.2xlarge"}
    assert out["started_at"].startswith("2018-04-10T08:13:46")
    imp = out["notes"]["imported"]
    assert "started_at" in imp["inferred"] and imp["original_encoding"] == "base64"
    assert (
        gzip.decompress(__import__("base64").b64decode(imp["original"])) == json.dumps(doc).encode()
    )
    assert imp["flags"][0]["field"] == "bits_per_second" and imp["flags"][0]["interval"] == 0


@pytest.mark.parametrize(
    ("name", "cut", "reason"),
    [
        ("v3_12_tcp.client.json", 0.6, "truncated JSON"),
        ("v3_18_stream.client.json", 0.6, "json-stream"),
    ],
)
def test_truncated_files_get_a_clear_reason_and_exit_2(
    tmp_path: Path, name: str, cut: float, reason: str
) -> None:
    data = (FIX / name).read_bytes()
    bad = tmp_path / name
    bad.write_bytes(data[: int(len(data) * cut)])
    root = ResultsRoot(tmp_path / "r")
    report = import_files([str(bad)], root)
    assert report.imported == [] and reason in report.bad[0][1], report.bad
    assert list(root.files()) == []
    assert cli("import", str(bad), "--results", str(tmp_path / "r")) == ExitStatus.INVALID_INPUT


def test_missing_source_and_bad_label_are_input_errors(tmp_path: Path) -> None:
    results = str(tmp_path / "r")
    assert (
        cli("import", str(tmp_path / "nope*.json"), "--results", results)
        == ExitStatus.INVALID_INPUT
    )
    ok = str(FIX / "v3_12_tcp.client.json")
    assert (
        cli("import", ok, "--label", "no-equals", "--results", results) == ExitStatus.INVALID_INPUT
    )
    assert cli("import", ok, "--label", "k=v", "--results", results) == 0


def test_iperf2_csv_imports_as_an_iperf2_run_and_ingests(tmp_path: Path) -> None:
    src = Path(__file__).parent / "fixtures" / "iperf2" / "tcp_p2.txt"  # real iperf2 -y C
    copy = tmp_path / "tcp_p2.csv.gz"
    copy.write_bytes(gzip.compress(src.read_bytes()))
    root = ResultsRoot(tmp_path / "r")
    report = import_files([str(copy)], root, labels=["tool=iperf2"])
    assert report.bad == [] and report.flagged == []
    (doc,) = (root.read(p) for p in root.files())
    assert doc["engine"]["name"] == "iperf2" and doc["result"]["client_output"] == src.read_text()
    assert doc["started_at"].startswith("2026-11-22T06:03:27")
    assert "started_at" in doc["notes"]["imported"]["inferred"]
    rep = ingest(root, tmp_path / "c")
    assert (rep.ingested, rep.bad) == (1, [])
    got = query(
        tmp_path / "c",
        "SELECT idx, bytes FROM intervals WHERE kind = 'sum' AND role = 'sender' ORDER BY idx",
    ).rows
    assert got == [[0, 2158755900 + 2708734012], [1, 2955149312 + 2699165696]]


def test_iperf2_rate_that_does_not_add_up_is_flagged(tmp_path: Path) -> None:
    src = Path(__file__).parent / "fixtures" / "iperf2" / "tcp_p2.txt"
    text = src.read_text().replace(",17270047200", ",99", 1)
    bad = tmp_path / "x.csv"
    bad.write_text(text)
    report = import_files([str(bad)], ResultsRoot(tmp_path / "r"))
    assert report.flagged == [(str(bad), 1)]
