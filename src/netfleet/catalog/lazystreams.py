"""Per-stream interval rows of the files the manifest registered, made when a query asks.

Import registers files by reference (``CATALOG/manifest.parquet``: ``file_id`` = the SHA-256
of the file's bytes, ``source``, ``run_id``, ``state`` …) and keeps runs, ends and interval
*sums* eagerly. The per-stream rows — ten times the sums with ``-P 10`` — are made here, from
the source files, with the row builder ingest uses (:func:`netfleet.catalog.rows.envelope_rows`
over the envelope :func:`netfleet.store.imports.build_envelope` makes of the file; a netfleet
envelope as it is), so they are the rows an eager ingest of the same file gives:

* **on demand**: :func:`run_streams` opens each run's source once, checks its SHA-256 against
  the manifest's ``file_id`` (a file changed since it was registered is an error naming the
  file, never wrong rows) and returns the rows (``intervals`` schema, ``kind = 'stream'``);
* **built per partition**: :func:`ensure_streams` writes the rows of up to :data:`PART_FILES`
  files at a time into ``CATALOG/streams/part-<sha256>.parquet`` (temp name, fsync, rename;
  the part's (``file_id`` → ``run_id``) pairs in its Parquet metadata). A part is used only while
  every pair it holds is an ``ok`` row of the manifest, so it is never stale: a file that
  changed is a new ``file_id``, a retired file's part is rewritten without it or deleted — the
  folder holds at most the current files' rows. :func:`start_background` runs the same build
  in a detached, low-priority process. One builder at a time (``streams/.lock``), one
  partition per turn of the lock, so a query that needs them and a background build share
  the work instead of doing it twice.

``CATALOG/streams/`` is not hidden (Athena, Trino and Spark read it: ``netfleet export``
declares it); its lock and temp files are (``.``).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Collection, Iterator
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from netfleet.catalog.manifest import MANIFEST
from netfleet.errors import CatalogError, NetfleetError

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

    from netfleet.store.envelope import Envelope

#: the folder of built per-stream parts
STREAMS_DIR = "streams"
#: files per built part (a partition): bounds the builder's memory (≈ 600 rows a seed-002 file)
PART_FILES = 256
#: Parquet metadata key of a part: JSON {file_id: run_id} of every file it covers (also those
#: with no per-stream rows)
FILES_KEY = b"netfleet_streams_files"
#: more runs than this asked on demand: built into parts and read from there
ON_DEMAND_MAX = 64

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class SourceRun:
    """One registered file: its run, where its bytes are, their SHA-256, and where
    ``--keep-copy`` put a copy (read when the source is gone or changed)."""

    run_id: str
    source: str
    file_id: str
    kept: str | None = None
    #: the import's ``--side`` (the manifest's ``asked``): a CSV says neither side
    side: str | None = None


def has_manifest(catalog_dir: Path) -> bool:
    return os.path.lexists(catalog_dir / MANIFEST)


def manifest_runs(
    catalog_dir: Path,
    run_ids: Collection[str] | None = None,
    con: duckdb.DuckDBPyConnection | None = None,
) -> list[SourceRun]:
    """The manifest's ``ok`` rows (of ``run_ids`` only, when given), in manifest order — read
    by DuckDB (``con``'s view ``manifest`` when given): no pyarrow for a query whose streams
    are built already."""
    import duckdb

    path = catalog_dir / MANIFEST
    if con is None:
        if not has_manifest(catalog_dir):
            return []
        if path.is_symlink():
            from netfleet.durable import refused

            raise refused(path, catalog_dir)
        con = duckdb.connect(":memory:")
        quoted = "'" + str(path).replace("'", "''") + "'"
        con.execute(f"CREATE VIEW manifest AS SELECT * FROM read_parquet({quoted})")  # noqa: S608
    try:
        names = {d[0] for d in con.execute("SELECT * FROM manifest LIMIT 0").description}
        kept = "kept" if "kept" in names else "NULL"
        side = "json_extract_string(asked, '$.side')" if "asked" in names else "NULL"
        rows = con.execute(
            f"SELECT run_id, source, file_id, {kept}, {side} FROM manifest "  # noqa: S608
            "WHERE state = 'ok' AND run_id IS NOT NULL AND file_id IS NOT NULL"
        ).fetchall()
    except duckdb.Error as exc:
        raise CatalogError(
            f"{path}: unreadable manifest ({str(exc).splitlines()[0]})",
            hint="run netfleet import again to register the files",
        ) from exc
    wanted = None if run_ids is None else set(run_ids)
    return [SourceRun(*row) for row in rows if wanted is None or row[0] in wanted]


def _opened(path: Path) -> Any:
    """A regular file opened for reading, never through a link at its name."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{path}: not a regular file")
    return os.fdopen(fd, "rb")


