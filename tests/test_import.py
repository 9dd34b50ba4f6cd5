"""`netfleet import` over real iperf3 outputs (tests/fixtures/import, captured by
scripts/capture_import_fixtures.py from iperf3 3.9, 3.12, 3.18 and 3.22; tests/fixtures/public,
from public projects, SOURCES.md): bytes kept, provenance, labels from a path pattern, interval
checks, truncated files, idempotence, and the catalog. Parsing only: no network."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path
from statistics import median
from typing import Any

import pytest

from netfleet.catalog.ingestion import ingest
from netfleet.catalog.query import query
from netfleet.cli.boundary import guarded
from netfleet.cli.main import app
from netfleet.errors import ExitStatus
from netfleet.store import ResultsRoot
from netfleet.store.import_base import run_identity
from netfleet.store.imports import import_files

FIX = Path(__file__).parent / "fixtures" / "import"
FILES = sorted(FIX.glob("*.json"))
RUNS = [p for p in FILES if p.name != "MANIFEST.json"]
#: name -> argv, exit codes and `iperf3 --version` line of each capture
CAPTURED: dict[str, dict[str, Any]] = json.loads((FIX / "MANIFEST.json").read_text())["fixtures"]


def captured_version(path: Path) -> str:
    return str(CAPTURED[path.name.split(".")[0]]["version"].split()[1])


def raw_doc(path: Path) -> dict[str, Any]:
    """The file's document read here, without netfleet (--json-stream: its events folded)."""
    text = path.read_text()
    if not text.startswith('{"event"'):
        return dict(json.loads(text))
    doc: dict[str, Any] = {"intervals": []}
    for ev in map(json.loads, text.splitlines()):
        if ev["event"] == "interval":
            doc["intervals"].append(ev["data"])
        else:
            doc[ev["event"]] = ev["data"]
    return doc


def raw_sides(path: Path) -> dict[str, list[dict[str, Any]]]:
    """side -> that side's interval sums, as the file holds them."""
    doc = raw_doc(path)
    own = "server" if ".server." in path.name else "client"
    sides = {own: [iv["sum"] for iv in doc["intervals"]]}
    if "server_output_json" in doc:
        sides["server"] = [iv["sum"] for iv in doc["server_output_json"]["intervals"]]
    return sides


def cli(*args: str) -> int:
    return guarded(lambda: app(list(args), standalone_mode=False, prog_name="netfleet"))


def test_every_captured_output_imports_with_its_bytes_and_provenance(tmp_path: Path) -> None:
    root = ResultsRoot(tmp_path / "r")
    report = import_files([str(p) for p in RUNS], root, labels=["cloud=lab"], pair=False)
    assert report.bad == [] and len(report.imported) == len(RUNS)
    docs = {d["notes"]["imported"]["from"]: d for d in map(root.read, root.files())}
    for path in RUNS:
        doc = docs[str(path)]
        imp = doc["notes"]["imported"]
        data = path.read_bytes()
        assert imp["original"].encode() == data  # the file's bytes, untouched
        assert imp["sha256"] == hashlib.sha256(data).hexdigest()
        assert "client" in imp["inferred"] and doc["labels"] == {"cloud": "lab"}
        server = ".server." in path.name
        assert doc["subject"] == ("server" if server else "client")
        assert doc["engine"]["version"] == captured_version(path)
        # -R: the server sends; direction is the subject's own
        assert doc["direction"] == ("out" if ("_reverse" in path.name) == server else "in")
        assert imp["flags"] == [], (path.name, imp["flags"])
    assert {captured_version(p) for p in RUNS} >= {"3.9", "3.12", "3.18", "3.22"}
    stream = docs[str(FIX / "v3_18_stream.client.json")]["result"]
    assert len(stream["intervals"]) == 2 and "end" in stream


def imported_run_id(path: Path, campaign: str = "imported", **labels: str) -> str:
    """The run id of ``path`` imported into ``campaign`` with ``labels``: its content hash with
    what it is filed under (one file in two campaigns is two runs)."""
    return run_identity(run_id_hash(path), campaign, labels)


