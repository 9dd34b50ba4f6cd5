"""Raw envelopes (built from captured iperf3 output) → ingest → Parquet → DuckDB views, SQL and
the cheat sheet give back the numbers of the raw JSON."""

from __future__ import annotations

import csv
import fcntl
import gzip
import importlib
import io
import json
import math
import os
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console

from netfleet.catalog import (
    TABLES,
    connect,
    envelope_rows,
    ingest,
    query,
)
from netfleet.catalog.cheatsheet import STUB_FRACTION
from netfleet.catalog.layout import META
from netfleet.engines import ENGINES
from netfleet.engines.iperf3_live import parse_text_intervals
from netfleet.errors import CatalogError, EnvironmentProblem, InputError
from netfleet.report.cheatsheet import cheatsheet
from netfleet.report.output import render
from netfleet.store.envelope import EngineRecord, Envelope, HostRecord
from netfleet.store.root import ResultsRoot
from netfleet.units import goodput_ratio

FIXTURES = Path(__file__).parent / "fixtures" / "iperf3"
MANIFEST: dict[str, Any] = json.loads((FIXTURES / "MANIFEST.json").read_text())["fixtures"]
NAMES = sorted(MANIFEST)
RAW = {name: json.loads((FIXTURES / f"{name}.json").read_text()) for name in NAMES}
TYPES = ("m5.large", "t3.large", "c5n.18xlarge")
# the writer module (its parts are written, published and committed there)
ingest_module = importlib.import_module("netfleet.catalog.writer")


def make_envelope(
    name: str,
    run_id: str,
    *,
    labels: dict[str, Any] | None = None,
    campaign: str = "camp",
    client_mtu: int | None = 1500,
    server_mtu: int | None = 9001,
    day: str = "2026-11-22",
) -> Envelope:
    m = MANIFEST[name]
    return Envelope(
        netfleet_version="0.1.0",
        run_id=run_id,
        run_key=f"{name}/0",
        campaign=campaign,
        test=name,
        repeat=0,
        sequence=0,
        status=m["status"],
        direction=m["direction"],
        subject="client",
        params=m["params"],
        labels=labels if labels is not None else {"instance_type": "m5.large"},
        client=HostRecord(
            name="cli",
            kind="local",
            address="127.0.0.1",
            facts={"mtu": client_mtu, "cpus": 2} if client_mtu else {},
        ),
        server=HostRecord(
            name="srv",
            kind="local",
            address="127.0.0.1",
            facts={"mtu": server_mtu} if server_mtu else {},
        ),
        engine=EngineRecord(
            name="iperf3", version="3.12", argv=m["client_argv"], server_argv=m["server_argv"] or []
        ),
        started_at=f"{day}T05:23:19.250000+00:00",
        ended_at=f"{day}T05:23:22Z",
        duration_s=2.75,
        result=RAW[name],
    )


def populate(root: ResultsRoot, names: Sequence[str], **kw: Any) -> dict[str, Envelope]:
    envelopes = {}
    for n, name in enumerate(names):
        run_id = f"run-{n:04d}-{name}"
        envelopes[run_id] = make_envelope(name, run_id, **kw)
        root.write(envelopes[run_id])
    return envelopes


def sql(catalog: Path, text: str, params: Sequence[Any] | None = None) -> list[list[Any]]:
    return query(catalog, text, params).rows


@pytest.fixture
def built(tmp_path: Path) -> tuple[ResultsRoot, Path, dict[str, Envelope]]:
    root = ResultsRoot(tmp_path / "raw")
    envelopes = populate(root, NAMES)
    report = ingest(root, tmp_path / "catalog")
    assert (report.seen, report.ingested, report.bad) == (len(NAMES), len(NAMES), [])
    return root, tmp_path / "catalog", envelopes


# ---------------------------------------------------------------- round trip: raw = SQL


def text_server(doc: dict[str, Any]) -> list[Any]:
    """A text server's sum intervals (no ``-J``): iperf3's own lines, parsed independently."""
    text = doc.get("server_output_text")
    if doc.get("server_output_json") is not None or not isinstance(text, str):
        return []
    return parse_text_intervals(text, doc["start"]["test_start"]["num_streams"])