def read_source(source: str) -> bytes:
    """The bytes of a registered file: a local path (a regular file, not a link) or an
    ``s3://bucket/key`` object. At most the raw-result limit plus one byte is read."""
    from netfleet.store.limits import max_raw_bytes

    limit = max_raw_bytes() + 1
    if source.startswith("s3://"):
        bucket, _, key = source.removeprefix("s3://").partition("/")
        from netfleet import aws

        try:
            body = aws.client("s3").get_object(Bucket=bucket, Key=key)["Body"]
            data: bytes = body.read(limit)
        except Exception as exc:  # botocore's errors: the object is gone or unreachable
            raise CatalogError(
                f"{source}: cannot read the registered object ({type(exc).__name__}: {exc})",
                hint="check the object and your AWS credentials, or run netfleet import again",
            ) from exc
        return data
    try:
        with _opened(Path(source)) as fh:
            data = fh.read(limit)
    except OSError as exc:
        raise CatalogError(
            f"{source}: cannot read the registered file ({exc.strerror or exc})",
            hint="put it back, or run netfleet import again (a missing file's run is retired)",
        ) from exc
    return data


def verified(run: SourceRun, data: bytes) -> bytes:
    """``data`` when its SHA-256 is the run's ``file_id``; else a clear error naming the file."""
    digest = hashlib.sha256(data).hexdigest()
    if digest != run.file_id:
        raise CatalogError(
            f"{run.source}: changed since it was imported (sha256 {digest[:16]}…, registered "
            f"{run.file_id[:16]}… for run {run.run_id}): its per-stream rows would not be the "
            "run's",
            hint="run netfleet import again on it (a changed file is a new run; the old one "
            "retires), or put the original back",
        )
    return data


def _document(run: SourceRun, data: bytes) -> dict[str, Any]:
    """The envelope of one file: netfleet's own as it is, an imported file as ``netfleet
    import`` builds it (the reader of whichever engine claims it)."""
    from netfleet.store.import_base import ImportProblem
    from netfleet.store.imports import build_envelope

    if data[:2] == b"\x1f\x8b" or data[:1] == b"{":
        from netfleet.store.rawfile import decode_raw

        head = _head(data)
        if b'"netfleet_format"' in head:
            import io

            from netfleet.store.envelope import upgrade

            return upgrade(decode_raw(io.BytesIO(data), run.source), run.source)
    # no labels, no pattern: per-stream rows depend on neither; a start time from the path or
    # the clock (mtime) changes no row either
    common: dict[str, Any] = {
        "campaign": "imported",
        "side": run.side if run.side in ("client", "server") else "auto",
        "mtime": 0.0,
    }
    try:
        envelope = build_envelope(Path(run.source), data, labels={}, pattern=None, **common)
    except ImportProblem as exc:
        if ".streams[" not in str(exc):
            raise
        envelope = _unchecked_streams(run, data, common)
    doc = envelope.model_dump(mode="json", exclude={"result"})
    doc["result"] = envelope.result  # the file's parsed JSON as it is: not copied again
    return doc


def _unchecked_streams(run: SourceRun, data: bytes, common: dict[str, Any]) -> Envelope:
    """An iperf3 ``-J`` file refused only for a per-stream rate no link can carry: import by
    reference registers it (its per-stream entries are not decoded then), so its rows are
    made as the reader makes them, every other check kept — the ``intervals`` view leaves
    the impossible rates out of every statistic."""
    from netfleet.jsonparse import loads_storable
    from netfleet.store.import_base import ImportProblem
    from netfleet.store.import_iperf3 import checked_shape, iperf3_envelope
    from netfleet.store.imports import _plain  # the import's own inflating, with its limits

    doc = loads_storable(_plain(data))
    if not isinstance(doc, dict):
        raise ImportProblem("not iperf3 JSON output")
    checked_shape(_without_streams(doc))
    return iperf3_envelope(
        Path(run.source), data, doc, labels={}, found=[], epoch_label=None, **common
    )