def run_id_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_reimport_is_a_no_op_and_ingest_reads_the_numbers(tmp_path: Path) -> None:
    root = ResultsRoot(tmp_path / "r")
    import_files([str(p) for p in RUNS], root, pair=False)
    import_files([str(p) for p in RUNS], root, pair=False)
    assert len(list(root.files())) == len(RUNS)
    rep = ingest(root, tmp_path / "c")
    assert (rep.ingested, rep.bad) == (len(RUNS), [])
    path = FIX / "v3_12_tcp_gso.client.json"
    raw = json.loads(path.read_bytes())
    run_id = imported_run_id(path)
    got = query(
        tmp_path / "c",
        "SELECT sum(bytes) FROM intervals WHERE run_id = ? AND role = 'receiver' AND kind = 'sum'",
        [run_id],
    ).rows
    expected = sum(iv["sum"]["bytes"] for iv in raw["server_output_json"]["intervals"])
    assert got == [[expected]] and expected > 0
    # the original bytes stay in the raw envelope; the catalog keeps their hash, not a copy
    (notes,) = query(tmp_path / "c", "SELECT notes FROM runs WHERE run_id = ?", [run_id]).rows[0]
    imported = json.loads(notes)["imported"]
    assert "original" not in imported and imported["sha256"] == run_id_hash(path)
    check_rows_per_side(tmp_path / "c")


def check_rows_per_side(catalog: Path) -> None:
    """Every captured run's catalog rows, side by side, against the file read here: which side,
    who sent (-R turns it round), how many intervals, bytes, omitted ones (-O), and the UDP
    packet and jitter columns wherever the file has them."""
    got = {
        (r[0], r[1]): r[2:]
        for r in _rows(
            catalog,
            "SELECT run_id, side, min(role), max(role), min(flow), count(*), sum(bytes),"
            " count(*) FILTER (WHERE omitted), count(packets), count(jitter_ms)"
            " FROM intervals WHERE kind = 'sum' GROUP BY ALL",
        )
    }
    expected = {}
    for path in RUNS:
        reverse = "_reverse" in path.name
        flow = "server_to_client" if reverse else "client_to_server"
        run_id = imported_run_id(path)
        for side, sums in raw_sides(path).items():
            role = "sender" if (side == "server") == reverse else "receiver"
            expected[run_id, side] = [
                role,
                role,
                flow,
                len(sums),
                sum(s["bytes"] for s in sums),
                sum(bool(s.get("omitted")) for s in sums),
                sum("packets" in s for s in sums),
                sum("jitter_ms" in s for s in sums),
            ]
            if "_udp" in path.name:  # UDP: packets on every row, jitter on the receiver's
                assert expected[run_id, side][6] == len(sums)
                assert expected[run_id, side][7] == (len(sums) if role == "receiver" else 0)
            if "_omit" in path.name:
                assert expected[run_id, side][5] == 1
    assert got == expected


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


def _rows(catalog: Path, sql: str, *params: object) -> list[list[object]]:
    return query(catalog, sql, list(params)).rows


@pytest.mark.parametrize(
    ("name", "role", "flow", "direction"),
    [
        ("v3_12_tcp.server.json", "receiver", "client_to_server", "in"),
        ("v3_18_udp_reverse.server.json", "sender", "server_to_client", "out"),
    ],
)
def test_iperf3_server_side_is_catalogued_as_the_server(
    tmp_path: Path, name: str, role: str, flow: str, direction: str
) -> None:
    path = FIX / name
    root = ResultsRoot(tmp_path / "r")
    assert import_files([str(path)], root).bad == []
    (doc,) = (root.read(p) for p in root.files())
    assert (doc["subject"], doc["direction"]) == ("server", direction)
    assert ingest(root, tmp_path / "c").bad == []
    got = _rows(
        tmp_path / "c",
        "SELECT DISTINCT side, role, flow FROM intervals WHERE kind = 'sum' AND NOT omitted",
    )
    assert got == [["server", role, flow]]
    raw = json.loads(path.read_bytes())
    (total,) = _rows(tmp_path / "c", "SELECT sum(bytes) FROM intervals WHERE kind = 'sum'")
    assert total == [sum(iv["sum"]["bytes"] for iv in raw["intervals"])]


IPERF2 = FIX / "iperf2"  # scripts/capture_iperf2_import_fixtures.py (iperf 2.1.8, loopback)