def raw_receiver_bytes(doc: dict[str, Any]) -> int:
    """Bytes of every receiver-side sum interval, read straight from iperf3's output."""
    total = 0
    for side in (doc, doc.get("server_output_json") or {}):
        for entry in side.get("intervals", []):
            for key in ("sum", "sum_bidir_reverse"):
                if key in entry and entry[key].get("sender") is False:
                    total += entry[key]["bytes"]
    reverse = doc["start"].get("test_start", {}).get("reverse")
    if not reverse:
        total += sum(round(iv.bits_per_second * (iv.end - iv.start) / 8) for iv in text_server(doc))
    return total


def raw_interval_count(doc: dict[str, Any]) -> int:
    """Distinct intervals per host (iperf3 3.12 repeats one when the server dies)."""
    return sum(
        len({(e["sum"]["start"], e["sum"]["end"]) for e in side.get("intervals", [])})
        for side in (doc, doc.get("server_output_json") or {})
    ) + len(text_server(doc))


def test_sql_gives_back_the_raw_numbers(
    built: tuple[ResultsRoot, Path, dict[str, Envelope]],
) -> None:
    _, catalog, envelopes = built
    got = {
        r[0]: r[1:]
        for r in sql(
            catalog,
            """
        SELECT r.run_id,
               coalesce(sum(i.bytes) FILTER (WHERE i.kind = 'sum' AND i.role = 'receiver'), 0),
               count(DISTINCT i.side || ':' || i.idx)
        FROM runs r LEFT JOIN intervals i USING (run_id) GROUP BY r.run_id""",
        )
    }
    assert set(got) == set(envelopes)
    for run_id, env in envelopes.items():
        assert env.result is not None
        assert got[run_id] == [raw_receiver_bytes(env.result), raw_interval_count(env.result)]

    ends = {
        (r[0], r[1]): r[2:]
        for r in sql(catalog, "SELECT run_id, side, sum_received_bytes, error FROM ends")
    }
    for run_id, env in envelopes.items():
        assert env.result is not None
        end = env.result["end"].get("sum_received", {})
        assert ends[(run_id, "client")] == [end.get("bytes"), env.result.get("error")]
        server = env.result.get("server_output_json")
        assert ((run_id, "server") in ends) == (server is not None)


def test_runs_columns(built: tuple[ResultsRoot, Path, dict[str, Envelope]]) -> None:
    _, catalog, envelopes = built
    rows = query(catalog, "SELECT * FROM runs ORDER BY run_id")
    records = {r["run_id"]: r for r in rows.records()}
    for run_id, env in envelopes.items():
        rec = records[run_id]
        assert rec["status"] == env.status and rec["test"] == env.test
        assert rec["parallel"] == env.params["parallel"]
        assert rec["reverse"] == (env.params["direction"] == "in") and rec["bidir"] == (
            env.params["direction"] == "bidir"
        )
        assert rec["protocol"] == ("udp" if (env.params["protocol"] == "udp") else "tcp")
        assert rec["client_mtu"] == 1500 and rec["server_mtu"] == 9001
        assert str(rec["d"]) == "2026-11-22"
        assert rec["started_at"].isoformat() == "2026-11-22T05:23:19.250000"
        assert json.loads(rec["labels"]) == env.labels
        assert json.loads(rec["params"]) == env.params
        assert rec["source"].endswith(f"/campaign=camp/{run_id}.json.gz")
        assert rec["error"] == (env.result or {}).get("error")


def test_views_exist_and_empty_catalog_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match=r"no catalog at .*: run netfleet ingest first"):
        connect(tmp_path / "nothing")
    with pytest.raises(InputError, match="not a directory"):  # a missing root: nothing made
        ingest(ResultsRoot(tmp_path / "raw"), tmp_path / "catalog")
    assert not (tmp_path / "catalog").exists()
    (tmp_path / "raw").mkdir()
    report = ingest(ResultsRoot(tmp_path / "raw"), tmp_path / "catalog")  # no raw files
    assert (report.seen, report.ingested) == (0, 0)
    with pytest.raises(CatalogError, match="no catalog"):
        query(tmp_path / "catalog", "SELECT 1")


def test_sql_errors_carry_duckdb_message(
    built: tuple[ResultsRoot, Path, dict[str, Envelope]],
) -> None:
    _, catalog, _ = built
    with pytest.raises(CatalogError, match="nosuch"):
        query(catalog, "SELECT nosuch FROM runs")
    con = connect(catalog)
    try:
        names = {r[0] for r in con.execute("SHOW TABLES").fetchall()}
    finally:
        con.close()
    # every row as ingested (streams too), and the manifest: one row per envelope
    assert names == {*TABLES, "intervals_stored", "streams", "manifest"}
    assert sql(catalog, "SELECT count(*) FROM runs WHERE status = ?", ["ok"]) == [
        [sum(1 for n in NAMES if MANIFEST[n]["status"] == "ok")]
    ]


