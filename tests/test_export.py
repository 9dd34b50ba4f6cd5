"""`netfleet export`: the Spark flavour runs for real (PySpark local) over raw results written by
`netfleet import` and over the Parquet catalog `netfleet ingest` made of them, and gives the same
tables as DuckDB (the raw query) and as `netfleet cheatsheet` (the catalog query), with the same
(exact, linear-interpolation) quantile definition: Spark ``percentile`` = DuckDB
``quantile_cont``."""

from __future__ import annotations

import subprocess
from pathlib import Path

import duckdb
import pytest

import netfleet.api
from netfleet.catalog.cheatsheet import cheatsheet_data
from netfleet.catalog.export import (
    catalog_partitions,
    catalog_table_ddl,
    cheatsheet_query,
    export_sql,
    raw_table_ddl,
)
from netfleet.catalog.ingestion import ingest
from netfleet.catalog.lazystreams_build import part_files
from netfleet.catalog.schemas import SCHEMAS
from netfleet.catalog.views import connect
from netfleet.store import ResultsRoot
from netfleet.store.imports import import_files
from tests.lazykit import lazy_copy, manifest_rows

TESTS = Path(__file__).parent
FIX = TESTS / "fixtures" / "import"
#: iperf3 client and server files, iperf 2 text and CSV, public outputs (incl. errors, -O 3)
SOURCES = [
    *sorted(FIX.glob("*.json")),
    *sorted((FIX / "iperf2").glob("*.txt")),
    *sorted((TESTS / "fixtures" / "public").glob("*.json")),
]


def raw_results(tmp_path: Path) -> Path:
    root = ResultsRoot(tmp_path / "raw")
    for i, path in enumerate(p for p in SOURCES if p.name != "MANIFEST.json"):
        kind = "m5.large" if i % 2 else "c5.xlarge"
        rep = import_files([str(path)], root, labels=[f"instance_type={kind}"])
        assert rep.bad == []
    return root.path


def duckdb_sheet(raw: Path) -> list[tuple[object, ...]]:
    con = duckdb.connect()
    con.execute(
        "CREATE VIEW netfleet_raw AS SELECT * FROM read_json("
        f"'{raw}/d=*/campaign=*/*.json.gz', hive_partitioning=true, "
        "columns={run_id: 'VARCHAR', status: 'VARCHAR', direction: 'VARCHAR', "
        "labels: 'MAP(VARCHAR, VARCHAR)', result: 'STRUCT(intervals STRUCT(sum STRUCT("
        "bits_per_second DOUBLE, omitted BOOLEAN))[])'})",
    )
    sql = (
        cheatsheet_query("trino")
        .replace("approx_percentile", "quantile_cont")
        .replace(
            "CROSS JOIN UNNEST(result.intervals) AS t(iv)", ", unnest(result.intervals) AS t(iv)"
        )
    )
    return [tuple(r) for r in con.execute(sql).fetchall()]


def test_every_dialect_prints_ddl_and_query() -> None:
    for dialect in ("athena", "trino", "spark"):
        text = export_sql(dialect, "s3://b/p", "s3://b/c")  # type: ignore[arg-type]
        assert "s3://b/p/" in text and "instance_type" in text
        for table in ("runs", "intervals", "ends"):
            assert f"netfleet_{table} (" in text and f"s3://b/c/{table}/" in text
        assert "MSCK" not in text.split("the Parquet catalog")[1]  # not partitioned today
    assert "projection.d.type" in raw_table_ddl("athena", "s3://b/p")
    assert "'it''s/'" in raw_table_ddl("spark", "it's")
    assert '"end" double' in catalog_table_ddl("trino", "s3://b/c", "intervals")
    assert "i.role = 'sender'" in export_sql("athena", "s3://b/p", "s3://b/c", side="sender")
    # per-stream rows: the built parts of registered files, and a view of every stream row
    for dialect in ("athena", "trino", "spark"):
        text = export_sql(dialect, "s3://b/p", "s3://b/c")  # type: ignore[arg-type]
        assert "netfleet_lazy_streams (" in text and "s3://b/c/streams/" in text
        assert "CREATE VIEW netfleet_streams AS" in text and "UNION ALL" in text
    local = export_sql("spark", "s3://b/p", "/nowhere")
    assert "netfleet_lazy_streams" not in local and "CREATE VIEW netfleet_streams AS" in local


