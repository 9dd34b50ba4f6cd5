"""The catalog directory: Parquet parts per table, and what makes a batch of parts visible.

::

    CATALOG/netfleet-catalog.json            {"catalog_format": 1}
    CATALOG/runs/part-<batch>.parquet        the commit marker of <batch>
    CATALOG/intervals/part-<batch>.parquet
    CATALOG/ends/part-<batch>.parquet
    CATALOG/<table>/.tmp-part-<batch>.parquet  being written (never read)
    CATALOG/_run_ids/part-<batch>.jsonl      the run_ids of <batch> (the skip list)
    CATALOG/_sheets/sheet-<sha256>.json      cheat sheets answered (netfleet.catalog.sheetcache)
    CATALOG/manifest.parquet                 files imported by reference (netfleet.catalog.manifest)
    CATALOG/manifest.segments/g<N>.parquet   the manifest rows generation N changed (large ones)
    CATALOG/_manifest_index                  its generation and stat columns, for a no-op import
    CATALOG/_retire.json                     a retirement under way (netfleet.catalog.register)

One ingest batch writes one part per table under a temp name, then renames intervals, ends and
finally runs. A batch is *committed* when its runs part exists; readers only open the parts of
committed batches, so a crash between renames leaves orphans that nobody reads and that the next
ingest deletes (then re-ingests those runs, as their run_ids are not in ``runs``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from netfleet.errors import CatalogError
from netfleet.readback import loads_back, read_back

if TYPE_CHECKING:
    from typing import Any

CATALOG_FORMAT = 1
META = "netfleet-catalog.json"
#: the tables, in publish order: runs last (= ``netfleet.catalog.columns.DECLARED``; spelled out so
#: listing a catalog needs neither pyarrow nor the engines)
TABLES = ("intervals", "ends", "latency", "latency_phases", "latency_samples", "runs")
TEMP_PREFIX = ".tmp-"
#: per batch, the run_ids of its runs part as JSON lines, written before the runs part: a
#: no-op ingest reads these instead of opening every runs part (outside the table directories,
#: which Spark/Athena read whole; ``_`` marks it as not data for them)
IDS_DIR = "_run_ids"
#: the most bytes read back from an ids file (10,000 run_ids a batch: about 0.7 MB) and from
#: the format file (netfleet.readback.read_back: a larger one is damaged, read elsewhere)
MAX_IDS_BYTES = 256 * 1024 * 1024
MAX_META_BYTES = 64 * 1024


def is_s3(catalog: Any) -> bool:
    """An ``s3://`` catalog (here, not in :mod:`netfleet.catalog.remote`: the cheat sheet asks
    it without loading boto3's side of the catalog)."""
    return isinstance(catalog, str) and catalog.startswith("s3://")


def part_name(batch: str) -> str:
    return f"part-{batch}.parquet"


def ids_name(batch: str) -> str:
    return f"part-{batch}.jsonl"


def batch_of(part: Path) -> str:
    return part.name.removeprefix("part-").removesuffix(".parquet").removesuffix(".jsonl")


def committed_batches(catalog_dir: Path) -> list[str]:
    """Batches whose runs part exists, oldest first."""
    return [batch_of(p) for p in sorted((catalog_dir / "runs").glob("part-*.parquet"))]


def committed_parts(catalog_dir: Path) -> dict[str, list[Path]]:
    """Table → the parts of committed batches. Raises a clear error when there are none."""
    check_format(catalog_dir)
    batches = committed_batches(catalog_dir)
    if not batches:
        raise CatalogError(f"no catalog at {catalog_dir}: run netfleet ingest first")
    parts: dict[str, list[Path]] = {}
    for table in TABLES:
        paths = [catalog_dir / table / part_name(b) for b in batches]
        parts[table] = [p for p in paths if p.exists()]
    return parts


def committed_run_ids(catalog_dir: Path) -> set[str]:
    """The run_ids of the committed batches (:func:`batch_run_ids`)."""
    ids: set[str] = set()
    for batch in committed_batches(catalog_dir):
        ids.update(batch_run_ids(catalog_dir, batch))
    return ids


def batch_run_ids(catalog_dir: Path, batch: str) -> list[str]:
    """The run_ids of one batch: from its ids file (JSON lines, no pyarrow), else (a batch
    written before ids files existed, or one whose file is damaged) from its runs part."""
    try:
        ids_file = catalog_dir / IDS_DIR / ids_name(batch)
        lines = read_back(ids_file, MAX_IDS_BYTES).decode().splitlines()
        # one JSON array: a fifth of the time of a json.loads per line (10,000 a batch)
        values = loads_back("[" + ",".join(lines) + "]", max_depth=None)
        if len(values) != len(lines) or not all(isinstance(v, str) for v in values):
            raise ValueError("not one run_id per line")
        return values
    except (OSError, ValueError):
        import pyarrow.parquet as pq

        part = catalog_dir / "runs" / part_name(batch)
        return pq.read_table(part, columns=["run_id"]).column("run_id").to_pylist()


def check_format(catalog_dir: Path) -> None:
    """Refuse a catalog written by another catalog format version."""
    meta = catalog_dir / META
    if meta.is_symlink():
        from netfleet.durable import refused

        raise refused(meta, catalog_dir)
    if not meta.exists():
        return
    try:
        version = loads_back(read_back(meta, MAX_META_BYTES)).get("catalog_format")
    except (OSError, ValueError, AttributeError) as exc:
        raise CatalogError(
            f"{meta}: unreadable catalog metadata ({exc})",
            hint=f"delete {catalog_dir} and run netfleet ingest again",
        ) from exc
    if version != CATALOG_FORMAT:
        raise format_error(str(catalog_dir), version)


def format_error(where: str, version: Any) -> CatalogError:
    return CatalogError(
        f"{where}: catalog format {version!r}, this netfleet reads {CATALOG_FORMAT}",
        hint=f"the catalog is derived data: delete {where} and run netfleet ingest",
    )


def write_format(catalog_dir: Path) -> None:
    """Write the format file once (temp + rename: never through a link at its name)."""
    from netfleet.durable import atomic_write

    meta = catalog_dir / META
    if not os.path.lexists(meta):
        text = json.dumps({"catalog_format": CATALOG_FORMAT}) + "\n"
        atomic_write(meta, text.encode(), prefix=TEMP_PREFIX)