def _without_streams(doc: dict[str, Any]) -> dict[str, Any]:
    """The document with its per-stream entries left out (the server's JSON too)."""

    def bare(part: Any) -> Any:
        if not isinstance(part, dict) or not isinstance(part.get("intervals"), list):
            return part
        entries = part["intervals"]
        kept = [{k: v for k, v in e.items() if k != "streams"} if isinstance(e, dict) else e
                for e in entries]  # fmt: skip
        return {**part, "intervals": kept}

    out = bare(doc)
    if isinstance(out.get("server_output_json"), dict):
        out = {**out, "server_output_json": bare(out["server_output_json"])}
    return dict(out)


def _head(data: bytes) -> bytes:
    if data[:2] != b"\x1f\x8b":
        return data[:64]
    import zlib

    try:
        return zlib.decompressobj(wbits=31).decompress(data, 64)
    except zlib.error:
        return b""


def stream_rows(run: SourceRun, data: bytes) -> pa.Table:
    """The per-stream rows of one verified file: the ``intervals`` schema plus ``file_id``,
    ``run_id`` the manifest's."""
    import pyarrow as pa

    from netfleet.catalog.rows import INTERVALS_SCHEMA, envelope_rows
    from netfleet.store.import_base import ImportProblem

    try:
        rows = envelope_rows(_document(run, data), source=run.source)
    except (NetfleetError, ImportProblem, ValueError) as exc:  # RowError, FormatError…
        message = getattr(exc, "message", None) or str(exc)
        raise CatalogError(
            f"{run.source}: per-stream rows could not be read ({message})",
            hint="run netfleet import again on it to see its reason",
        ) from exc
    streams = [r for r in rows.intervals if r["kind"] == "stream"]
    table = pa.Table.from_pylist(streams, schema=INTERVALS_SCHEMA)
    table = table.set_column(0, "run_id", pa.array([run.run_id] * table.num_rows, pa.string()))
    return table.append_column("file_id", pa.array([run.file_id] * table.num_rows, pa.string()))


def read_verified(run: SourceRun) -> bytes:
    """The registered bytes of a run: its source's, else (gone or changed) its kept copy's."""
    try:
        return verified(run, read_source(run.source))
    except CatalogError:
        if not run.kept:
            raise
        copy = SourceRun(run.run_id, run.kept, run.file_id, side=run.side)
        try:
            return verified(copy, read_source(run.kept))
        except CatalogError:
            pass
        raise


def one_run(run: SourceRun) -> pa.Table:
    """Read, verify and decode one file (a worker's task)."""
    return stream_rows(run, read_verified(run))


def part_schema() -> pa.Schema:
    import pyarrow as pa

    from netfleet.catalog.rows import INTERVALS_SCHEMA

    return INTERVALS_SCHEMA.append(pa.field("file_id", pa.string()))


def run_streams(runs: list[SourceRun]) -> pa.Table:
    """Per-stream rows of ``runs``, each source read once, here (no cache)."""
    import pyarrow as pa

    tables = [one_run(run) for run in runs]
    return pa.concat_tables(tables) if tables else part_schema().empty_table()


# --- the built parts ---------------------------------------------------------------------------


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


@contextlib.contextmanager
def _locked(folder: Path, wait: bool = True) -> Iterator[bool]:
    """The builders' lock (``streams/.lock``); yields False when ``wait`` is off and another
    builder holds it."""
    from netfleet.durable import open_in

    fd = open_in(folder, ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    with os.fdopen(fd, "r+b") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


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
            import multiprocessing

            ctx = multiprocessing.get_context("forkserver")
            started.append(stack.enter_context(ProcessPoolExecutor(workers, mp_context=ctx)))
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
            with _opened(part) as fh:
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
        with _locked(folder, wait) as held:
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
    catalog has no manifest). It gives way when another builder runs; what it built stays
    if it is stopped."""
    if not has_manifest(catalog_dir):
        return None
    return subprocess.Popen(  # our interpreter, our module, a path argument
        [sys.executable, "-m", "netfleet.catalog.lazystreams", str(catalog_dir)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def main(argv: list[str]) -> int:
    """``python -m netfleet.catalog.lazystreams CATALOG``: the background builder."""
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
