"""Where results and the catalog are when the caller does not say: the option, else the
environment (``NETFLEET_RESULTS``, ``NETFLEET_CATALOG``), else the spec's ``results:``, else
``./results`` and ``./catalog``."""

from __future__ import annotations

import os
from pathlib import Path


def results_url(results: str | os.PathLike[str] | None = None, from_spec: str | None = None) -> str:
    """The results root: ``results``, else ``$NETFLEET_RESULTS``, else the spec's, else
    ``results``."""
    if results is not None:
        from netfleet.errors import named

        return named("--results", os.fspath(results))
    return os.environ.get("NETFLEET_RESULTS") or from_spec or "results"


def catalog_dir(catalog: str | os.PathLike[str] | None = None) -> Path | str:
    """The catalog: a directory, or an ``s3://`` URL kept as text (a Path would fold its
    ``//``); the catalog functions take either."""
    from netfleet.errors import named

    where = named("--catalog", os.fspath(catalog)) if catalog is not None else None
    where = where or os.environ.get("NETFLEET_CATALOG") or "catalog"
    return where if where.startswith("s3://") else Path(where)
