"""Taking runs out of the catalog when their file changed (issue 26): the committed batches
holding them are written again without them, through a journal a crash leaves for the next
import to finish (:func:`finish_retire`)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from netfleet.catalog.layout import (
    IDS_DIR,
    MAX_IDS_BYTES,
    TABLES,
    TEMP_PREFIX,
    batch_run_ids,
    committed_batches,
    ids_name,
)
from netfleet.catalog.layout import part_name as _part_name
from netfleet.catalog.writer import Batch, write_batch
from netfleet.durable import atomic_write
from netfleet.readback import loads_back, read_back

RETIRE_JOURNAL = "_retire.json"


def retire(catalog: Path, runs: set[str]) -> list[str]:
    """Take ``runs``' rows out of the catalog: every committed batch holding one is written
    again without them (a new batch), then the old batch is deleted. A journal names both
    first, so a crash in between is finished by the next import (:func:`finish_retire`)."""
    if not runs:
        return []
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from netfleet.catalog.schemas import SCHEMAS

    gone: list[str] = []
    for batch_id in committed_batches(catalog):
        ids = set(batch_ids(catalog, batch_id))
        hit = ids & runs
        if not hit:
            continue
        drop = pa.array(sorted(hit), pa.string())
        batch = Batch()
        for table in TABLES:
            part = catalog / table / _part_name(batch_id)
            rows = pq.read_table(part) if part.exists() else SCHEMAS[table].empty_table()
            rows = rows.filter(pc.invert(pc.is_in(rows.column("run_id"), value_set=drop)))
            batch.parts[table].extend(rows.cast(SCHEMAS[table]).to_batches())
        batch.runs = len(ids - hit)
        journal = catalog / RETIRE_JOURNAL
        entry = {"old": batch_id, "dropped": sorted(hit)}
        atomic_write(journal, json.dumps(entry).encode(), prefix=TEMP_PREFIX)
        if batch.runs:
            write_batch(catalog, batch)
        delete_batch(catalog, batch_id)
        journal.unlink()
        gone += sorted(hit)
    return gone


def finish_retire(catalog: Path) -> None:
    """Finish a retirement a crash interrupted (``retire.json`` names the old batch and the
    runs it drops). When every other run of the old batch is in another committed batch, the
    new batch was committed: the old one is deleted. Otherwise the new batch never committed
    (the sweep deletes its parts) and the old batch stays whole: the manifest, written only
    after the retirement, still holds the old rows, so the next import sees those files
    changed and retires their runs again."""
    journal = catalog / RETIRE_JOURNAL
    try:
        entry = loads_back(read_back(journal, MAX_IDS_BYTES))
        old, dropped = str(entry["old"]), {str(r) for r in entry["dropped"]}
        if not re.fullmatch(r"[0-9A-Za-z-]+", old):  # a batch name, never a path
            raise ValueError(old)
    except (OSError, ValueError, KeyError, TypeError):
        journal.unlink(missing_ok=True)
        return
    others: set[str] = set()
    for batch_id in committed_batches(catalog):
        if batch_id != old:
            others.update(batch_ids(catalog, batch_id))
    if set(batch_ids(catalog, old)) - dropped <= others:
        delete_batch(catalog, old)
    journal.unlink(missing_ok=True)


def batch_ids(catalog: Path, batch_id: str) -> list[str]:
    """:func:`~netfleet.catalog.layout.batch_run_ids`; none when the batch is gone."""
    try:
        return batch_run_ids(catalog, batch_id)
    except OSError:
        return []


def delete_batch(catalog: Path, batch_id: str) -> None:
    """Uncommit (runs part first), then delete the other parts and the ids file."""
    for table in ("runs", *[t for t in TABLES if t != "runs"]):
        (catalog / table / _part_name(batch_id)).unlink(missing_ok=True)
    (catalog / IDS_DIR / ids_name(batch_id)).unlink(missing_ok=True)