STREAM_TOTALS = (
    "SELECT run_id, side, role, count(*) AS n, sum(bytes) AS b, sum(bits_per_second) AS bps"
    " FROM {} GROUP BY run_id, side, role ORDER BY run_id, side, role"
)


def stream_totals(catalog: Path) -> list[tuple[object, ...]]:
    """Per run, side and role: per-stream rows, bytes and rates, by DuckDB over the catalog."""
    con = connect(catalog, streams=True)
    try:
        return [tuple(r) for r in con.execute(STREAM_TOTALS.format("streams")).fetchall()]
    finally:
        con.close()


def lazy_catalog(tmp_path: Path) -> tuple[Path, Path, Path]:
    """Raw envelopes, their eager catalog, and the same catalog with lazy per-stream rows."""
    raw = raw_results(tmp_path)
    assert ingest(ResultsRoot(raw), tmp_path / "catalog").bad == []
    return raw, tmp_path / "catalog", lazy_copy(tmp_path / "catalog", tmp_path / "lazy")


def test_export_builds_the_streams_of_a_lazy_catalog(tmp_path: Path) -> None:
    _, eager, lazy = lazy_catalog(tmp_path)
    ticks: list[tuple[int, int]] = []
    text = netfleet.api.export("trino", location="s3://b/p", catalog=str(lazy),
                               progress=lambda d, t: ticks.append((d, t)))  # fmt: skip
    assert f"{lazy}/streams/" in text and "netfleet_lazy_streams" in text
    covered = {f for p in (lazy / "streams").glob("part-*.parquet") for f in part_files(p)}
    assert covered == {r["file_id"] for r in manifest_rows(eager)}
    assert ticks and ticks[-1][0] == ticks[-1][1] == len(covered)
    # the built parts and the sums the catalog keeps are every row an eager catalog has
    assert stream_totals(lazy) == stream_totals(eager) and stream_totals(eager)


def test_hive_partitions_of_a_local_catalog_are_declared(tmp_path: Path) -> None:
    (tmp_path / "runs" / "d=2026-11-23").mkdir(parents=True)
    (tmp_path / "intervals").mkdir()
    assert catalog_partitions(tmp_path) == {"runs": ["d"], "intervals": [], "ends": []}
    for dialect, repair in (("spark", "MSCK REPAIR TABLE netfleet_runs"), ("trino", "sync_part")):
        text = export_sql(dialect, "s3://b/p", str(tmp_path))  # type: ignore[arg-type]
        assert repair in text
    spark = catalog_table_ddl("spark", "/c", "runs", ["d"])
    assert spark.endswith("USING parquet PARTITIONED BY (`d`) LOCATION '/c/runs/'")
    trino = catalog_table_ddl("trino", "/c", "runs", ["d"])
    last = [n for n in SCHEMAS["runs"].names if n != "d"][-1]  # the partition key comes last
    assert f'"{last}" varchar, "d" date)' in trino and "partitioned_by = ARRAY['d']" in trino
    athena = catalog_table_ddl("athena", "/c", "runs", ["d"])
    assert "PARTITIONED BY (`d` date)" in athena and "`d` date," not in athena


