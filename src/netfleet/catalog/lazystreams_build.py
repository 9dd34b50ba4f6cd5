"""The per-stream rows of registered files built per partition, never stale.

:func:`ensure_streams` writes the rows (:mod:`netfleet.catalog.lazystreams`) of up to
:data:`PART_FILES` files at a time into ``CATALOG/streams/part-<sha256>.parquet`` (temp name,
fsync, rename; the part's (``file_id`` → ``run_id``) pairs in its Parquet metadata). A part is
used only while every pair it holds is an ``ok`` row of the manifest, so it is never stale: a
file that changed is a new ``file_id``, a retired file's part is rewritten without it or
deleted — the folder holds at most the current files' rows. :func:`start_background` runs the
same build in a detached, low-priority process. One builder at a time (``streams/.lock``),
one partition per turn of the lock, so a query that needs them and a background build share
the work instead of doing it twice.

``CATALOG/streams/`` is not hidden (Athena, Trino and Spark read it: ``netfleet export``
declares it); its lock and temp files are (``.``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from netfleet.catalog.lazystreams import (
    Progress,
    SourceRun,
    has_manifest,
    manifest_runs,
    one_run,
    opened,
    part_schema,
)
from netfleet.catalog.writer import locked
from netfleet.errors import NetfleetError

if TYPE_CHECKING:
    import pyarrow as pa

#: the folder of built per-stream parts
STREAMS_DIR = "streams"
#: files per built part (a partition): bounds the builder's memory (≈ 600 rows a seed-002 file)
PART_FILES = 256
#: Parquet metadata key of a part: JSON {file_id: run_id} of every file it covers (also those
#: with no per-stream rows)
FILES_KEY = b"netfleet_streams_files"


def _streams_dir(catalog_dir: Path, create: bool = False) -> Path | None:
    from netfleet.durable import checked_dir

    if not create and not os.path.lexists(catalog_dir / STREAMS_DIR):
        return None
    return checked_dir(catalog_dir, STREAMS_DIR, create=create)


def part_files(part: Path) -> dict[str, str]:
    """A built part's {file_id: run_id}; {} when it is not a regular file or unreadable
    (then it is rebuilt). Read by DuckDB from the Parquet footer (no pyarrow)."""
    import duckdb

    try:
        if not stat.S_ISREG(os.lstat(part).st_mode):
            return {}
        found = duckdb.execute(
            "SELECT value FROM parquet_kv_metadata(?) WHERE key = ?", [str(part), FILES_KEY]
        ).fetchone()
        files = json.loads(found[0]) if found else {}
    except (OSError, ValueError, duckdb.Error):
        return {}
    return files if isinstance(files, dict) else {}


@dataclass
class Plan:
    """The built parts against the manifest's ok files."""

    #: parts to read: every pair current, no file in two of them
    usable: list[Path]
    #: file_id → run_id of the ok files the usable parts cover
    covered: dict[str, str]
    #: parts holding a file no longer ok (or already covered): rewritten or deleted
    stale: list[Path]


def plan(catalog_dir: Path, live: dict[str, str]) -> Plan:
    """Which built parts serve ``live`` (file_id → run_id of the manifest's ok rows)."""
    folder = _streams_dir(catalog_dir)
    out = Plan([], {}, [])
    if folder is None:
        return out
    for part in sorted(folder.glob("part-*.parquet")):
        files = part_files(part)
        current = files and all(live.get(f) == r for f, r in files.items())
        if current and not any(f in out.covered for f in files):
            out.usable.append(part)
            out.covered.update(files)
        else:
            out.stale.append(part)
    return out


def _live(runs: list[SourceRun]) -> dict[str, str]:
    return {run.file_id: run.run_id for run in runs}


def _write_part(folder: Path, table: pa.Table, files: dict[str, str]) -> Path:
    """One part, atomically (temp name, fsync, rename, fsync of the folder)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from netfleet.durable import create_in, open_dir, remove_in, rename_in

    listing = "".join(f"{f} {r}\n" for f, r in sorted(files.items())).encode()
    name = f"part-{hashlib.sha256(listing).hexdigest()}.parquet"
    schema = part_schema().with_metadata({FILES_KEY: json.dumps(files, sort_keys=True)})
    text = [f.name for f in schema if pa.types.is_string(f.type)]
    dfd = open_dir(folder.parent, folder.name)
    temp = f".tmp-{name}"
    try:
        with os.fdopen(create_in(dfd, temp), "wb") as fh:
            with pq.ParquetWriter(fh, schema, compression="zstd", use_dictionary=text) as w:
                w.write_table(table.cast(schema))
            fh.flush()
            os.fsync(fh.fileno())
        rename_in(dfd, temp, name)
        os.fsync(dfd)
    finally:
        remove_in(dfd, temp)
        os.close(dfd)
    return folder / name


def _decoded(
    runs: list[SourceRun], pool: Callable[[], Executor] | None, progress: Callable[[], None]
) -> pa.Table:
    """The rows of ``runs``, here or in the worker processes ``pool()`` gives."""
    import pyarrow as pa

    tables: list[pa.Table] = []
    results = map(one_run, runs) if pool is None else pool().map(one_run, runs, chunksize=8)
    for table in results:
        tables.append(table)
        progress()
    return pa.concat_tables(tables) if tables else part_schema().empty_table()


def _pool(stack: contextlib.ExitStack, workers: int) -> Callable[[], Executor]:
    """The worker processes, started on first use and kept for every partition (each worker
    loads the readers once)."""
    started: list[Executor] = []

    def get() -> Executor:
        if not started:
            from netfleet.workers import process_pool

            started.append(stack.enter_context(process_pool(workers, quiet=False)))
        return started[0]

    return get


def _collect(folder: Path, stale: list[Path], live: dict[str, str], covered: set[str]) -> None:
    """Rewrite each stale part with its rows still current and not covered elsewhere, or
    delete it: the folder never holds more than the manifest's ok files."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from netfleet.durable import open_dir, remove_in

    for part in stale:
        files = part_files(part)
        keep = {f: r for f, r in files.items() if live.get(f) == r and f not in covered}
        if keep:
            with opened(part) as fh:
                table = pq.read_table(fh)
            mask = pc.is_in(table.column("file_id"), pa.array(sorted(keep), pa.string()))
            _write_part(folder, table.filter(mask), keep)
            covered.update(keep)
        dfd = open_dir(folder.parent, folder.name)
        try:
            remove_in(dfd, part.name)
        finally:
            os.close(dfd)


