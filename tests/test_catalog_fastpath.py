"""The columnar ingest path (DuckDB read_json + SQL) gives the same rows as the Python reference
path, on every captured iperf3 output (tests/fixtures/iperf3: TCP, -P 2, reverse, bidir, UDP,
-O 1, text server, refused/busy/killed server, SIGINT; tests/fixtures/import: 3.9, 3.12, 3.18
and 3.22, client and server JSON) and on odd shapes made from them; and files it cannot take
go to the Python path with the reason."""

from __future__ import annotations

import copy
import gzip
import json
import math
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from netfleet.catalog import TABLES, ingest, query
from netfleet.catalog import ingestion as ingest_module
from netfleet.store.envelope import EngineRecord, Envelope, HostRecord
from netfleet.store.root import ResultsRoot

HERE = Path(__file__).parent / "fixtures"
NETFLEET = json.loads((HERE / "iperf3" / "MANIFEST.json").read_text())["fixtures"]


def _one_object(path: Path) -> bool:
    try:
        return isinstance(json.loads(path.read_text()), dict)
    except ValueError:  # --json-stream lines: netfleet import's business
        return False


IMPORTS = sorted(
    p.name.removesuffix(".client.json")
    for p in (HERE / "import").glob("*.client.json")
    if _one_object(p)
)


def _result(name: str) -> dict[str, Any]:
    """A captured client JSON; imported ones carry the server's JSON as netfleet stores it."""
    if name in NETFLEET:
        doc: dict[str, Any] = json.loads((HERE / "iperf3" / f"{name}.json").read_text())
        return doc
    client = json.loads((HERE / "import" / f"{name}.client.json").read_text())
    server = HERE / "import" / f"{name}.server.json"
    if "server_output_json" not in client and _one_object(server):
        client["server_output_json"] = json.loads(server.read_text())
    return client


CASES = sorted(NETFLEET) + IMPORTS


def envelope(name: str, run_id: str, result: Any = "fixture", **params: Any) -> Envelope:
    meta = NETFLEET.get(name, {})
    return Envelope(
        netfleet_version="0.1.0",
        run_id=run_id,
        run_key=f"{name}/0",
        campaign="camp",
        test=name,
        repeat=0,
        sequence=0,
        status=meta.get("status", "ok"),
        direction=meta.get("direction", "out"),
        subject="client",
        params={**meta.get("params", {}), **params},
        labels={"instance_type": "m5.large", "odd": 'it\'s "quoted" ünï'},
        client=HostRecord(name="cli", kind="local", address="127.0.0.1", facts={"mtu": 1500}),
        server=HostRecord(name="srv", kind="local", address="127.0.0.1", facts={"cpus": 2}),
        engine=EngineRecord(name="iperf3", version="3.12", argv=["iperf3"]),
        started_at="2026-11-22T05:23:19.250000+00:00",
        ended_at="2026-11-22T05:23:22Z",
        duration_s=2.75,
        result=_result(name) if result == "fixture" else result,
    )


def _rows(catalog: Path, table: str) -> Counter[tuple[Any, ...]]:
    rows = query(
        catalog,
        f"SELECT * EXCLUDE (source) FROM {table}" if table == "runs" else f"SELECT * FROM {table}",
    ).rows
    return Counter(tuple(_same(v) for v in row) for row in rows)


def _same(value: Any) -> Any:
    """NaN equals NaN for the comparison."""
    return "NaN" if isinstance(value, float) and math.isnan(value) else value


def both_paths(root: ResultsRoot, tmp: Path) -> tuple[Any, Any, dict[str, tuple[Any, Any]]]:
    fast = ingest(root, tmp / "fast")
    slow = ingest(root, tmp / "slow", fast=False)
    tables = {t: (_rows(tmp / "fast", t), _rows(tmp / "slow", t)) for t in TABLES if t != "latency"}
    return fast, slow, tables


def test_fast_path_equals_python_path_on_every_captured_output(tmp_path: Path) -> None:
    root = ResultsRoot(tmp_path / "raw")
    for n, name in enumerate(CASES):
        root.write(envelope(name, f"r{n:02d}-{name}"))
        root.write(envelope(name, f"rev{n:02d}-{name}", reverse=True, direction=None))
    fast, slow, tables = both_paths(root, tmp_path)
    assert (fast.ingested, fast.bad) == (slow.ingested, slow.bad) == (2 * len(CASES), [])
    assert fast.rows == slow.rows
    for table, (got, want) in tables.items():
        assert got == want, table
    assert slow.fast == 0
    # only the text server goes the Python way, and says why
    assert {Path(p).name.split("-", 1)[1] for p, _ in fast.fallback} == {"tcp_server_text.json.gz"}
    assert all("text server" in why for _, why in fast.fallback)
    assert fast.fast == 2 * len(CASES) - 2
    # the interval rows are really there: bidir, UDP, stubs, omitted, server side
    flows = query(tmp_path / "fast", "SELECT DISTINCT side, role, flow, kind FROM intervals").rows
    assert len(flows) >= 8


