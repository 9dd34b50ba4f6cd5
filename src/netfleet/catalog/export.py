"""``netfleet export athena|trino|spark``: DDL over the raw layout (and the Parquet catalog's
runs table) plus seed 002's cheat-sheet query, in each engine's dialect.

The raw table maps only what the cheat sheet needs from each envelope: ``run_id``, ``status``,
``direction``, ``labels`` (a map) and ``result.intervals[].sum.{bits_per_second, omitted}``,
partitioned by the layout's ``d`` and ``campaign``. Athena uses partition projection on ``d``
(a date range) and ``campaign`` (injected: every query names its campaign), so no
``MSCK REPAIR`` is needed there; Spark and Trino's Hive connector discover partitions.

Quantiles: Spark's ``percentile`` is exact with linear interpolation — the same definition as
DuckDB's ``quantile_cont`` (what ``netfleet cheatsheet`` uses); Athena/Trino only offer
``approx_percentile`` (a t-digest estimate), so their p5/p50/p95 are approximations.
"""

from __future__ import annotations

from typing import Literal

Dialect = Literal["athena", "trino", "spark"]

_RESULT = "STRUCT<intervals: ARRAY<STRUCT<sum: STRUCT<bits_per_second: DOUBLE, omitted: BOOLEAN>>>>"


def raw_table_ddl(dialect: Dialect, location: str, table: str = "netfleet_raw") -> str:
    loc = (location.rstrip("/") + "/").replace("'", "''")
    if dialect == "spark":
        return (
            f"CREATE TABLE {table} (run_id STRING, status STRING, direction STRING, "
            f"labels MAP<STRING, STRING>, result {_RESULT}, d STRING, campaign STRING) "
            f"USING json PARTITIONED BY (d, campaign) LOCATION '{loc}'"
        )
    if dialect == "trino":
        return (
            f"CREATE TABLE {table} (run_id varchar, status varchar, direction varchar, "
            "labels map(varchar, varchar), result row(intervals array(row(sum row("
            "bits_per_second double, omitted boolean)))), d varchar, campaign varchar) "
            f"WITH (format = 'JSON', external_location = '{loc}', "
            "partitioned_by = ARRAY['d', 'campaign'])"
        )
    return (
        f"CREATE EXTERNAL TABLE {table} (run_id string, status string, direction string, "
        f"labels map<string,string>, result {_RESULT.lower()}) "
        "PARTITIONED BY (d string, campaign string) "
        "ROW FORMAT SERDE 'org.openx.data.jsonserde.JsonSerDe' "
        f"LOCATION '{loc}' TBLPROPERTIES ('projection.enabled'='true', "
        "'projection.d.type'='date', 'projection.d.format'='yyyy-MM-dd', "
        "'projection.d.range'='2018-01-01,NOW', 'projection.d.interval'='1', "
        "'projection.d.interval.unit'='DAYS', 'projection.campaign.type'='injected', "
        f"'storage.location.template'='{loc}d=${{d}}/campaign=${{campaign}}/')"
    )


def cheatsheet_query(dialect: Dialect, table: str = "netfleet_raw") -> str:
    """min / p5 / avg / p50 / p95 / max of interval goodput (Gbit/s, as reported by iperf3's
    interval sums) per instance type and direction, over ok runs, omitted intervals left out."""
    if dialect == "spark":
        q = "percentile(bps, {q})"
        source = f"FROM {table} LATERAL VIEW explode(result.intervals) AS iv"
    else:
        q = "approx_percentile(bps, {q})"
        source = f"FROM {table} CROSS JOIN UNNEST(result.intervals) AS t(iv)"
    stats = ", ".join(
        [
            "min(bps) / 1e9 AS min_gbps",
            q.format(q=0.05) + " / 1e9 AS p5_gbps",
            "avg(bps) / 1e9 AS avg_gbps",
            q.format(q=0.5) + " / 1e9 AS p50_gbps",
            q.format(q=0.95) + " / 1e9 AS p95_gbps",
            "max(bps) / 1e9 AS max_gbps",
        ]
    )
    return " ".join(
        [
            "SELECT instance_type, direction, count(DISTINCT run_id) AS runs,",
            f"count(*) AS intervals, {stats} FROM (SELECT run_id,",
            "labels['instance_type'] AS instance_type, direction,",
            f"iv.sum.bits_per_second AS bps {source}",
            "WHERE status = 'ok' AND NOT coalesce(iv.sum.omitted, false)) AS x",
            "GROUP BY instance_type, direction ORDER BY instance_type, direction",
        ]
    )


def export_sql(dialect: Dialect, location: str) -> str:
    parts = [f"-- raw results at {location} (netfleet layout d=/campaign=)"]
    parts.append(raw_table_ddl(dialect, location) + ";")
    if dialect == "spark":
        parts.append("MSCK REPAIR TABLE netfleet_raw;")
    elif dialect == "trino":
        parts.append("CALL system.sync_partition_metadata(current_schema, 'netfleet_raw', 'ADD');")
    parts.append("-- seed 002's cheat sheet")
    parts.append(cheatsheet_query(dialect) + ";")
    return "\n".join(parts) + "\n"
