"""``netfleet sql``: run any DuckDB SQL over the catalog views."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING

from netfleet.errors import CatalogError
from netfleet.tabular import Tabular

if TYPE_CHECKING:
    from typing import Any

#: a statement that names per-stream rows: the ``streams`` view, the ``stream_id`` column or
#: the ``'stream'`` kind
_NAMES_STREAMS = re.compile(r"\bstreams\b|\bstream_id\b|'stream'", re.IGNORECASE)


def needs_streams(sql: str) -> bool:
    """Whether ``sql`` asks for per-stream rows: it reads the view ``streams`` (by DuckDB's own
    parser; a CTE of that name does not count), names ``stream_id`` or the kind ``'stream'``."""
    import duckdb

    try:
        if "streams" in duckdb.get_table_names(sql):
            return True
        sql = re.sub(r"\bstreams\b", "", sql, flags=re.IGNORECASE)  # a CTE or an alias
    except duckdb.Error:  # several statements, or not SQL: the words decide
        pass
    return bool(_NAMES_STREAMS.search(sql))


def query(
    catalog_dir: str | os.PathLike[str],
    sql: str,
    params: Sequence[Any] | None = None,
    *,
    streams: bool | Collection[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Tabular:
    """Run ``sql`` against the ``runs``, ``intervals``, ``ends`` and ``streams`` views.

    ``streams``: load the per-stream rows a manifest catalog keeps lazy (True), those of some
    run ids only (a collection), or none (False); None decides by the statement
    (:func:`needs_streams`). ``progress(done, total)``
    counts the files read while they are built (:mod:`netfleet.catalog.lazystreams`)."""
    import duckdb  # here, not at import: the package must stay light (see __init__)

    from netfleet.catalog.views import connect

    wanted = needs_streams(sql) if streams is None else streams
    con = connect(catalog_dir, streams=wanted, progress=progress)
    try:
        cursor = con.execute(sql, params) if params is not None else con.execute(sql)
        if cursor.description is None:
            return Tabular(columns=[], rows=[])
        columns = [d[0] for d in cursor.description]
        rows = [list(r) for r in cursor.fetchall()]
    except duckdb.Error as exc:
        raise CatalogError(
            f"SQL error: {exc}",
            hint="the views are runs, intervals, ends and streams (per-stream rows: --streams);"
            " see docs/catalog.md for their columns",
        ) from exc
    finally:
        con.close()
    return Tabular(columns=columns, rows=rows)