# ---------------------------------------------------------------- property: random campaigns

LABEL_VALUES = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    picks=st.lists(st.sampled_from(NAMES), min_size=1, max_size=14),
    values=st.lists(LABEL_VALUES, min_size=1, max_size=3),
    batch_runs=st.integers(min_value=1, max_value=6),
)
def test_round_trip_property(picks: list[str], values: list[str], batch_runs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = ResultsRoot(Path(tmp) / "raw")
        envelopes = {}
        for n, name in enumerate(picks):
            env = make_envelope(name, f"r{n}", labels={"zone": values[n % len(values)]})
            envelopes[env.run_id] = env
            root.write(env)
        report = ingest(root, Path(tmp) / "cat", batch_runs=batch_runs)
        assert report.ingested == len(picks)
        assert report.batches == math.ceil(len(picks) / batch_runs)
        expected = {t: 0 for t in TABLES}
        per_run: dict[str, int] = {}
        for run_id, env in envelopes.items():
            rows = envelope_rows(json.loads(env.model_dump_json()))
            expected["runs"] += 1
            expected["intervals"] += len(rows.intervals)
            expected["ends"] += len(rows.ends)
            assert env.result is not None
            per_run[run_id] = raw_receiver_bytes(env.result)
        assert report.rows == expected
        cat = Path(tmp) / "cat"
        for table in TABLES:
            assert sql(cat, f"SELECT count(*) FROM {table}") == [[expected[table]]]
        got = dict(
            sql(
                cat,
                """SELECT r.run_id, coalesce(sum(i.bytes) FILTER (
            WHERE i.kind = 'sum' AND i.role = 'receiver'), 0)
            FROM runs r LEFT JOIN intervals i USING (run_id) GROUP BY 1""",
            )
        )
        assert got == per_run
        # hostile label values are data: they come back intact through the JSON column
        zones = dict(sql(cat, "SELECT run_id, json_extract_string(labels, '$.zone') FROM runs"))
        assert zones == {rid: env.labels["zone"] for rid, env in envelopes.items()}
        # ... and group as themselves in the cheat sheet
        sheet = cheatsheet(cat, group_by=("zone",))
        assert {r[0] for r in sheet.rows} <= set(values)


# ---------------------------------------------------------------- idempotency and streaming


def test_ingest_is_idempotent_and_adds_new_files(
    built: tuple[ResultsRoot, Path, dict[str, Envelope]],
) -> None:
    root, catalog, envelopes = built
    before = {t: sql(catalog, f"SELECT count(*) FROM {t}")[0][0] for t in TABLES}
    again = ingest(root, catalog)
    assert (again.seen, again.ingested, again.skipped, again.bad) == (len(NAMES), 0, len(NAMES), [])
    assert again.batches == 0
    assert {t: sql(catalog, f"SELECT count(*) FROM {t}")[0][0] for t in TABLES} == before

    root.write(make_envelope("tcp_p2", "fresh-run"))
    added = ingest(str(root.path), catalog)  # a path works as well as a ResultsRoot
    assert (added.ingested, added.skipped) == (1, len(NAMES))
    assert sql(catalog, "SELECT count(*), count(DISTINCT run_id) FROM runs") == [
        [len(NAMES) + 1, len(NAMES) + 1]
    ]

    # the same run under another file name (copied results): skipped by its run_id
    copy = root.path / "d=2026-11-22" / "campaign=camp" / "copy-of-a-run.json.gz"
    copy.write_bytes(next(iter(root.files())).read_bytes())
    dup = ingest(root, catalog)
    assert (dup.ingested, dup.skipped, dup.bad) == (0, len(NAMES) + 2, [])
    assert sql(catalog, "SELECT count(*) FROM runs")[0][0] == len(NAMES) + 1
    del envelopes


def test_batches_and_progress(tmp_path: Path) -> None:
    root = ResultsRoot(tmp_path / "raw")
    populate(root, NAMES)
    calls: list[tuple[int, int]] = []
    report = ingest(
        root, tmp_path / "cat", progress=lambda d, t: calls.append((d, t)), batch_runs=3
    )
    assert report.batches == math.ceil(len(NAMES) / 3)
    for table in TABLES:
        assert len(list((tmp_path / "cat" / table).glob("part-*.parquet"))) == report.batches
    assert calls[0] == (0, len(NAMES)) and calls[-1] == (len(NAMES), len(NAMES))
    assert [d for d, _ in calls] == list(range(len(NAMES) + 1))
    # a row budget also closes batches: one interval row per batch at most → one run per batch
    small = ingest(root, tmp_path / "cat2", batch_rows=1)
    with_rows = sum(1 for n in NAMES if RAW[n]["intervals"])
    assert small.batches >= with_rows


# ---------------------------------------------------------------- bad files


def _gz(data: bytes) -> bytes:
    return gzip.compress(data)


def test_bad_raw_files_are_reported_and_skipped(tmp_path: Path) -> None:
    root = ResultsRoot(tmp_path / "raw")
    populate(root, ["tcp_1stream", "udp_50m"])
    folder = root.path / "d=2026-11-22" / "campaign=camp"
    good = json.loads(make_envelope("tcp_p2", "x").model_dump_json())
    cases = {
        "not-gzip": b"plain text",
        "truncated": _gz(b'{"netfleet_format": 1, "run_id": ')[:20],
        "not-json": _gz(b"{nope"),
        "not-utf8": _gz(b'\xff\xfe{"netfleet_format": 1}'),
        "a-list": _gz(b"[1, 2]"),
        "no-format": _gz(json.dumps({"run_id": "x"}).encode()),
        "future": _gz(json.dumps({**good, "netfleet_format": 99}).encode()),
        "missing-key": _gz(json.dumps({k: v for k, v in good.items() if k != "status"}).encode()),
        "bad-time": _gz(json.dumps({**good, "run_id": "bt", "started_at": "soon"}).encode()),
    }
    for name, data in cases.items():
        (folder / f"{name}.json.gz").write_bytes(data)
    report = ingest(root, tmp_path / "cat")
    assert (report.seen, report.ingested, len(report.bad)) == (2 + len(cases), 2, len(cases))
    reasons = {Path(path).name.removesuffix(".json.gz"): why for path, why in report.bad}
    assert set(reasons) == set(cases)
    assert "unreadable" in reasons["not-gzip"]
    assert "utf-8" in reasons["not-utf8"].lower()
    assert "netfleet_format" in reasons["no-format"]
    assert "newer" in reasons["future"]
    assert "status" in reasons["missing-key"]
    assert "started_at" in reasons["bad-time"]
    assert all(not r.startswith(str(folder)) for r in reasons.values())  # path is separate
    assert "2 ingested" in report.summary() and f"{len(cases)} bad" in report.summary()
    assert sql(tmp_path / "cat", "SELECT count(*) FROM runs") == [[2]]
    # still reported on the next run, still not fatal
    assert len(ingest(root, tmp_path / "cat").bad) == len(cases)


def test_a_run_whose_values_arrow_refuses_is_bad_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows are converted to Arrow several runs at a time; a refused value rejects one run."""
    engine = ENGINES["iperf3"]
    real = engine.table_rows

    def sloppy(run_id: str, result: Any, params: Any, outputs: Any) -> Any:
        tables = real(run_id, result, params, outputs)
        if run_id == "run-0001-tcp_p2":
            tables["intervals"].lists["bytes"][0] = "lots"  # a future parser's mistake
        return tables

    monkeypatch.setattr(engine, "table_rows", sloppy)  # what the catalog's row builder calls
    root = ResultsRoot(tmp_path / "raw")
    populate(root, ["tcp_1stream", "tcp_p2", "udp_50m"])
    report = ingest(root, tmp_path / "cat")
    assert (report.ingested, report.skipped) == (2, 0)
    ((path, reason),) = report.bad
    assert path.endswith("run-0001-tcp_p2.json.gz") and "does not fit" in reason
    assert sql(tmp_path / "cat", "SELECT count(*) FROM runs WHERE run_id LIKE '%tcp_p2'") == [[0]]
    monkeypatch.undo()
    assert ingest(root, tmp_path / "cat").ingested == 1  # fixed parser: the run comes in


# ---------------------------------------------------------------- crash safety


def test_a_crash_between_part_writes_leaves_a_consistent_catalog(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = ResultsRoot(tmp_path / "raw")
    catalog = tmp_path / "cat"
    first = populate(root, ["tcp_1stream", "tcp_reverse"])
    ingest(root, catalog)
    counts = {t: sql(catalog, f"SELECT count(*) FROM {t}")[0][0] for t in TABLES}

    for n, name in enumerate(["tcp_bidir", "udp_50m", "tcp_p2"]):
        root.write(make_envelope(name, f"late-{n}"))
    real_publish = ingest_module._publish

    def crash_before_runs(temp: Path, final: Path, dfd: int) -> None:
        if final.parent.name == "runs":
            raise OSError("power cut")
        real_publish(temp, final, dfd)

    monkeypatch.setattr(ingest_module, "_publish", crash_before_runs)
    with pytest.raises(OSError, match="power cut"):
        ingest(root, catalog)
    monkeypatch.undo()

    # the interval and end parts of the crashed batch are on disk but not visible
    assert len(list((catalog / "intervals").glob("part-*.parquet"))) == 2
    assert len(list((catalog / "runs").glob("part-*.parquet"))) == 1
    assert not list(catalog.glob("*/.tmp-*"))
    assert {t: sql(catalog, f"SELECT count(*) FROM {t}")[0][0] for t in TABLES} == counts
    for table in ("intervals", "ends"):
        assert sql(
            catalog, f"SELECT count(*) FROM {table} WHERE run_id NOT IN (SELECT run_id FROM runs)"
        ) == [[0]]
    assert {r[0] for r in sql(catalog, "SELECT run_id FROM runs")} == set(first)

    # the next ingest sweeps the orphans and adds the runs once
    report = ingest(root, catalog)
    assert (report.ingested, report.skipped) == (3, 2)
    for table in TABLES:
        assert len(list((catalog / table).glob("part-*.parquet"))) == 2
    expected = sum(
        len(envelope_rows(json.loads(make_envelope(n, "x").model_dump_json())).intervals)
        for n in ["tcp_1stream", "tcp_reverse", "tcp_bidir", "udp_50m", "tcp_p2"]
    )
    assert sql(catalog, "SELECT count(*) FROM intervals") == [[expected]]


def test_a_crash_while_writing_leaves_no_temp_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = ResultsRoot(tmp_path / "raw")
    populate(root, ["tcp_1stream"])
    calls = []

    def failing_write(fh: Any, table: str, rows: Any) -> None:
        calls.append(table)
        if len(calls) == 2:
            raise OSError("disk full")
        real_write(fh, table, rows)

    real_write = ingest_module._write_part
    monkeypatch.setattr(ingest_module, "_write_part", failing_write)
    with pytest.raises(OSError, match="disk full"):
        ingest(root, tmp_path / "cat")
    monkeypatch.undo()
    assert not [
        p
        for p in (tmp_path / "cat").rglob("*")
        if p.is_file() and p.name != META and p.name != ".lock"
    ]
    assert ingest(root, tmp_path / "cat").ingested == 1


def test_leftovers_of_a_killed_ingest_are_swept(
    built: tuple[ResultsRoot, Path, dict[str, Envelope]],
) -> None:
    root, catalog, _ = built
    (catalog / "runs" / ".tmp-part-x.parquet").write_bytes(b"half")
    (catalog / "intervals" / "part-orphan.parquet").write_bytes(b"never committed")
    assert sql(catalog, "SELECT count(*) FROM runs") == [[len(NAMES)]]  # readers ignore them
    ingest(root, catalog)
    assert not (catalog / "runs" / ".tmp-part-x.parquet").exists()
    assert not (catalog / "intervals" / "part-orphan.parquet").exists()


def test_catalog_format_and_lock(built: tuple[ResultsRoot, Path, dict[str, Envelope]]) -> None:
    root, catalog, _ = built
    with open(catalog / ".lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(EnvironmentProblem, match="another ingest"):
            ingest(root, catalog)
    (catalog / META).write_text(json.dumps({"catalog_format": 99}))
    with pytest.raises(CatalogError, match="catalog format 99"):
        connect(catalog)
    with pytest.raises(CatalogError, match="catalog format 99"):
        ingest(root, catalog)


# ---------------------------------------------------------------- cheat sheet math


def quantile_cont(values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (DuckDB quantile_cont, numpy 'linear')."""
    xs = sorted(values)
    h = (len(xs) - 1) * q
    lo = math.floor(h)
    return xs[lo] if lo + 1 >= len(xs) else xs[lo] + (h - lo) * (xs[lo + 1] - xs[lo])


def receiver_series(doc: dict[str, Any], interval: float) -> Iterator[float]:
    """Receiver-side goodput samples of one run, straight from the raw JSON."""
    for side in (doc, doc.get("server_output_json") or {}):
        for entry in side.get("intervals", []):
            for key in ("sum", "sum_bidir_reverse"):
                s = entry.get(key)
                if (
                    s
                    and s["sender"] is False
                    and not s["omitted"]
                    and s["seconds"] >= STUB_FRACTION * interval
                ):
                    yield s["bits_per_second"]
    if not doc["start"].get("test_start", {}).get("reverse"):
        for iv in text_server(doc):
            if not iv.omitted and iv.end - iv.start >= STUB_FRACTION * interval:
                yield iv.bits_per_second


def expected_sheet(groups: dict[str, list[str]], factor: float = 1.0) -> dict[str, list[float]]:
    out = {}
    for group, names in groups.items():
        values = [
            v * factor
            for n in names
            if MANIFEST[n]["status"] == "ok"
            for v in receiver_series(RAW[n], MANIFEST[n]["params"]["interval"])
        ]
        out[group] = [
            min(values) / 1e9,
            quantile_cont(values, 0.05) / 1e9,
            sum(values) / len(values) / 1e9,
            quantile_cont(values, 0.5) / 1e9,
            quantile_cont(values, 0.95) / 1e9,
            max(values) / 1e9,
        ]
    return out


@pytest.fixture
def by_type(tmp_path: Path) -> tuple[Path, dict[str, list[str]]]:
    """Every fixture twice, labelled with instance types round-robin."""
    root = ResultsRoot(tmp_path / "raw")
    groups: dict[str, list[str]] = defaultdict(list)
    for n, name in enumerate(NAMES * 2):
        itype = TYPES[n % len(TYPES)]
        groups[itype].append(name)
        root.write(make_envelope(name, f"run-{n}", labels={"instance_type": itype, "az": "a"}))
    ingest(root, tmp_path / "cat")
    return tmp_path / "cat", dict(groups)


def test_cheatsheet_math_by_label(by_type: tuple[Path, dict[str, list[str]]]) -> None:
    catalog, groups = by_type
    sheet = cheatsheet(catalog, group_by=("instance_type",))
    assert sheet.columns == [
        "instance_type",
        "runs",
        "intervals",
        "min",
        "p5",
        "avg",
        "p50",
        "p95",
        "max",
        "flag",
    ]
    assert "Gbit/s" in (sheet.title or "")
    assert [r[0] for r in sheet.rows] == sorted(groups)
    expected = expected_sheet(groups)
    for row in sheet.rows:
        assert row[3:-1] == pytest.approx(expected[row[0]], rel=1e-9)
        # a text server's lines are its receiver series too
        ok_runs = [n for n in groups[row[0]] if MANIFEST[n]["status"] == "ok"]
        assert row[1] == len(ok_runs)
        assert row[2] == sum(len(list(receiver_series(RAW[n], 1.0))) for n in ok_runs)
    notes = " ".join(sheet.notes)
    assert "quantile_cont" in notes and "receiver" in notes
    assert "omitted intervals" in notes
    stubs = any(
        s["seconds"] < STUB_FRACTION
        for n in NAMES
        if MANIFEST[n]["status"] == "ok"
        for side in (RAW[n], RAW[n].get("server_output_json") or {})
        for s in (e["sum"] for e in side.get("intervals", []))
        if s["sender"] is False
    )
    assert ("trailing intervals" in notes) == stubs
    no_series = any(
        not list(receiver_series(RAW[n], 1.0)) for n in NAMES if MANIFEST[n]["status"] == "ok"
    )
    assert ("have no receiver-side sum intervals" in notes) == no_series


def test_cheatsheet_wire_rate(by_type: tuple[Path, dict[str, list[str]]]) -> None:
    catalog, groups = by_type
    tcp = {
        g: [n for n in names if MANIFEST[n]["params"]["protocol"] != "udp"]
        for g, names in groups.items()
    }
    factor = 1 / goodput_ratio(1500)  # client MTU 1500, server 9001: the path is 1500
    assert factor == pytest.approx(1514 / 1448)
    sheet = cheatsheet(catalog, group_by="instance_type", rate="wire")
    expected = expected_sheet(tcp, factor)
    for row in sheet.rows:
        assert row[3:-1] == pytest.approx(expected[row[0]], rel=1e-9)
    assert any("1514/1448" in n for n in sheet.notes)
    assert any("UDP" in n for n in sheet.notes)


@pytest.mark.parametrize(
    ("client_mtu", "server_mtu", "mtu"),
    [(None, None, 1500), (9001, 9001, 9001), (9001, None, 9001)],
)
def test_wire_rate_uses_the_path_mtu(
    tmp_path: Path, client_mtu: int | None, server_mtu: int | None, mtu: int
) -> None:
    root = ResultsRoot(tmp_path / "raw")
    root.write(make_envelope("tcp_1stream", "one", client_mtu=client_mtu, server_mtu=server_mtu))
    ingest(root, tmp_path / "cat")
    good = cheatsheet(tmp_path / "cat", group_by=(), unit="bit")
    wire = cheatsheet(tmp_path / "cat", group_by=(), unit="bit", rate="wire")
    assert wire.rows[0][2:-1] == pytest.approx([v / goodput_ratio(mtu) for v in good.rows[0][2:-1]])


def test_cheatsheet_group_by_columns_and_filters(
    by_type: tuple[Path, dict[str, list[str]]],
) -> None:
    catalog, groups = by_type
    sheet = cheatsheet(catalog)  # default: instance_type, direction
    keys = [tuple(r[:2]) for r in sheet.rows]
    assert keys == sorted(keys)
    assert {k[1] for k in keys} == {"out", "in", "bidir"}

    split = cheatsheet(catalog, group_by=("direction", "flow"))
    assert [r[:2] for r in split.rows if r[0] == "bidir"] == [
        ["bidir", "client_to_server"],
        ["bidir", "server_to_client"],
    ]
    assert any("add 'flow'" in n for n in sheet.notes)
    assert not any("add 'flow'" in n for n in split.notes)

    parallel = cheatsheet(catalog, group_by=("parallel", "protocol"), side="sender", unit="mbit")
    assert {(r[0], r[1]) for r in parallel.rows} == {(1, "tcp"), (2, "tcp"), (1, "udp")}
    udp = next(r for r in parallel.rows if r[1] == "udp")
    assert udp[4:-1] == pytest.approx([50.0] * 6, rel=0.05)  # -b 50M, in Mbit/s

    only = cheatsheet(catalog, group_by=("instance_type",), where={"instance_type": "t3.large"})
    assert [r[0] for r in only.rows] == ["t3.large"]
    assert only.rows[0][3:-1] == pytest.approx(expected_sheet(groups)["t3.large"], rel=1e-9)
    sql_where = cheatsheet(
        catalog, group_by=("label:instance_type",), where="reverse AND parallel = 1"
    )
    assert {r[0] for r in sql_where.rows} <= set(TYPES) and sql_where.rows
    reverse = cheatsheet(catalog, group_by="test", where={"test": "tcp_reverse"})
    assert [r[:3] for r in reverse.rows] == [["tcp_reverse", 2, 6]]  # twice, 3 intervals each

    none = cheatsheet(catalog, campaign="no-such-campaign")
    assert none.rows == []
    assert any("no complete runs" in n and "no-such-campaign" in n for n in none.notes)


def test_cheatsheet_rejects_bad_keys_and_options(
    by_type: tuple[Path, dict[str, list[str]]],
) -> None:
    catalog, _ = by_type
    with pytest.raises(CatalogError, match="invalid label key") as bad:
        cheatsheet(catalog, group_by=("x'); DROP TABLE runs; --",))
    assert "letters, digits" in str(bad.value)
    with pytest.raises(CatalogError, match="unknown key 'region'") as unknown:
        cheatsheet(catalog, group_by=("region",))
    listed = str(unknown.value)
    assert "instance_type" in listed and "az" in listed and "direction" in listed
    with pytest.raises(CatalogError, match="unknown key"):
        cheatsheet(catalog, where={"nope": 1})
    with pytest.raises(CatalogError, match="label key"):
        cheatsheet(catalog, group_by=("label:1abc",))
    with pytest.raises(CatalogError, match="side"):
        cheatsheet(catalog, side="both")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="unknown unit"):  # one rate-unit table: netfleet.units
        cheatsheet(catalog, unit="furlong")
    with pytest.raises(CatalogError, match="cheat sheet query failed"):
        cheatsheet(catalog, where="no_such_column = 1")