@pytest.mark.parametrize("case", ["tcp_p2_e", "tcp_reverse_e", "udp_e", "tcp_csv"])
def test_iperf2_both_sides_import_and_ingest(tmp_path: Path, case: str) -> None:
    root = ResultsRoot(tmp_path / "r")
    files = [IPERF2 / f"{case}.client.txt", IPERF2 / f"{case}.server.txt"]
    report = import_files([str(p) for p in files], root)
    assert report.bad == [] and report.flagged == [], (report.bad, report.flagged)
    docs = {Path(d["notes"]["imported"]["from"]).name: d for d in map(root.read, root.files())}
    assert docs[f"{case}.server.txt"]["subject"] == "server"
    assert docs[f"{case}.client.txt"]["subject"] == "client"
    text = case.endswith("_e")
    # text says its side and its UTC start; CSV does not (side from the file name)
    assert ("subject" in docs[f"{case}.server.txt"]["notes"]["imported"]["inferred"]) != text
    assert ingest(root, tmp_path / "c").bad == []
    got = _rows(
        tmp_path / "c",
        "SELECT i.side, i.role, count(*), sum(i.bytes) FROM intervals i"
        " WHERE i.kind = 'sum' GROUP BY ALL ORDER BY 1",
    )
    reverse = case == "tcp_reverse_e"  # -R: the text says "(reverse)"; the server sends
    roles = ("receiver", "sender") if reverse else ("sender", "receiver")
    assert [r[:3] for r in got] == [["client", roles[0], 2], ["server", roles[1], 2]]
    assert docs[f"{case}.client.txt"]["direction"] == ("in" if reverse else "out")
    # each side's interval bytes are within 2 % of each other (text rounds to 3 digits)
    assert abs(got[0][3] - got[1][3]) <= 0.02 * got[1][3]
    if case == "udp_e":
        (loss,) = _rows(
            tmp_path / "c",
            "SELECT sum(packets) FROM intervals WHERE side = 'server' AND kind = 'sum'",
        )
        assert loss[0] > 0  # the server's Lost/Total columns were read


def test_iperf2_side_option_and_a_contradiction(tmp_path: Path) -> None:
    root = ResultsRoot(tmp_path / "r")
    csv = tmp_path / "run.csv"
    csv.write_bytes((IPERF2 / "tcp_csv.server.txt").read_bytes())
    assert import_files([str(csv)], root, side="server").bad == []
    (doc,) = (root.read(p) for p in root.files())
    assert doc["subject"] == "server" and "subject" not in doc["notes"]["imported"]["inferred"]
    report = import_files([str(IPERF2 / "tcp_p2_e.server.txt")], root, side="client")
    assert report.bad and "server output" in report.bad[0][1]
    assert cli("import", str(csv), "--side", "sideways", "--results", str(tmp_path / "r")) == 2


LIVE = Path(__file__).parent / "fixtures" / "iperf3_live"  # scripts/capture_live_fixtures.py


def test_iperf3_text_is_refused_by_name_never_stored_as_iperf2(tmp_path: Path) -> None:
    """iperf3's text report (a --forceflush server's stdout) resembles iperf 2's text; it was
    stored as an iperf2 run. Now it is refused, saying what to import instead."""
    texts = sorted(LIVE.glob("text_server_*.txt"))
    assert len(texts) == 4
    root = ResultsRoot(tmp_path / "r")
    report = import_files([str(p) for p in texts] + [str(IPERF2 / "tcp_p2_e.server.txt")], root)
    assert sorted(Path(f).name for f, _ in report.bad) == [p.name for p in texts]
    assert all("iperf3's text output" in why and "-J" in why for _, why in report.bad)
    # iperf 2's text, beside it, is still read as iperf 2's
    assert [root.read(p)["engine"]["name"] for p in root.files()] == ["iperf2"]
    status = cli("import", str(texts[0]), "--results", str(tmp_path / "r2"))
    assert status == ExitStatus.INVALID_INPUT


PUBLIC = Path(__file__).parent / "fixtures" / "public"  # SOURCES.md names each one


#: iperf3 3.17.1 clients (UDP -O 2, --get-server-output) against an iperf3 3.9 server; after the
#: omitted second both sides report one interval of ~2 s holding 1 s of bytes (rate half the truth)
MASQ_R = "v3_17_1_udp_reverse_gso_omit2.masquerade.json"  # -R: the 3.9 server sends
MASQ_UP = "v3_17_1_udp_gso_omit2.masquerade.json"  # the 3.9 server receives (its end: 0 bytes)


