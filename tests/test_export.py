"""`netfleet export`: the Spark flavour runs for real (PySpark local) over raw results written by
`netfleet import` and over the Parquet catalog `netfleet ingest` made of them, and gives the same
tables as DuckDB (the raw query) and as `netfleet cheatsheet` (the catalog query), with the same
(exact, linear-interpolation) quantile definition: Spark ``percentile`` = DuckDB
``quantile_cont``."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from netfleet.catalog.cheatsheet import cheatsheet_data
from netfleet.catalog.export import (
    catalog_partitions,
    catalog_table_ddl,
    cheatsheet_query,
    export_sql,
    raw_table_ddl,
)
from netfleet.catalog.ingestion import ingest
from netfleet.catalog.rows import RUNS_SCHEMA
from netfleet.store import ResultsRoot
from netfleet.store.imports import import_files

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
    last = [n for n in RUNS_SCHEMA.names if n != "d"][-1]  # the partition key comes last
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
    for table in ("intervals", "ends"):
        (out / table).mkdir()
        for part in (catalog / table).glob("part-*.parquet"):
            (out / table / part.name).write_bytes(part.read_bytes())
    assert catalog_partitions(out)["runs"] == ["d"]
    return out


@pytest.mark.slow
def test_spark_runs_the_ddl_and_matches_duckdb(tmp_path: Path) -> None:
    pyspark_sql = pytest.importorskip("pyspark.sql")
    raw = raw_results(tmp_path)
    assert ingest(ResultsRoot(raw), tmp_path / "catalog").bad == []
    expected_raw = duckdb_sheet(raw)
    assert expected_raw and all(r[3] > 0 for r in expected_raw)
    sheet = cheatsheet_data(tmp_path / "catalog", group_by=("instance_type", "direction"))
    assert sheet.unit_label == "Gbit/s"
    expected_catalog = [tuple(r[:10]) for r in sheet.rows]  # groups, runs, intervals, 6 stats
    assert len(expected_catalog) >= 3
    spark = (
        pyspark_sql.SparkSession.builder.master("local[2]")
        .appName("netfleet-export-test")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.warehouse.dir", str(tmp_path / "wh"))
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    hive = hive_copy(tmp_path / "catalog", tmp_path / "hive")
    results = []
    try:
        script = export_sql("spark", str(raw), str(tmp_path / "catalog"))
        # then the same catalog with runs Hive-partitioned by d: PARTITIONED BY + MSCK REPAIR
        again = export_sql("spark", str(raw), str(hive)).split("-- the Parquet catalog")[1]
        drops = "".join(f"DROP TABLE netfleet_{t};\n" for t in ("runs", "intervals", "ends"))
        assert "MSCK REPAIR TABLE netfleet_runs" in again
        for stmt in (script + drops + "--" + again).split(";\n"):
            body = "\n".join(ln for ln in stmt.splitlines() if not ln.startswith("--")).strip()
            if body:
                rows = spark.sql(body).collect()
                if body.startswith("SELECT"):
                    results.append([tuple(r) for r in rows])
    finally:
        spark.stop()
    assert len(results) == 3
    expected_all = (expected_raw, expected_catalog, expected_catalog)
    for got, expected in zip(results, expected_all, strict=True):
        assert len(got) == len(expected)
        for g, e in zip(got, expected, strict=True):
            assert g[:4] == e[:4]
            assert g[4:] == pytest.approx(e[4:], rel=1e-9)
