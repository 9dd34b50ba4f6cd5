"""Advice on imported runs (issue 27.6): iperf3 client files captured through a real per-flow
cap of 300 Mbit/s (scripts/capture_flowcap_fixtures.py) — ``-P 1`` at ~290, ``-P 2`` at ~570
Mbit/s — give the per-flow-cap advice naming the stream count, although every imported file's
hosts are just "client" and "server"; and one parameter vocabulary (``parallel``) for imported
and older results alike."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from netfleet.advice import advise
from netfleet.store import ResultsRoot
from netfleet.store.imports import import_files

FLOWCAP = Path(__file__).parent / "fixtures" / "import" / "flowcap"


def envelopes(root: Path) -> list[dict[str, object]]:
    store = ResultsRoot(root)
    return [store.read(p) for p in store.files()]


def test_imported_flow_cap_names_its_stream_count(tmp_path: Path) -> None:
    files = sorted(str(p) for p in FLOWCAP.glob("p*.json"))
    report = import_files(files, ResultsRoot(tmp_path), labels=["instance_type=r4.large"])
    assert len(report.imported) == 4 and not report.bad
    docs = envelopes(tmp_path)
    assert {d["params"]["parallel"] for d in docs} == {1, 2}  # the spec's name, not num_streams
    assert all("num_streams" not in d["params"] for d in docs)
    [cap] = [a for a in advise(docs) if a.code == "per-flow-cap"]
    assert cap.evidence["streams"] == 2
    assert 250e6 < cap.evidence["one_stream_bps"] < 320e6, cap
    assert cap.evidence["ratio"] >= 1.8
    assert "2 streams" in cap.message and "-P 2" in cap.fix
    assert "instance_type=r4.large" in cap.message  # the host named by what identifies it
    assert len(cap.run_ids) == 4


def test_imported_hosts_of_different_types_are_not_one_host(tmp_path: Path) -> None:
    """-P1 files of one instance type and -P2 files of another are two hosts, not one pair of
    "client"/"server": no flow-cap finding mixes them."""
    root = ResultsRoot(tmp_path)
    import_files([str(p) for p in FLOWCAP.glob("p1-*.json")], root, labels=["instance_type=a"])
    import_files([str(p) for p in FLOWCAP.glob("p2-*.json")], root, labels=["instance_type=b"])
    assert not [a for a in advise(envelopes(tmp_path)) if a.code == "per-flow-cap"]


def test_a_stored_result_with_num_streams_is_read_as_parallel(tmp_path: Path) -> None:
    """Results imported before issue 22 stored iperf3's ``num_streams``: still read, as
    ``parallel``, so advice sees them."""
    root = ResultsRoot(tmp_path)
    import_files([str(p) for p in FLOWCAP.glob("p*.json")], root)
    for path in root.files():  # rewrite each as the old import stored it
        doc = json.loads(gzip.decompress(path.read_bytes()))
        doc["params"]["num_streams"] = doc["params"].pop("parallel")
        path.write_bytes(gzip.compress(json.dumps(doc).encode()))
    docs = envelopes(tmp_path)
    assert {d["params"]["parallel"] for d in docs} == {1, 2}
    assert [a.evidence["streams"] for a in advise(docs) if a.code == "per-flow-cap"] == [2]
