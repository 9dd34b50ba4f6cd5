"""``netfleet sql``: run any DuckDB SQL over the catalog views."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from netfleet.errors import CatalogError
from netfleet.tabular import Tabular


def query(
    catalog_dir: str | os.PathLike[str], sql: str, params: Sequence[Any] | None = None
) -> Tabular:
    """Run ``sql`` against the ``runs``, ``intervals`` and ``ends`` views."""
    import duckdb  # here, not at import: the package must stay light (see __init__)

    from netfleet.catalog.views import connect

    con = connect(catalog_dir)
    try:
        cursor = con.execute(sql, params) if params is not None else con.execute(sql)
        if cursor.description is None:
            return Tabular(columns=[], rows=[])
        columns = [d[0] for d in cursor.description]
        rows = [list(r) for r in cursor.fetchall()]
    except duckdb.Error as exc:
        raise CatalogError(
            f"SQL error: {exc}",
            hint="the views are runs, intervals and ends; see docs/catalog.md for their columns",
        ) from exc
    finally:
        con.close()
    return Tabular(columns=columns, rows=rows)