def _counter(progress: Progress | None, done: int, total: int) -> Callable[[], None]:
    """One more file read: ``progress(done, total)``."""
    count = [done]

    def tick() -> None:
        count[0] += 1
        if progress:
            progress(count[0], total)

    return tick


def cpu_workers() -> int:
    """A worker process per CPU, at most 4."""
    return max(1, min(os.cpu_count() or 1, 4))


def default_workers() -> int:
    """:func:`cpu_workers` when this process is netfleet's own command (or a notebook); 1 in a
    script of its own. Worker processes start by ``forkserver``, which runs the main script
    again in each: a script that does not guard its entry point with ``if __name__ ==
    "__main__"`` would run itself in every worker (pass ``workers=`` to choose)."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    ours = (spec is not None and spec.name.startswith("netfleet")) or (
        Path(sys.argv[0]).name == "netfleet"
    )
    return cpu_workers() if ours or not hasattr(main, "__file__") else 1


def ensure_streams(
    catalog_dir: Path,
    runs: list[SourceRun],
    *,
    progress: Progress | None = None,
    workers: int | None = None,
    wait: bool = True,
) -> list[Path]:
    """Build the parts every one of ``runs`` (the manifest's ``ok`` rows: :func:`manifest_runs`)
    still needs, one partition (:data:`PART_FILES` files) per turn of the lock, and tidy the
    stale ones; return the usable parts. ``progress(done, total)`` counts files. With ``wait``
    off, return at once when another builder holds the lock."""
    folder = _streams_dir(catalog_dir, create=bool(runs))
    if folder is None:
        return []
    workers = workers or default_workers()
    with contextlib.ExitStack() as stack:
        pool = _pool(stack, workers) if workers > 1 and len(runs) >= 2 * workers else None
        return _build(catalog_dir, folder, runs, pool, progress, wait)


def _build(
    catalog_dir: Path,
    folder: Path,
    runs: list[SourceRun],
    pool: Callable[[], Executor] | None,
    progress: Progress | None,
    wait: bool,
) -> list[Path]:
    live = _live(runs)
    total = len(runs)
    while True:
        with locked(folder, wait) as held:
            if not held:
                return plan(catalog_dir, live).usable
            current = plan(catalog_dir, live)
            if current.stale:
                _collect(folder, current.stale, live, set(current.covered))
                current = plan(catalog_dir, live)
            missing = [run for run in runs if run.file_id not in current.covered]
            done = total - len(missing)
            if progress:
                progress(done, total)
            if not missing:
                return current.usable
            batch = missing[:PART_FILES]
            table = _decoded(batch, pool, _counter(progress, done, total))
            _write_part(folder, table, _live(batch))
        if not wait:  # a background builder: let a waiting query take the next turn
            time.sleep(0.05)


def start_background(catalog_dir: Path) -> subprocess.Popen[bytes] | None:
    """Build the catalog's per-stream parts in a detached, low-priority process (none when the
    catalog holds no file by reference: no manifest, or ingested envelopes only). It gives way
    when another builder runs; what it built stays if it is stopped."""
    if not has_manifest(catalog_dir) or not manifest_runs(catalog_dir):
        return None
    from netfleet.workers import SAFE_PYTHON

    return subprocess.Popen(  # our interpreter (-P: not the cwd), our module, a path argument
        [*SAFE_PYTHON, "-m", "netfleet.catalog.lazystreams_build", str(catalog_dir)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def main(argv: list[str]) -> int:
    """``python -m netfleet.catalog.lazystreams_build CATALOG``: the background builder."""
    with contextlib.suppress(OSError):
        os.nice(10)
    catalog_dir = Path(argv[0])
    try:
        ensure_streams(catalog_dir, manifest_runs(catalog_dir), wait=False, workers=1)
    except NetfleetError as exc:
        print(exc.message, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
