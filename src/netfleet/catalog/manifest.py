"""The manifest: one row per file ``netfleet import`` registered, by reference (issue 26).

The original bytes stay where they are (a local path or an ``s3://`` object); the manifest
says where, what they were when read (size, mtime_ns, inode / ETag, and the SHA-256 that is
the row's ``file_id``), which run of the catalog they hold, and how the file fared. Every
number of the catalog traces back to it: an ``intervals`` row → its ``run_id`` → the manifest
row of that run (source, sha256, size, mtime) → bytes ``netfleet verify`` can hash again.

One Parquet file, ``CATALOG/manifest.parquet``, replaced atomically (temp + fsync + rename) by
each import that changes anything; the import's *generation* (one more than the last) is
written in every row it changed and in the file's metadata (:func:`current_generation`).
Columns (others may be added; these are never renamed — ``docs/import.md``):

* ``file_id`` — SHA-256 hex of the file's bytes as stored (null when never read: a link
  refused, an unreadable file);
* ``source`` — absolute local path, or ``s3://bucket/key``;
* ``size``, ``mtime_ns``, ``inode`` (the last two null on S3), ``etag`` (null locally);
* ``run_id`` — the catalog's run id of the run the file holds (null when none);
* ``generation`` — the manifest generation that last changed the row;
* ``state`` — ``ok`` | ``bad`` (read, refused: ``reason``) | ``retired`` (the file changed
  since: a newer row holds it, this one's catalog rows are gone) | ``missing`` (gone from its
  source; its runs stay in the catalog, the bytes can no longer be verified);
* ``reason`` — why not ok (null when ok);
* ``labels`` — the run's labels (JSON object: ``--label``, the pattern's, the file's own;
  null when the file was refused before they were known).

And, for provenance: ``campaign``, ``format`` (the engine that read it), ``file_keys`` (the
file's own top-level keys with text or number values, JSON), ``pattern_labels`` and
``inferred`` (JSON lists), ``flags`` (JSON list of the interval checks' findings),
``version_id`` (S3), ``kept`` (where ``--keep-copy`` put a copy), ``checked_ns`` (when the
bytes were last hashed) and ``asked`` (the import's own options — ``--label``, ``--pattern``,
``--side`` — JSON: a file imported again with other options is another run).

Beside it, ``CATALOG/_manifest_index.json`` (written after it, atomically) holds the
generation and, of the rows not retired, the columns of :data:`INDEX_COLUMNS` (stat, SHA-256,
kept copy), with the manifest file's own stat: a no-op import, ``verify`` and the cheat
sheet's cache read that instead of the Parquet file (no pyarrow to load: 0.7 s here), and fall
back to the Parquet file whenever the index is not the one written with the manifest there.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from netfleet.catalog.layout import TEMP_PREFIX
from netfleet.durable import atomic_write, write_temp

if TYPE_CHECKING:
    import pyarrow as pa

MANIFEST = "manifest.parquet"
INDEX = "_manifest_index.json"
#: the columns the index keeps per row (not retired)
INDEX_COLUMNS = (
    "source", "campaign", "asked", "state", "size", "mtime_ns", "inode", "etag", "file_id", "kept",
    "checked_ns",
)  # fmt: skip
#: the Parquet key-value metadata holding the generation
GENERATION_KEY = b"netfleet.manifest.generation"
STATES = ("ok", "bad", "retired", "missing")

#: (column, Arrow type name): the contract columns first, in this order
COLUMNS: tuple[tuple[str, str], ...] = (
    ("file_id", "string"),
    ("source", "string"),
    ("size", "int64"),
    ("mtime_ns", "int64"),
    ("inode", "int64"),
    ("etag", "string"),
    ("run_id", "string"),
    ("generation", "int64"),
    ("state", "string"),
    ("reason", "string"),
    ("labels", "string"),
    ("campaign", "string"),
    ("format", "string"),
    ("file_keys", "string"),
    ("pattern_labels", "string"),
    ("inferred", "string"),
    ("flags", "string"),
    ("version_id", "string"),
    ("kept", "string"),
    ("checked_ns", "int64"),
    ("asked", "string"),
)


def schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema([(name, getattr(pa, kind)()) for name, kind in COLUMNS])


def manifest_path(catalog_dir: str | os.PathLike[str]) -> Path:
    return Path(catalog_dir) / MANIFEST


def read_manifest(catalog_dir: str | os.PathLike[str]) -> pa.Table:
    """The catalog's manifest (every row, every state); an empty table of :func:`schema` when
    nothing was imported by reference yet. Columns added later read as nulls in older files."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = manifest_path(catalog_dir)
    if not path.is_file() or path.is_symlink():
        return schema().empty_table()
    with pq.ParquetFile(path) as one:  # not read_table: it loads pyarrow.dataset (0.2 s)
        table = one.read()
    want = schema()
    for field in want:
        if field.name not in table.column_names:
            table = table.append_column(field, pa.nulls(table.num_rows, field.type))
    return table.select(want.names + [n for n in table.column_names if n not in want.names])


