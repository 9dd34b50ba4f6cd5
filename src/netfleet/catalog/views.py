"""DuckDB views over the committed Parquet parts: ``runs``, ``intervals``, ``ends``, and
``streams`` (the ``kind = 'stream'`` rows of ``intervals``).

A catalog with a manifest (files registered by reference, ``CATALOG/manifest.parquet``, also
the view ``manifest``) keeps the per-stream rows of those files lazy
(:mod:`netfleet.catalog.lazystreams`): a connection that needs them says so —
``connect(catalog, streams=True)`` (every run) or ``streams=[run_id, …]`` (those runs: read from
their files on the spot) — and gets them in ``intervals`` and ``streams``; without them a
manifest catalog's ``intervals`` holds the sums and no ``streams`` view exists, so no query
averages half the streams by mistake.

``intervals`` holds only rows whose ``bits_per_second`` a link can carry (or none): NaN,
infinite, negative or above :data:`netfleet.units.MAX_RATE` — a broken or forged raw file —
never reach a statistic of any report reading the catalog (:data:`PLAUSIBLE`, the SQL of
:func:`netfleet.units.plausible_rate`). ``intervals_stored`` has every row as ingested;
:func:`impossible_note` counts the difference for the reports' notes."""

from __future__ import annotations

import os
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

import duckdb

from netfleet.catalog.httpfs import enable_s3
from netfleet.catalog.layout import committed_parts, is_s3
from netfleet.catalog.manifest import by_reference
from netfleet.catalog.remote import S3Catalog
from netfleet.units import MAX_RATE, fmt_rate

#: an interval row a statistic may use: no rate, or one :func:`netfleet.units.plausible_rate`
#: accepts (DuckDB orders NaN above every number, so BETWEEN refuses it too)
PLAUSIBLE = (
    "bits_per_second IS NULL OR (isfinite(bits_per_second)"
    f" AND bits_per_second BETWEEN 0 AND {MAX_RATE:.0f})"
)
#: the view with every interval row as ingested
STORED = "intervals_stored"
#: ``streams=``: False (none of the lazy ones), True (all), or the run ids whose streams to load
Streams = bool | Collection[str]


def _sql_list(paths: list[Any]) -> str:
    return "[" + ", ".join("'" + str(p).replace("'", "''") + "'" for p in paths) + "]"


