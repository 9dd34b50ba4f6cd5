"""How long each instance type's fixed-length runs lasted, with the labels they carry: what the
cheat sheet needs to say that runs of a burstable type were shorter than its burst
(:func:`netfleet.report.cheatsheet.short_run_notes`)."""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from netfleet.catalog.layout import committed_parts, is_s3
from netfleet.errors import CatalogError


class TypeRuns(NamedTuple):
    """The complete fixed-length runs (not adaptive: imported, or a set ``duration``) of one
    ``instance_type``: how many, the longest (seconds), and the labels of one of them."""

    instance_type: str
    runs: int
    longest_s: float
    labels: dict[str, Any]


#: a run's labels can make its type burstable only if their text holds one of these
BURST_LABEL_HINTS = ("burst", "bucket_gbit", "peak_gbps", "network_performance")


class _Kept:
    """:func:`run_lengths`' answer as the sheet cache keeps it (its fields in ``__slots__``)."""

    __slots__ = ("types",)

    def __init__(self, types: list[list[Any]]) -> None:
        self.types = types


def _from_kept(doc: Any) -> _Kept | None:
    shaped = (
        isinstance(doc, dict)
        and set(doc) == {"types"}
        and isinstance(doc["types"], list)
        and all(
            isinstance(t, list)
            and len(t) == 4
            and isinstance(t[0], str)
            and type(t[1]) is int
            and isinstance(t[2], (int, float))
            and isinstance(t[3], dict)
            for t in doc["types"]
        )
    )
    return _Kept(doc["types"]) if shaped else None


def run_lengths(
    catalog_dir: str | os.PathLike[str],
    campaign: str | None = None,
    types: Collection[str] | None = None,
) -> list[TypeRuns]:
    """One :class:`TypeRuns` per ``instance_type`` label (only ``types`` when given) whose
    labels may say it bursts (:data:`BURST_LABEL_HINTS`), over the complete runs of
    ``campaign`` (every campaign when None) that did not stop adaptively. Read with pyarrow
    from the committed parts; an ``s3://`` catalog through DuckDB's ``runs`` view. A local
    catalog keeps the answer beside its cheat sheets (:mod:`netfleet.catalog.sheetcache`): an
    unchanged catalog answers without reading a part or loading pyarrow."""
    if is_s3(catalog_dir):
        return _run_lengths(catalog_dir, campaign, types)
    from netfleet.catalog.sheetcache import cached

    question = {"run_lengths": campaign, "types": None if types is None else sorted(types)}
    kept = cached(
        Path(catalog_dir),
        question,
        lambda: _Kept([list(t) for t in _run_lengths(catalog_dir, campaign, types)]),
        _from_kept,
    )
    return [TypeRuns(k, n, float(longest), labels) for k, n, longest, labels in kept.types]


def _run_lengths(
    catalog_dir: str | os.PathLike[str],
    campaign: str | None = None,
    types: Collection[str] | None = None,
) -> list[TypeRuns]:
    """The answer of :func:`run_lengths`, read from the parts."""
    found: dict[str, list[Any]] = {}
    for row in _rows(catalog_dir):
        text, notes = row.get("labels"), row.get("notes")
        if row.get("status") != "ok" or not text or "instance_type" not in text:
            continue
        if campaign is not None and row.get("campaign") != campaign:
            continue
        if (notes and '"adaptive"' in notes) or not any(h in text for h in BURST_LABEL_HINTS):
            continue
        try:
            labels = json.loads(text)
        except ValueError:
            continue
        kind = labels.get("instance_type") if isinstance(labels, dict) else None
        seconds = row.get("duration") or row.get("duration_s")
        if kind is None or seconds is None or (types is not None and str(kind) not in types):
            continue
        have = found.setdefault(str(kind), [0, 0.0, labels])
        have[0] += 1
        have[1] = max(have[1], float(seconds))
    return [TypeRuns(k, n, longest, labels) for k, (n, longest, labels) in sorted(found.items())]


COLUMNS = ("status", "campaign", "duration", "duration_s", "labels", "notes")


def _rows(catalog_dir: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    if is_s3(catalog_dir):
        yield from _rows_duckdb(catalog_dir)
        return
    import pyarrow.parquet as pq

    for path in committed_parts(Path(catalog_dir)).get("runs", []):
        # ParquetFile, not read_table: that one loads pyarrow.dataset and .compute
        with pq.ParquetFile(path) as part:
            names = [c for c in COLUMNS if c in part.schema_arrow.names]
            yield from part.read(columns=names).to_pylist()


def _rows_duckdb(catalog_dir: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    import duckdb

    from netfleet.catalog.views import connect

    con = connect(catalog_dir)
    try:
        names = {d[0] for d in con.execute("SELECT * FROM runs LIMIT 0").description}
        cols = [c for c in COLUMNS if c in names]
        cursor = con.execute(f"SELECT {', '.join(cols)} FROM runs")  # noqa: S608
        for values in cursor.fetchall():
            yield dict(zip(cols, values, strict=True))
    except duckdb.Error as exc:
        raise CatalogError(f"run lengths query failed: {exc}") from exc
    finally:
        con.close()