def _stamp(path: Path) -> list[int] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ino] if stat.S_ISREG(st.st_mode) else None


def read_index(catalog_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The index written with the manifest that is there (``generation``, ``rows``: dicts of
    :data:`INDEX_COLUMNS`), or None when there is none or it belongs to another manifest file.
    With no manifest at all: generation 0, no rows."""
    stamp = _stamp(manifest_path(catalog_dir))
    if stamp is None:
        return {"generation": 0, "rows": []}
    index = Path(catalog_dir) / INDEX
    try:
        if not stat.S_ISREG(os.lstat(index).st_mode):
            return None
        doc = json.loads(index.read_bytes())
        if doc.get("manifest") != stamp or not isinstance(doc.get("generation"), int):
            return None
        return {
            "generation": doc["generation"],
            "rows": [dict(zip(INDEX_COLUMNS, r, strict=True)) for r in doc["rows"]],
        }
    except (OSError, ValueError, TypeError, AttributeError):
        return None


#: the index's head as :func:`write_manifest` writes it (generation, then the manifest's stat)
_HEAD = re.compile(rb'\{"generation": (\d+), "manifest": \[(\d+), (\d+), (\d+)\], "rows": ')


def _head_generation(catalog_dir: str | os.PathLike[str]) -> int | None:
    """The generation from the index's first bytes, when it belongs to the manifest that is
    there (the cheat sheet's cache key asks it on every run: the whole index is 0.3 MB per
    1,000 files); None when that cannot be told from them."""
    stamp = _stamp(manifest_path(catalog_dir))
    try:
        fd = os.open(Path(catalog_dir) / INDEX, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        head = os.read(fd, 200) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
    finally:
        os.close(fd)
    found = _HEAD.match(head)
    if stamp is None or found is None or [int(n) for n in found.groups()[1:]] != stamp:
        return None
    return int(found.group(1))


def current_generation(catalog_dir: str | os.PathLike[str]) -> int:
    """The generation of the manifest as last written (0: none yet)."""
    head = _head_generation(catalog_dir)
    if head is not None:
        return head
    index = read_index(catalog_dir)
    if index is not None:
        return int(index["generation"])
    import pyarrow.parquet as pq

    path = manifest_path(catalog_dir)
    if not path.is_file() or path.is_symlink():
        return 0
    meta = pq.read_schema(path).metadata or {}
    raw = meta.get(GENERATION_KEY)
    return int(raw) if raw is not None and raw.isdigit() else 0


def write_manifest(catalog_dir: str | os.PathLike[str], rows: pa.Table, generation: int) -> Path:
    """Replace the manifest with ``rows`` (conformed to :func:`schema`) at ``generation``:
    temp file in the catalog directory, fsync, rename, fsync the directory."""
    import io

    import pyarrow.parquet as pq

    from netfleet.durable import fsync_dir

    want = schema()
    table = rows.select(want.names)
    if not table.schema.equals(want):  # (rows_table's are: a cast loads pyarrow.compute)
        table = table.cast(want)
    table = table.replace_schema_metadata({GENERATION_KEY: str(generation).encode()})
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd")
    folder = Path(catalog_dir)
    tmp = write_temp(folder, buf.getvalue(), prefix=TEMP_PREFIX, suffix=".parquet")
    try:
        os.chmod(tmp, 0o644)  # read by the query engines as the catalog's other files are
        os.replace(tmp, folder / MANIFEST)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(folder)
    live = [
        [row[c] for c in INDEX_COLUMNS]
        for row in table.select(list(INDEX_COLUMNS)).to_pylist()
        if row["state"] != "retired"
    ]
    doc = {"generation": generation, "manifest": _stamp(folder / MANIFEST), "rows": live}
    atomic_write(folder / INDEX, json.dumps(doc).encode(), prefix=TEMP_PREFIX)
    return folder / MANIFEST


def rows_table(rows: list[dict[str, Any]]) -> pa.Table:
    """Manifest rows (dicts keyed by column; missing keys are null) as a table."""
    import pyarrow as pa

    want = schema()
    return pa.Table.from_pydict(
        {name: [row.get(name) for row in rows] for name in want.names}, schema=want
    )