def test_cheatsheet_only_counts_complete_runs(tmp_path: Path) -> None:
    root = ResultsRoot(tmp_path / "raw")
    populate(root, [n for n in NAMES if MANIFEST[n]["status"] != "ok"])
    ingest(root, tmp_path / "cat")
    sheet = cheatsheet(tmp_path / "cat", side="sender")
    assert sheet.rows == []
    assert any("no complete runs (status ok) in the catalog" in n for n in sheet.notes)


def test_renders(by_type: tuple[Path, dict[str, list[str]]]) -> None:
    catalog, _ = by_type
    sheet = cheatsheet(catalog, group_by=("instance_type",))
    records = json.loads(render(sheet, "json"))["rows"]
    assert [r["instance_type"] for r in records] == sorted(TYPES)
    assert records[0]["p95"] == sheet.rows[0][7]
    table = list(csv.reader(io.StringIO(render(sheet, "csv"))))
    assert table[0] == sheet.columns and len(table) == 1 + len(TYPES)
    assert float(table[1][5]) == pytest.approx(sheet.rows[0][5])
    markdown = render(sheet, "markdown").splitlines()
    assert markdown[0].startswith("| instance_type | runs | intervals | min | p5 | avg |")
    table = [line for line in markdown if line.startswith("|")]
    assert len(table) == 2 + len(TYPES)
    assert any(line.startswith("- ") and "goodput" in line for line in markdown)  # notes kept
    console = Console(record=True, width=200)
    console.print(render(sheet, "table"))
    text = console.export_text()
    assert "Interval goodput (Gbit/s) by instance_type, receiver side" in text
    assert "quantile_cont" in text and "m5.large" in text
    # query results render too (dates, timestamps, NULLs)
    runs = query(catalog, "SELECT run_id, d, started_at, reason FROM runs ORDER BY run_id")
    assert json.loads(render(runs, "json"))["rows"][0]["d"] == "2026-11-22"