def hive_copy(catalog: Path, out: Path) -> Path:
    """The catalog with ``runs`` Hive-partitioned by ``d`` (``runs/d=YYYY-MM-DD/…``), written by
    DuckDB, and ``intervals``/``ends`` as they are."""
    con = duckdb.connect()
    out.mkdir()
    con.execute(
        f"COPY (SELECT * FROM read_parquet('{catalog}/runs/part-*.parquet')) TO '{out}/runs' "
        "(FORMAT parquet, PARTITION_BY (d))"
    )
    for table in ("intervals", "ends", "streams"):
        (out / table).mkdir()
        for part in (catalog / table).glob("part-*.parquet"):
            (out / table / part.name).write_bytes(part.read_bytes())
    assert catalog_partitions(out)["runs"] == ["d"]
    return out


def _stop_gateway() -> None:
    """SparkSession.stop() leaves PySpark's gateway JVM running (a class attribute holds it and
    its Popen to the end of the process: "subprocess N is still running" when an xdist worker
    exits). Close its connections, then its stdin — the JVM's signal to exit — and wait for it
    by its PID."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    if gateway is None:
        return
    proc = getattr(gateway, "proc", None)
    gateway.shutdown()
    SparkContext._gateway = SparkContext._jvm = None
    if proc is not None:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@pytest.mark.slow
def test_spark_runs_the_ddl_and_matches_duckdb(tmp_path: Path) -> None:
    """Over a catalog whose per-stream rows are lazy (built by the export), and its copy with
    ``runs`` Hive-partitioned."""
    pyspark_sql = pytest.importorskip("pyspark.sql")
    raw, eager, lazy = lazy_catalog(tmp_path)
    expected_streams = stream_totals(eager)
    assert len(expected_streams) >= 10
    expected_raw = duckdb_sheet(raw)
    assert expected_raw and all(r[3] > 0 for r in expected_raw)
    sheet = cheatsheet_data(lazy, group_by=("instance_type", "direction"))
    assert sheet.unit_label == "Gbit/s"
    expected_catalog = [tuple(r[:10]) for r in sheet.rows]  # groups, runs, intervals, 6 stats
    assert len(expected_catalog) >= 3
    spark = (
        pyspark_sql.SparkSession.builder.master("local[2]")
        .appName("netfleet-export-test")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.warehouse.dir", str(tmp_path / "wh"))
        .config("spark.sql.shuffle.partitions", "2")
        # a short job: the JVM's C1 compiler alone and one GC thread start and finish it sooner
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
        .getOrCreate()
    )
    script = netfleet.api.export("spark", location=str(raw), catalog=str(lazy))
    hive = hive_copy(lazy, tmp_path / "hive")
    results = []
    streams = STREAM_TOTALS.format("netfleet_streams") + ";\n"
    try:
        # then the same catalog with runs Hive-partitioned by d: PARTITIONED BY + MSCK REPAIR
        again = export_sql("spark", str(raw), str(hive)).split("-- the Parquet catalog")[1]
        tables = ("runs", "intervals", "ends", "lazy_streams")
        drops = "DROP VIEW netfleet_streams;\n" + "".join(
            f"DROP TABLE netfleet_{t};\n" for t in tables
        )
        assert "MSCK REPAIR TABLE netfleet_runs" in again
        for stmt in (script + streams + drops + "--" + again + streams).split(";\n"):
            body = "\n".join(ln for ln in stmt.splitlines() if not ln.startswith("--")).strip()
            if body:
                rows = spark.sql(body).collect()
                if body.startswith("SELECT"):
                    results.append([tuple(r) for r in rows])
    finally:
        spark.stop()
        _stop_gateway()
    assert len(results) == 5
    for got_streams in (results[2], results[4]):  # counts and bytes exact, rates to 1e-9
        assert [r[:5] for r in got_streams] == [r[:5] for r in expected_streams]
        assert [r[5] for r in got_streams] == pytest.approx([r[5] for r in expected_streams])
    del results[4], results[2]
    expected_all = (expected_raw, expected_catalog, expected_catalog)
    for got, expected in zip(results, expected_all, strict=True):
        assert len(got) == len(expected)
        for g, e in zip(got, expected, strict=True):
            assert g[:4] == e[:4]
            assert g[4:] == pytest.approx(e[4:], rel=1e-9)