ODD: dict[str, Any] = {
    "no result": None,
    "empty result": {},
    "empty server": {"server_output_json": {}},
    "empty sums": {"intervals": [{"sum": {}, "streams": []}, {"sum": {}}]},
    "no sender flags": "strip-sender",
    "repeated interval": "repeat-last",
    "error only": {"error": "unable to connect", "start": {}, "end": {}},
    "streams not objects": {"intervals": [{"sum": {"bytes": 5}, "streams": [None, 3]}]},
    "null streams": {"intervals": [{"sum": {"bytes": 5, "sender": False}, "streams": [None]}]},
    "wrong types": {"intervals": [{"sum": {"bytes": "lots"}}]},
    "huge number": {"intervals": [{"sum": {"bytes": 2**70}}]},
    "intervals not a list": {"intervals": {"sum": {}}},
    "server text": {"server_output_text": "nothing useful"},
}


def _odd(kind: str, base: dict[str, Any]) -> Any:
    value = ODD[kind]
    if value == "strip-sender":
        doc = copy.deepcopy(base)
        for entry in doc["intervals"]:
            for series in [entry.get("sum", {}), *entry.get("streams", [])]:
                series.pop("sender", None)
        return doc
    if value == "repeat-last":
        doc = copy.deepcopy(base)
        if doc.get("intervals"):
            doc["intervals"].append(copy.deepcopy(doc["intervals"][-1]))
        return doc
    return value


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    picks=st.lists(
        st.tuples(st.sampled_from(CASES), st.sampled_from(sorted(ODD))), min_size=1, max_size=6
    )
)
def test_fast_path_equals_python_path_on_odd_shapes(picks: list[tuple[str, str]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = ResultsRoot(Path(tmp) / "raw")
        for n, (name, kind) in enumerate(picks):
            root.write(envelope(name, f"odd{n}", result=_odd(kind, _result(name))))
            root.write(envelope(name, f"plain{n}"))
        fast, slow, tables = both_paths(root, Path(tmp))
        assert (fast.ingested, fast.skipped, fast.bad) == (slow.ingested, slow.skipped, slow.bad)
        for table, (got, want) in tables.items():
            assert got == want, table


@pytest.mark.parametrize("batch_runs", [1, 3, 500])
def test_fast_path_keeps_batches_idempotence_and_bad_files(tmp_path: Path, batch_runs: int) -> None:
    root = ResultsRoot(tmp_path / "raw")
    for n, name in enumerate(CASES):
        root.write(envelope(name, f"r{n:02d}"))
    folder = root.path / "d=2026-11-22" / "campaign=camp"
    good = json.loads(envelope("tcp_p2", "zz").model_dump_json())
    bad = {
        "not-gzip": b"plain",
        "two-objects": gzip.compress(b'{"a": 1}\n{"b": 2}\n'),
        "wrong-day": gzip.compress(
            json.dumps({**good, "run_id": "wd", "started_at": "2020-01-01T00:00:00Z"}).encode()
        ),
    }
    for name, data in bad.items():
        (folder / f"{name}.json.gz").write_bytes(data)
    (folder / "copy.json.gz").write_bytes((folder / "r00.json.gz").read_bytes())
    report = ingest(root, tmp_path / "cat", batch_runs=batch_runs)
    assert {Path(p).name for p, _ in report.fallback} == {f"{n}.json.gz" for n in bad} | {
        f"r{CASES.index('tcp_server_text'):02d}.json.gz"
    }
    reference = ingest(root, tmp_path / "ref", batch_runs=batch_runs, fast=False)
    assert report.bad == reference.bad and report.skipped == reference.skipped == 1
    assert report.batches == reference.batches == math.ceil(len(CASES) / batch_runs)
    assert {Path(p).name.removesuffix(".json.gz") for p, _ in report.bad} >= {
        "not-gzip",
        "two-objects",
    }
    assert report.fast > 0
    again = ingest(root, tmp_path / "cat", batch_runs=batch_runs)
    assert (again.ingested, again.batches) == (0, 0)
    for table in TABLES:
        assert _rows(tmp_path / "cat", table) == _rows(tmp_path / "ref", table), table


def test_chunks_read_side_by_side_keep_file_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three readers on chunks of two files: the catalog is the Python path's, and the files
    left to the Python path are reported in listing order, whichever reader finished first."""
    monkeypatch.setattr(ingest_module, "FAST_CHUNK_FILES", 2)
    monkeypatch.setattr(ingest_module, "_readers", lambda: 3)
    root = ResultsRoot(tmp_path / "raw")
    for n, name in enumerate(CASES):
        root.write(envelope(name, f"r{n:02d}"))
    folder = root.path / "d=2026-11-22" / "campaign=camp"
    for n in range(0, len(CASES), 4):
        (folder / f"r{n:02d}-zbad.json.gz").write_bytes(b"not gzip")
    report = ingest(root, tmp_path / "cat")
    reference = ingest(root, tmp_path / "ref", fast=False)
    fallback = [Path(p).name for p, _ in report.fallback]
    assert len(fallback) > 3 and fallback == sorted(fallback)
    assert (report.ingested, report.bad) == (reference.ingested, reference.bad)
    for table in TABLES:
        assert _rows(tmp_path / "cat", table) == _rows(tmp_path / "ref", table), table


def test_the_query_gives_each_file_one_piece_per_region(tmp_path: Path) -> None:
    """The fast path's speed rests on this: DuckDB returns each file's interval rows of a region
    (sums, reverse sums, streams; client, server) in one piece, so no sort is needed — checked
    on every captured output, server sides included. (The regions themselves may come in
    either order: DuckDB does not keep a UNION ALL's member order, and spans do not need it.)"""
    from netfleet.catalog import fastpath

    root = ResultsRoot(tmp_path / "raw")
    for n, name in enumerate(CASES):
        root.write(envelope(name, f"r{n:02d}"))
    files = sorted(root.path.glob("d=*/campaign=*/*.json.gz"))
    for _ in range(5):
        con = fastpath.connection(threads=1)
        [(_, rows)] = fastpath.read_chunk(con, files, lambda n, why: pytest.fail(why))
        rows = rows.filter(pc.greater_equal(rows.column("idx"), 0))
        _, region, ks = fastpath.pieces(rows)
        assert set(region.tolist()) == set(fastpath.REGIONS)  # client and server, all three
        pairs = list(zip(region.tolist(), ks.tolist(), strict=True))
        assert len(set(pairs)) == len(pairs)


def test_rows_in_any_order_give_the_python_paths_catalog(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each run's rows are spans of its chunk's table, one per piece of a region. Should a
    DuckDB ever return the rows shuffled, runs get more, smaller spans: the catalog is still
    the Python path's, batch by batch (a batch boundary cuts a chunk)."""
    from netfleet.catalog import fastpath

    query_of = fastpath.chunk_sql
    monkeypatch.setattr(
        fastpath,
        "chunk_sql",
        lambda limit: (  # the header rows stay first, in file order: read_chunk checks them
            f"SELECT * FROM ({query_of(limit)}) "
            "ORDER BY idx >= 0, CASE WHEN idx < 0 THEN k END, hash(k, pos, idx, stream_id)"
        ),
    )
    root = ResultsRoot(tmp_path / "raw")
    for n, name in enumerate(CASES):
        root.write(envelope(name, f"r{n:02d}"))
        root.write(envelope(name, f"rev{n:02d}", reverse=True, direction=None))
    report = ingest(root, tmp_path / "cat", batch_runs=5)
    reference = ingest(root, tmp_path / "ref", batch_runs=5, fast=False)
    assert report.fast == 2 * len(CASES) - 2 and report.batches == reference.batches > 1
    for table in TABLES:
        assert _rows(tmp_path / "cat", table) == _rows(tmp_path / "ref", table), table


def test_local_listing_is_the_roots_own(tmp_path: Path) -> None:
    """The no-op ingest lists files by scandir: same files, same order as ResultsRoot.files()."""
    from netfleet.catalog.ingestion import local_files
    from netfleet.catalog.layout import TABLES as LAYOUT_TABLES
    from netfleet.catalog.rows import SCHEMAS

    assert tuple(SCHEMAS) == LAYOUT_TABLES  # the layout spells the tables out
    for day in ("d=2026-01-01", "d=2026-01-02"):
        for campaign in ("campaign=a", "campaign=a-b", "campaign=a.c", "campaign=B"):
            folder = tmp_path / day / campaign
            folder.mkdir(parents=True)
            for name in ("x.json.gz", "x-1.json.gz", ".tmp-y.part", "z.json", "A.json.gz"):
                (folder / name).write_bytes(b"")
    (tmp_path / "d=2026-01-01" / "not-a-campaign").mkdir()
    assert local_files(tmp_path) == list(ResultsRoot(tmp_path).files())