def test_public_project_outputs_import(tmp_path: Path) -> None:
    files = sorted(PUBLIC.glob("*.json"))
    assert len(files) >= 7
    root = ResultsRoot(tmp_path / "r")
    report = import_files([str(p) for p in files], root)
    assert report.bad == []
    assert sorted(report.flagged) == [(str(PUBLIC / MASQ_UP), 4), (str(PUBLIC / MASQ_R), 4)]
    docs = {Path(d["notes"]["imported"]["from"]).name: d for d in map(root.read, root.files())}
    for name, doc in docs.items():
        assert doc["engine"]["version"] == json.loads((PUBLIC / name).read_bytes())["start"][
            "version"
        ].removeprefix("iperf ")
        assert doc["status"] == ("failed" if "_error_" in name else "ok")
    assert "started_at" in docs["v3_7_error_refused.openwisp.json"]["notes"]["imported"]["inferred"]
    assert (docs[MASQ_R]["direction"], docs[MASQ_UP]["direction"]) == ("in", "out")
    for name in (MASQ_R, MASQ_UP):
        flags = docs[name]["notes"]["imported"]["flags"]
        assert [(f["side"], f["interval"], f["field"]) for f in flags] == [
            ("client", 1, "seconds"),
            ("client", 1, "seconds"),
            ("server", 1, "seconds"),
            ("server", 1, "seconds"),
        ]
        assert "≠ end−start" in flags[0]["detail"]
        assert "2.0× the run's usual 1 s interval" in flags[1]["detail"]
    catalog = tmp_path / "c"
    assert ingest(root, catalog).bad == []
    omitted = _rows(
        catalog,
        "SELECT count(*) FILTER (WHERE omitted), count(*) FROM intervals i JOIN runs r USING"
        " (run_id) WHERE r.engine_version = '3.9' AND i.kind = 'sum'",
    )
    assert omitted == [
        [3, 13]
    ]  # -O 3: three omitted seconds, then the clock restarts (no gap flag)
    check_masquerade_rows(catalog, docs)


def check_masquerade_rows(catalog: Path, docs: dict[str, dict[str, Any]]) -> None:
    """Both sides of the 3.17.1/3.9 runs in the catalog: who sent, the UDP receiver's jitter and
    loss, the flags kept with the run, and the 2 s interval stored as the file says it (its rate
    about half the others'), not averaged away."""
    for name, receiver in ((MASQ_R, "client"), (MASQ_UP, "server")):
        run_id = imported_run_id(PUBLIC / name)
        ((notes,),) = _rows(catalog, "SELECT notes FROM runs WHERE run_id = ?", run_id)
        assert json.loads(notes)["imported"]["flags"] == docs[name]["notes"]["imported"]["flags"]
        sides = _rows(
            catalog,
            "SELECT side, min(role), max(role), count(*), count(*) FILTER (WHERE omitted),"
            " count(jitter_ms), count(lost_packets), count(packets) FROM intervals"
            " WHERE run_id = ? AND kind = 'sum' GROUP BY side ORDER BY side",
            run_id,
        )
        counts = {"client": 16, "server": 17}  # the server also reports the last 0.04 s
        assert sides == [
            [side, role, role, counts[side], 1, n, n, counts[side]]
            for side in ("client", "server")
            for role in ["receiver" if side == receiver else "sender"]
            for n in [counts[side] if side == receiver else 0]
        ]
        for side in ("client", "server"):
            rows = _rows(
                catalog,
                "SELECT seconds, bits_per_second FROM intervals WHERE run_id = ? AND side = ?"
                " AND kind = 'sum' AND NOT omitted AND seconds > 0.5 ORDER BY idx",
                run_id,
                side,
            )
            long_one = [r for r in rows if r[0] > 1.9]
            assert len(long_one) == 1 and len(rows) == 15
            usual = median(r[1] for r in rows)
            assert 0.45 * usual < long_one[0][1] < 0.55 * usual


def test_public_2_s_interval_is_flagged_in_the_import_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli("import", str(PUBLIC / MASQ_R), "--results", str(tmp_path / "r")) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"flagged {PUBLIC / MASQ_R}: 4 interval value(s) that don't add up" in out


