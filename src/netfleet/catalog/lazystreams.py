"""Per-stream interval rows of the files the manifest registered, made when a query asks.

Import registers files by reference (``CATALOG/manifest.parquet``: ``file_id`` = the SHA-256
of the file's bytes, ``source``, ``run_id``, ``state`` …) and keeps runs, ends and interval
*sums* eagerly. The per-stream rows — ten times the sums with ``-P 10`` — are made here, from
the source files, with the row builder ingest uses (:func:`netfleet.catalog.build.envelope_rows`
over the envelope :func:`netfleet.store.imports.build_envelope` makes of the file; a netfleet
envelope as it is), so they are the rows an eager ingest of the same file gives:

* **on demand**: :func:`run_streams` opens each run's source once, checks its SHA-256 against
  the manifest's ``file_id`` (a file changed since it was registered is an error naming the
  file, never wrong rows) and returns the rows (``intervals`` schema, ``kind = 'stream'``);
* **built per partition** into ``CATALOG/streams/``, keyed by the files' SHA-256, never
  stale: :mod:`netfleet.catalog.lazystreams_build`.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from netfleet.catalog.manifest import MANIFEST, by_reference
from netfleet.errors import CatalogError, NetfleetError
from netfleet.readback import NotOurs, open_back

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

    from netfleet.store.envelope import Envelope

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
    """The manifest's rows held by reference (``ok``, not an ingested envelope's:
    :func:`~netfleet.catalog.manifest.by_reference`; of ``run_ids`` only, when given), in
    manifest order — read
    by DuckDB (``con``'s view ``manifest`` when given): no pyarrow for a query whose streams
    are built already."""
    import duckdb

    path = catalog_dir / MANIFEST
    if con is None:
        from netfleet.catalog.manifest import duck_view

        con = duckdb.connect(":memory:")
        if not duck_view(con, catalog_dir):
            return []
    try:
        names = {d[0] for d in con.execute("SELECT * FROM manifest LIMIT 0").description}
        kept = "kept" if "kept" in names else "NULL"
        side = "json_extract_string(asked, '$.side')" if "asked" in names else "NULL"
        rows = con.execute(
            f"SELECT run_id, source, file_id, {kept}, {side} FROM manifest "  # noqa: S608
            f"WHERE {by_reference()} AND run_id IS NOT NULL AND file_id IS NOT NULL"
        ).fetchall()
    except duckdb.Error as exc:
        raise CatalogError(
            f"{path}: unreadable manifest ({str(exc).splitlines()[0]})",
            hint="run netfleet import again to register the files",
        ) from exc
    wanted = None if run_ids is None else set(run_ids)
    return [SourceRun(*row) for row in rows if wanted is None or row[0] in wanted]


def opened(path: Path) -> Any:
    """A regular file opened for reading (:func:`netfleet.readback.open_back`: looked at
    first, so a FIFO or a device a forged manifest names is never opened; never through a link
    at its name, never waiting). OSError naming why otherwise."""
    try:
        fd = open_back(path)
    except NotOurs as exc:
        raise OSError(f"{exc}: not read") from None
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
        with opened(Path(source)) as fh:
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
            f"{run.file_id[:16]}… for run {run.run_id}): what it holds now is not that run",
            hint="run netfleet import again on it (a changed file is a new run; the old one "
            "retires), or put the original back",
        )
    return data


def envelope_of(
    run: SourceRun, data: bytes, *, campaign: str = "imported", labels: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The envelope of one file: netfleet's own as it is, an imported file as ``netfleet
    import`` builds it (the reader of whichever engine claims it), filed under ``campaign``
    with ``labels`` (the per-stream rows depend on neither) and the manifest's run id."""
    from netfleet.store.import_base import ImportProblem
    from netfleet.store.imports import build_envelope

    if data[:2] == b"\x1f\x8b" or data[:1] == b"{":
        from netfleet.store.rawfile import decode_raw

        head = _head(data)
        if b'"netfleet_format"' in head:
            import io

            from netfleet.store.envelope import upgrade

            return upgrade(decode_raw(io.BytesIO(data), run.source), run.source)
    # no pattern: the labels are the run's already; a start time from the path or the clock
    # (mtime) changes no row
    common: dict[str, Any] = {
        "campaign": campaign,
        "side": run.side if run.side in ("client", "server") else "auto",
        "mtime": 0.0,
    }
    try:
        envelope = build_envelope(
            Path(run.source), data, labels=dict(labels or {}), pattern=None, **common
        )
    except ImportProblem as exc:
        if ".streams[" not in str(exc):
            raise
        envelope = _unchecked_streams(run, data, {**common, "labels": dict(labels or {})})
    doc = envelope.model_dump(mode="json", exclude={"result"})
    doc["result"] = envelope.result  # the file's parsed JSON as it is: not copied again
    doc["run_id"] = doc["run_key"] = run.run_id
    return doc


def _unchecked_streams(run: SourceRun, data: bytes, common: dict[str, Any]) -> Envelope:
    """An iperf3 ``-J`` file refused only for a per-stream rate no link can carry: import by
    reference registers it (its per-stream entries are not decoded then), so its rows are
    made as the reader makes them, every other check kept — the ``intervals`` view leaves
    the impossible rates out of every statistic."""
    from netfleet.store.import_iperf3 import checked_shape, iperf3_envelope, parse
    from netfleet.store.imports import _plain  # the import's own inflating, with its limits

    doc = parse(_plain(data))
    checked_shape(_without_streams(doc))
    return iperf3_envelope(Path(run.source), data, doc, found=[], epoch_label=None, **common)


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

    from netfleet.catalog.build import envelope_rows
    from netfleet.catalog.schemas import INTERVALS_SCHEMA
    from netfleet.store.import_base import ImportProblem

    try:
        rows = envelope_rows(envelope_of(run, data), source=run.source)
    except (NetfleetError, ImportProblem, ValueError) as exc:  # RowError, FormatError…
        message = getattr(exc, "message", None) or str(exc)
        raise CatalogError(
            f"{run.source}: per-stream rows could not be read ({message})",
            hint="run netfleet import again on it to see its reason",
        ) from exc
    streams = rows.intervals.where("kind", "stream")
    columns = {name: streams.column(name) for name in INTERVALS_SCHEMA.names}
    table = pa.Table.from_pydict(columns, schema=INTERVALS_SCHEMA)
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

    from netfleet.catalog.schemas import INTERVALS_SCHEMA

    return INTERVALS_SCHEMA.append(pa.field("file_id", pa.string()))


def run_streams(runs: list[SourceRun]) -> pa.Table:
    """Per-stream rows of ``runs``, each source read once, here (no cache)."""
    import pyarrow as pa

    tables = [one_run(run) for run in runs]
    return pa.concat_tables(tables) if tables else part_schema().empty_table()