def test_interval_parts_hold_the_sums_in_a_row_group_of_their_own(tmp_path: Path) -> None:
    """A query on sums skips the per-stream rows by row-group statistics: each intervals part
    has its ``sum`` rows in one row group, its ``stream`` rows in the next, all rows kept."""
    import pyarrow.parquet as pq

    root = ResultsRoot(tmp_path / "raw")
    populate(root, ["tcp_p2", "tcp_1stream"])
    catalog = tmp_path / "cat"
    ingest(root, catalog)
    (part,) = (catalog / "intervals").glob("part-*.parquet")
    meta = pq.ParquetFile(part).metadata
    kind = meta.schema.to_arrow_schema().get_field_index("kind")
    groups = [meta.row_group(g).column(kind).statistics for g in range(meta.num_row_groups)]
    assert [(s.min, s.max) for s in groups] == [("sum", "sum"), ("stream", "stream")]
    kinds = dict(sql(catalog, "SELECT kind, count(*) FROM intervals GROUP BY kind"))
    assert sum(meta.row_group(g).num_rows for g in range(2)) == kinds["sum"] + kinds["stream"]


def test_a_no_op_ingest_loads_neither_the_models_nor_the_columnar_libraries(
    tmp_path: Path,
) -> None:
    """A no-op ingest is start-up and a listing: the store's pydantic models, pyarrow and
    DuckDB stay unloaded (decided from the manifest's index: every file's stat its row's)."""
    import subprocess
    import sys

    root = ResultsRoot(tmp_path / "raw")
    populate(root, ["tcp_p2", "tcp_1stream"])
    for path in root.files():  # written a while ago (a file written just now is read again)
        os.utime(path, ns=(time.time_ns() - 10**10,) * 2)
    ingest(root, tmp_path / "cat")
    code = (
        "import sys\n"
        f"sys.argv = ['netfleet', 'ingest', '-r', {str(root.path)!r}, '--catalog', "
        f"{str(tmp_path / 'cat')!r}]\n"
        "from netfleet.cli.main import main\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n"
        "print('\\n'.join(sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "0 ingested, 2 already in the catalog" in out.stdout
    loaded = set(out.stdout.splitlines())
    assert not loaded & {"pydantic", "pyarrow", "duckdb", "netfleet.store.envelope"}


@pytest.mark.parametrize("damage", ['"a","b"\n', '"trunc\n', "7\n", "[]\n"])
def test_a_damaged_run_ids_file_falls_back_to_the_runs_part(
    built: tuple[ResultsRoot, Path, dict[str, Envelope]], damage: str
) -> None:
    """The ids file is read as one JSON array: a line that is not exactly one run_id (two on
    a line, a cut one, not text) is not taken; the runs part gives the batch's run_ids."""
    from netfleet.catalog.layout import IDS_DIR, committed_run_ids

    _, catalog, _ = built
    expected = {row[0] for row in sql(catalog, "SELECT run_id FROM runs")}
    assert committed_run_ids(catalog) == expected
    (ids,) = (catalog / IDS_DIR).glob("part-*.jsonl")
    lines = ids.read_text().splitlines(keepends=True)
    ids.write_text("".join(lines[:-1]) + damage)
    assert committed_run_ids(catalog) == expected