def test_an_interval_longer_than_its_bytes_is_flagged(tmp_path: Path) -> None:
    """The shape of the public 3.17.1 files (one interval reports 2.001 s while holding 1 s of
    bytes, so its rate is half the truth) moved onto a public 3.9 TCP file whose start and end
    agree with it (the timeline after it shifted, so only its length is wrong); then a gap."""
    doc = json.loads((PUBLIC / "v3_9_tcp_omit3.cloudpilot.json").read_bytes())
    iv = doc["intervals"][6]["sum"]
    iv["seconds"] = 2.001
    shift = iv["start"] + 2.001 - iv["end"]
    iv["end"] = iv["start"] + 2.001
    iv["bits_per_second"] = iv["bytes"] * 8 / iv["seconds"]
    for later in doc["intervals"][7:]:
        later["sum"]["start"] += shift
        later["sum"]["end"] += shift
    long_one = tmp_path / "long.json"
    long_one.write_text(json.dumps(doc))
    for later in doc["intervals"][7:]:
        later["sum"]["start"] += 0.5
        later["sum"]["end"] += 0.5
    gap = tmp_path / "gap.json"
    gap.write_text(json.dumps(doc))
    root = ResultsRoot(tmp_path / "r")
    report = import_files([str(long_one), str(gap)], root)
    assert sorted(report.flagged) == [(str(gap), 2), (str(long_one), 1)]
    flags = {
        Path(d["notes"]["imported"]["from"]).name: d["notes"]["imported"]["flags"]
        for d in map(root.read, root.files())
    }
    assert [(f["interval"], f["field"]) for f in flags["long.json"]] == [(6, "seconds")]
    assert "2.0× the run's usual" in flags["long.json"][0]["detail"]
    assert [(f["interval"], f["field"]) for f in flags["gap.json"]] == [
        (7, "start"),
        (6, "seconds"),
    ]


def test_one_decoder_reads_iperf3_files_for_both_imports() -> None:
    """The import into a results root and the reader of an import by reference decode an iperf3
    file with one decoder: its sums-only reading is the whole document's without the streams
    (each sum typed, :data:`netfleet.iperf3json.Sum`: its fields the whole's values), and a
    document msgspec refuses (NaN, a number out of range) is read by the tolerant decode into
    the values the standard library gives."""
    import msgspec

    from netfleet.iperf3json import Interval
    from netfleet.store.import_iperf3 import decode, parse, typed

    def bare(doc: dict[str, Any]) -> dict[str, Any]:
        out = {**doc, "intervals": [{k: v for k, v in iv.items() if k != "streams"}
                                    for iv in doc.get("intervals", [])]}  # fmt: skip
        if "server_output_json" in doc:
            out["server_output_json"] = bare(doc["server_output_json"])
        return out

    def plain(doc: dict[str, Any]) -> dict[str, Any]:  # typed sums as the objects they were
        out = {**doc}
        if doc.get("intervals") and type(doc["intervals"][0]) is Interval:
            out["intervals"] = [
                {k: {f: v for f, v in msgspec.structs.asdict(s).items() if v is not None}
                 for k in ("sum", "sum_bidir_reverse") if (s := getattr(iv, k)) is not None}
                for iv in doc["intervals"]
            ]  # fmt: skip
        if "server_output_json" in doc:
            out["server_output_json"] = plain(doc["server_output_json"])
        return out

    read = typed_read = 0
    for path in sorted(FIX.glob("*.json")):
        data = path.read_bytes()
        whole = typed(data)
        if whole is None:  # --json-stream lines, another tool's JSON: the tolerant decoder's
            continue
        read += 1
        assert whole == json.loads(data) == decode(data), path.name
        sums = typed(data, streams=False)
        assert sums is not None and plain(sums) == bare(whole), path.name
        typed_read += bool(sums.get("intervals")) and type(sums["intervals"][0]) is Interval
    assert read > 4 and typed_read > 4
    odd = b'{"start": {"x": NaN, "big": 1e400}, "intervals": [], "end": {}}'
    assert typed(odd) is None
    doc = parse(odd)
    assert doc["start"]["big"] == float("inf") and doc["start"]["x"] != doc["start"]["x"]


def test_a_typed_document_reads_the_same_after_its_rows() -> None:
    """A document read typed (each interval's sums a Struct, their fields read once as
    columns for the checks and the rows) leaves those columns as read when its rows are made —
    the server's rows join the client's in one table — so its checks and rows read again are
    the same; and its rows are the sum rows of the whole document read as JSON's objects
    (--bidir's reverse sums too)."""
    from netfleet.engines.iperf3_rows import result_rows
    from netfleet.iperf3json import Typed
    from netfleet.store.import_iperf3 import check_intervals, typed

    for name in ("tcp_1stream", "tcp_bidir"):
        data = (Path(__file__).parent / "fixtures" / "iperf3" / f"{name}.json").read_bytes()
        doc = typed(data, streams=False)
        assert doc is not None and type(doc["intervals"]) is Typed, name
        assert type(doc["server_output_json"]["intervals"]) is Typed, name
        flags, rows = check_intervals(doc), result_rows("r", doc, {})[0].rows()
        assert check_intervals(doc) == flags and result_rows("r", doc, {})[0].rows() == rows
        whole = result_rows("r", json.loads(data), {})[0].rows()
        assert rows == [row for row in whole if row["kind"] == "sum"], name
        assert check_intervals(json.loads(data)) == flags, name