def connect(
    catalog_dir: str | os.PathLike[str],
    *,
    streams: Streams = False,
    progress: Callable[[int, int], None] | None = None,
) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with one view per catalog table.

    ``catalog_dir`` may be an ``s3://BUCKET/PREFIX`` URL (:mod:`netfleet.catalog.remote`).
    Only parts of committed batches are read (see :mod:`netfleet.catalog.layout`), so an
    interrupted ingest never shows interval or end rows without their run. Raises
    :class:`~netfleet.errors.CatalogError` when nothing was ingested yet.

    ``streams``: the per-stream rows of the files a manifest registered are loaded only when
    asked — True for every run (built into ``CATALOG/streams/`` first where missing,
    ``progress(done, total)`` counting files), or a collection of run ids (read from their
    files now). A catalog without a manifest has all its rows already.
    """
    parts: dict[str, list[Any]]
    if is_s3(catalog_dir):  # a catalog on S3: committed parts listed by boto3, read by httpfs
        parts = dict(S3Catalog.parse(str(catalog_dir)).committed_urls())
        con = duckdb.connect(":memory:")
        enable_s3(con)
    else:
        parts = dict(committed_parts(Path(catalog_dir)))
        con = duckdb.connect(":memory:")
    lazy = False if is_s3(catalog_dir) else _manifest_view(con, Path(catalog_dir))
    for table, paths in parts.items():
        name = table if table != "intervals" else (EAGER if lazy else STORED)
        if not paths:  # a table added after these parts were written: an empty view
            _empty_view(con, table, name)
        else:  # table names are ours; paths are quoted by _sql_list
            con.execute(
                f"CREATE VIEW {name} AS SELECT * FROM read_parquet({_sql_list(paths)}, "  # noqa: S608
                "union_by_name = true)"
            )
    loaded = False
    if lazy:
        loaded = _lazy_streams(con, Path(catalog_dir), streams, progress)
        other = f" UNION ALL BY NAME SELECT * FROM {LAZY}" if loaded else ""  # noqa: S608
        con.execute(f"CREATE VIEW {STORED} AS SELECT * FROM {EAGER}{other}")  # noqa: S608
    con.execute(f"CREATE VIEW intervals AS SELECT * FROM {STORED} WHERE {PLAUSIBLE}")  # noqa: S608
    if not lazy or loaded:
        con.execute("CREATE VIEW streams AS SELECT * FROM intervals WHERE kind = 'stream'")
    return con


#: the committed intervals parts, in a catalog with lazy streams
EAGER = "intervals_eager"
#: the lazy per-stream rows loaded, in the ``intervals`` schema
LAZY = "streams_lazy"


def _manifest_view(con: duckdb.DuckDBPyConnection, catalog_dir: Path) -> bool:
    """The view ``manifest`` over a local catalog's manifest (base and segments); whether it
    holds a file by reference (whose per-stream rows are lazy: an ingested envelope's are
    stored)."""
    from netfleet.catalog.manifest import duck_view

    if not duck_view(con, catalog_dir):
        return False
    held = con.execute(f"SELECT EXISTS (SELECT 1 FROM manifest WHERE {by_reference()})")  # noqa: S608
    return bool(held.fetchone()[0])  # type: ignore[index]


def _lazy_streams(
    con: duckdb.DuckDBPyConnection,
    catalog_dir: Path,
    streams: Streams,
    progress: Callable[[int, int], None] | None,
) -> bool:
    """Load the lazy per-stream rows asked for into the view :data:`LAZY`; False when none
    were asked. Rows already built are read from their parts (DuckDB only: no pyarrow, no
    parser); the others, for a few runs, are read from their files now, else built first."""
    if streams is False:
        return False
    from netfleet.catalog import lazystreams as ls
    from netfleet.catalog import lazystreams_build as lb

    runs = ls.manifest_runs(catalog_dir, con=con)
    wanted = None if streams is True else set(streams)
    asked = runs if wanted is None else [r for r in runs if r.run_id in wanted]
    if wanted is None or len(asked) > ls.ON_DEMAND_MAX:
        built = lb.ensure_streams(catalog_dir, runs, progress=progress)
        rest: list[ls.SourceRun] = []
    else:
        found = lb.plan(catalog_dir, {r.file_id: r.run_id for r in runs})
        files = {r.file_id for r in asked}
        built = [p for p in found.usable if files & set(lb.part_files(p))]
        rest = [r for r in asked if r.file_id not in found.covered]
    pairs = f"SELECT file_id, run_id FROM manifest WHERE {by_reference()}"  # noqa: S608
    only = ""
    if wanted is not None:  # the ids quoted as _sql_list quotes paths; IN prunes row groups
        only = f"WHERE s.run_id IN ({_sql_list(sorted(wanted))[1:-1]})"
    branches = [f"SELECT * FROM {EAGER} WHERE false"]  # noqa: S608 (the columns, when none)
    if built:
        branches.append(
            f"SELECT s.* EXCLUDE (file_id) FROM read_parquet({_sql_list(built)}) s "  # noqa: S608
            f"SEMI JOIN ({pairs}) l ON s.file_id = l.file_id AND s.run_id = l.run_id {only}"
        )
    if rest:
        con.register("_streams_read", ls.run_streams(rest))
        branches.append("SELECT * EXCLUDE (file_id) FROM _streams_read")
    body = " UNION ALL BY NAME ".join(branches)
    con.execute(f"CREATE VIEW {LAZY} AS {body}")
    return True


def impossible_count(con: duckdb.DuckDBPyConnection) -> int:
    """Interval rows ``intervals`` leaves out: rates no link can carry."""
    row = con.execute(f"SELECT count(*) FROM {STORED} WHERE NOT ({PLAUSIBLE})").fetchone()  # noqa: S608
    return int(row[0]) if row else 0


def impossible_note(catalog_dir: str | os.PathLike[str]) -> list[str]:
    """``[]``, or the note a report over the catalog shows: how many interval rows hold a rate
    no link can carry, left out of every statistic."""
    con = connect(catalog_dir)
    try:
        found = impossible_count(con)
    finally:
        con.close()
    return [impossible_text(found)] if found else []


def impossible_text(count: int) -> str:
    return (
        f"{count} interval row(s) in the catalog hold a rate no link can carry (NaN, infinite, "
        f"negative or above {fmt_rate(MAX_RATE)}: a broken or forged result): left out of "
        "every statistic (view intervals_stored in netfleet sql has them)"
    )


def _empty_view(con: duckdb.DuckDBPyConnection, table: str, name: str) -> None:
    """A view ``name`` with the table's columns and no rows."""
    import pyarrow as pa

    from netfleet.catalog.schemas import SCHEMAS

    con.register(f"_empty_{table}", pa.Table.from_pylist([], schema=SCHEMAS[table]))
    con.execute(f"CREATE VIEW {name} AS SELECT * FROM _empty_{table}")  # noqa: S608
