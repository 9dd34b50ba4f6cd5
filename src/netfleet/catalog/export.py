"""``netfleet export athena|trino|spark``: DDL over the raw layout and over the Parquet catalog
(``runs``, ``intervals``, ``ends``, the lazy per-stream rows), plus the cheat-sheet query over
each, in each engine's dialect. What each declares and why: docs/catalog.md, "netfleet export".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from netfleet.units import MAX_RATE

Dialect = Literal["athena", "trino", "spark"]
#: the catalog tables exported, with the SQL table name prefix
CATALOG_TABLES = ("runs", "intervals", "ends")
PREFIX = "netfleet_"
#: the built per-stream parts (``CATALOG/streams/``) as a table, and the view of every stream row
LAZY_STREAMS = "lazy_streams"
STREAMS_VIEW = "netfleet_streams"
#: pyarrow type → (spark, athena DDL, trino)
_TYPES = {
    "string": ("STRING", "string", "varchar"),
    "int64": ("BIGINT", "bigint", "bigint"),
    "double": ("DOUBLE", "double", "double"),
    "bool": ("BOOLEAN", "boolean", "boolean"),
    "date32[day]": ("DATE", "date", "date"),
    "timestamp[us]": ("TIMESTAMP_NTZ", "timestamp", "timestamp(6)"),
}

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


def _stats(dialect: Dialect) -> str:
    """min / p5 / avg / p50 / p95 / max of ``bps`` in Gbit/s (the quantiles: Spark's exact
    ``percentile``, else ``approx_percentile``)."""
    q = "percentile(bps, {q})" if dialect == "spark" else "approx_percentile(bps, {q})"
    return ", ".join(
        [
            "min(bps) / 1e9 AS min_gbps",
            q.format(q=0.05) + " / 1e9 AS p5_gbps",
            "avg(bps) / 1e9 AS avg_gbps",
            q.format(q=0.5) + " / 1e9 AS p50_gbps",
            q.format(q=0.95) + " / 1e9 AS p95_gbps",
            "max(bps) / 1e9 AS max_gbps",
        ]
    )


def cheatsheet_query(dialect: Dialect, table: str = "netfleet_raw") -> str:
    """min / p5 / avg / p50 / p95 / max of interval goodput (Gbit/s, as reported by iperf3's
    interval sums) per instance type and direction, over ok runs, omitted intervals left out."""
    if dialect == "spark":
        source = f"FROM {table} LATERAL VIEW explode(result.intervals) AS iv"
    else:
        source = f"FROM {table} CROSS JOIN UNNEST(result.intervals) AS t(iv)"
    stats = _stats(dialect)
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


def _ident(name: str, dialect: Dialect, ddl: bool = True) -> str:
    """A quoted column name (``end``, ``interval``, ``repeat`` are reserved somewhere): Hive DDL
    and Spark use backticks, Trino (and Athena's queries) double quotes."""
    return f'"{name}"' if dialect == "trino" or (dialect == "athena" and not ddl) else f"`{name}`"


def _sql_type(arrow_type: Any, dialect: Dialect) -> str:
    spark, athena, trino = _TYPES[str(arrow_type)]
    return {"spark": spark, "athena": athena, "trino": trino}[dialect]


def catalog_partitions(catalog_dir: str | Path) -> dict[str, list[str]]:
    """Table → its Hive partition keys, read from the folders of a local catalog (``key=value``
    levels under ``CATALOG/<table>/``); an unreadable or remote catalog has none."""
    out: dict[str, list[str]] = {}
    for table in CATALOG_TABLES:
        keys: list[str] = []
        level = Path(catalog_dir) / table
        while level.is_dir():
            sub = sorted(p for p in level.iterdir() if p.is_dir() and "=" in p.name)
            if not sub:
                break
            keys.append(sub[0].name.split("=", 1)[0])
            level = sub[0]
        out[table] = keys
    return out


def catalog_table_ddl(
    dialect: Dialect, location: str, table: str, partitions: list[str] | tuple[str, ...] = ()
) -> str:
    """``CREATE TABLE`` for one catalog table over ``LOCATION/<table>/`` (Parquet);
    :data:`LAZY_STREAMS` is the folder ``streams/``."""
    from netfleet.catalog.lazystreams import part_schema
    from netfleet.catalog.schemas import SCHEMAS

    folder = "streams" if table == LAZY_STREAMS else table
    loc = (location.rstrip("/") + f"/{folder}/").replace("'", "''")
    schema = SCHEMAS[table] if table != LAZY_STREAMS else part_schema()
    fields = {f.name: f.type for f in schema}
    plain = [n for n in fields if n not in partitions]
    # partition columns come last (Trino requires it; Spark and Hive list them apart)
    cols = [f"{_ident(n, dialect)} {_sql_type(fields[n], dialect)}" for n in plain]
    part_cols = [
        f"{_ident(n, dialect)} {_sql_type(fields.get(n, 'string'), dialect)}" for n in partitions
    ]
    name = PREFIX + table
    every = ", ".join(cols + part_cols)
    if dialect == "spark":
        keys = ", ".join(_ident(n, dialect) for n in partitions)
        tail = f" PARTITIONED BY ({keys})" if partitions else ""
        return f"CREATE TABLE {name} ({every}) USING parquet{tail} LOCATION '{loc}'"
    if dialect == "trino":
        props = ["format = 'PARQUET'", f"external_location = '{loc}'"]
        if partitions:
            props.append("partitioned_by = ARRAY[" + ", ".join(f"'{n}'" for n in partitions) + "]")
        return f"CREATE TABLE {name} ({every}) WITH ({', '.join(props)})"
    tail = f" PARTITIONED BY ({', '.join(part_cols)})" if partitions else ""
    return (
        f"CREATE EXTERNAL TABLE {name} ({', '.join(cols)}){tail} STORED AS PARQUET LOCATION '{loc}'"
    )


def streams_view(dialect: Dialect, lazy: bool) -> str:
    """The view of every per-stream row: ``netfleet_intervals``' own (netfleet's runs) and,
    with ``lazy``, the built parts of registered files (the ``intervals`` columns only)."""
    from netfleet.catalog.schemas import INTERVALS_SCHEMA

    cols = ", ".join(_ident(n, dialect, ddl=False) for n in INTERVALS_SCHEMA.names)
    body = f"SELECT {cols} FROM {PREFIX}intervals WHERE kind = 'stream'"  # noqa: S608
    if lazy:
        body += f" UNION ALL SELECT {cols} FROM {PREFIX}{LAZY_STREAMS}"  # noqa: S608
    return f"CREATE VIEW {STREAMS_VIEW} AS {body}"


def has_lazy_streams(catalog: str | Path) -> bool:
    """A catalog whose per-stream rows are (partly) lazy: a local one with a manifest or built
    parts; one elsewhere (``s3://``, a placeholder) is declared with them (an empty folder is
    an empty table)."""
    if str(catalog).startswith("s3://"):
        return True
    from netfleet.catalog.lazystreams_build import STREAMS_DIR
    from netfleet.catalog.manifest import MANIFEST

    return (Path(catalog) / MANIFEST).exists() or (Path(catalog) / STREAMS_DIR).is_dir()


def catalog_cheatsheet_query(dialect: Dialect, side: str = "receiver") -> str:
    """netfleet's cheat sheet over the catalog tables: per instance type and direction, runs,
    intervals and min / p5 / avg / p50 / p95 / max of one side's interval goodput in Gbit/s
    (ok runs; omitted intervals and the trailing stub left out). ``side``: ``receiver`` (the
    truthful series, netfleet's default) or ``sender`` (what a client-only ``-J`` file has)."""
    if side not in ("receiver", "sender"):
        raise ValueError(f"side must be 'receiver' or 'sender', not {side!r}")
    from netfleet.catalog.cheatsheet import STUB_FRACTION  # duckdb: only when asked

    label = (
        "get_json_object(r.labels, '$.instance_type')"
        if dialect == "spark"
        else "json_extract_scalar(r.labels, '$.instance_type')"
    )
    interval = _ident("interval", dialect, ddl=False)
    stats = _stats(dialect)
    return " ".join(
        [
            "SELECT instance_type, direction, count(DISTINCT run_id) AS runs,",
            f"count(*) AS intervals, {stats} FROM (SELECT r.run_id, {label} AS instance_type,",
            f"r.direction, i.bits_per_second AS bps FROM {PREFIX}runs r",
            f"JOIN {PREFIX}intervals i ON i.run_id = r.run_id",
            f"WHERE r.status = 'ok' AND i.kind = 'sum' AND {_side_condition(side)}",
            f"AND NOT i.omitted AND i.seconds >= {STUB_FRACTION} * coalesce(r.{interval}, 1.0)",
            # the rates no link can carry are left out, as the catalog's intervals view does
            # (NaN compares false in Trino and Athena, and above every number in Spark)
            f"AND i.bits_per_second >= 0 AND i.bits_per_second <= {MAX_RATE:.0f}) AS x",
            "GROUP BY instance_type, direction",
            "ORDER BY instance_type NULLS LAST, direction NULLS LAST",
        ]
    )


def _side_condition(side: str) -> str:
    """The intervals of one side; the receiver's side takes a run's sender intervals where the
    run has no receiver intervals at all (a client-only ``-J`` file), as
    :func:`netfleet.catalog.cheatsheet_data` does."""
    if side == "sender":
        return "i.role = 'sender'"
    return (  # PREFIX is a constant: nothing from a user reaches this text
        "(i.role = 'receiver' OR (i.role = 'sender' AND NOT EXISTS (SELECT 1 FROM"  # noqa: S608
        f" {PREFIX}intervals j WHERE j.run_id = i.run_id AND j.kind = 'sum'"
        " AND j.role = 'receiver')))"
    )


def _repair(dialect: Dialect, table: str) -> str:
    if dialect == "trino":
        return f"CALL system.sync_partition_metadata(current_schema, '{table}', 'ADD');"
    return f"MSCK REPAIR TABLE {table};"


def export_sql(
    dialect: Dialect,
    location: str,
    catalog: str = "s3://BUCKET/CATALOG",
    partitions: dict[str, list[str]] | None = None,
    side: str = "receiver",
    lazy_streams: bool | None = None,
) -> str:
    """The whole script: raw table + its cheat sheet, catalog tables + netfleet's cheat sheet,
    and the per-stream view. ``partitions``: table → Hive partition keys (default: read from a
    local ``catalog``); ``lazy_streams``: declare the built per-stream parts (default:
    :func:`has_lazy_streams`)."""
    if partitions is None:
        partitions = catalog_partitions(catalog)
    if lazy_streams is None:
        lazy_streams = has_lazy_streams(catalog)
    parts = [f"-- raw results at {location} (netfleet layout d=/campaign=)"]
    parts.append(raw_table_ddl(dialect, location) + ";")
    if dialect != "athena":  # Athena: partition projection, nothing to repair
        parts.append(_repair(dialect, "netfleet_raw"))
    parts.append(
        "-- seed 002's cheat sheet over the raw interval sums (the side that wrote each file)"
    )
    parts.append(cheatsheet_query(dialect) + ";")
    parts.append(f"-- the Parquet catalog at {catalog} (netfleet ingest)")
    for table in CATALOG_TABLES:
        keys = partitions.get(table, [])
        parts.append(catalog_table_ddl(dialect, catalog, table, keys) + ";")
        if keys:
            parts.append(_repair(dialect, PREFIX + table))
    if lazy_streams:
        parts.append("-- per-stream rows of registered files, built by netfleet (streams/)")
        parts.append(catalog_table_ddl(dialect, catalog, LAZY_STREAMS) + ";")
    parts.append("-- every per-stream row")
    parts.append(streams_view(dialect, lazy_streams) + ";")
    parts.append(f"-- netfleet's cheat sheet over the catalog ({side} side, goodput)")
    parts.append(catalog_cheatsheet_query(dialect, side) + ";")
    return "\n".join(parts) + "\n"
