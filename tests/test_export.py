"""`netfleet export`: the Spark flavour runs for real (PySpark local) over raw results written by
netfleet and gives the same cheat sheet as DuckDB with the same (exact, linear-interpolation)
quantile definition: Spark ``percentile`` = DuckDB ``quantile_cont``."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from netfleet.catalog.export import cheatsheet_query, export_sql, raw_table_ddl
from netfleet.store import ResultsRoot
from netfleet.store.imports import import_files

FIX = Path(__file__).parent / "fixtures" / "import"


def raw_results(tmp_path: Path) -> Path:
    root = ResultsRoot(tmp_path / "raw")
    for i, path in enumerate(sorted(FIX.glob("*.client.json"))):
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
        text = export_sql(dialect, "s3://b/p")  # type: ignore[arg-type]
        assert "s3://b/p/" in text and "instance_type" in text
    assert "projection.d.type" in raw_table_ddl("athena", "s3://b/p")
    assert "'it''s/'" in raw_table_ddl("spark", "it's")


@pytest.mark.slow
def test_spark_runs_the_ddl_and_matches_duckdb(tmp_path: Path) -> None:
    pyspark_sql = pytest.importorskip("pyspark.sql")
    raw = raw_results(tmp_path)
    expected = duckdb_sheet(raw)
    assert expected and all(r[3] > 0 for r in expected)
    spark = (
        pyspark_sql.SparkSession.builder.master("local[2]")
        .appName("netfleet-export-test")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.warehouse.dir", str(tmp_path / "wh"))
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    try:
        for stmt in export_sql("spark", str(raw)).split(";\n"):
            body = "\n".join(ln for ln in stmt.splitlines() if not ln.startswith("--")).strip()
            if body:
                rows = spark.sql(body).collect()
        got = [tuple(r) for r in rows]
    finally:
        spark.stop()
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g[:4] == e[:4]
        assert g[4:] == pytest.approx(e[4:], rel=1e-9)
