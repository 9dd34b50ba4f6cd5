"""The manifest: one row per file that entered the catalog — a foreign file ``netfleet import
--catalog`` registered by reference, or a netfleet envelope ``netfleet ingest`` read from a
results root (its ``asked`` is :data:`INGESTED`; :func:`by_reference` tells the two apart). One
rule decides what is already in for both (:func:`netfleet.catalog.register.load`: a file whose
stat is its row's is not opened) and one provenance story holds for both: an ``intervals`` row
→ its ``run_id`` → the manifest row of that run (source, SHA-256 as ``file_id``, size, mtime)
→ bytes ``netfleet verify`` can hash again.

The columns (:data:`COLUMNS`: the contract's first, never renamed; others may be added, read as
nulls in older files) and the layout are documented in docs/import.md. In short: every row has
a ``row_id`` (int64, unique in the catalog), the key of its versions; the rows live in
``CATALOG/manifest.parquet`` (the base) and, when the base is large, in *segments*
``CATALOG/manifest.segments/gGENERATION.parquet`` holding only the rows one import made or
changed. A row is its version of the highest ``generation`` (:func:`read_manifest`,
:func:`duck_view`: the one way to read it); when the segments are many, or hold a fair part of
the rows, the next import writes the base again with every row's last version and deletes the
segments (a crash between the two leaves segments whose versions the base has: the same rows).
Each file is written to a temp name, fsynced and renamed (the commit), then the directory
fsynced; the generation is in every row it changed and in the file's metadata
(:func:`current_generation`).

Beside them, ``CATALOG/_manifest_index`` (written after, atomically) is the compact *stat
index*: a JSON head line (the generation, the next ``row_id`` and the stat of every manifest
file) and then, as columns, :data:`INDEX_COLUMNS` of the rows not retired. A no-op import,
``verify`` and the cheat sheet's cache read that instead of the Parquet files (no pyarrow to
load), and fall back to the Parquet files whenever the index is not the one written with the
manifest files there.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from netfleet.catalog.layout import TEMP_PREFIX
from netfleet.durable import atomic_write, write_temp
from netfleet.plain import Plain
from netfleet.readback import loads_back, open_back, read_back

if TYPE_CHECKING:
    from typing import Any

    import duckdb
    import pyarrow as pa

MANIFEST = "manifest.parquet"
#: the folder of the manifest's segments (``g<generation>.parquet``)
SEGMENTS = "manifest.segments"
INDEX = "_manifest_index"
#: the most bytes of the index read back (≈ 200 bytes a file: millions of files); a larger
#: one is not ours and the manifest files are read instead
MAX_INDEX_BYTES = 2 * 1024 * 1024 * 1024
#: the columns the index keeps per row (not retired)
INDEX_COLUMNS = (
    "row_id", "source", "campaign", "asked", "state", "size", "mtime_ns", "inode", "etag",
    "file_id", "kept", "checked_ns", "run_id", "reason",
)  # fmt: skip
#: ``asked`` of an ingested envelope's row: ``ingest`` takes no options (the envelope is its run,
#: every row of it — the per-stream rows too — is in the catalog). Any other row is a file held
#: by reference: its per-stream rows are read from it on demand
INGESTED = "ingest"


def by_reference(alias: str = "") -> str:
    """The SQL condition of the manifest rows whose runs are read from their source file (an
    ``ok`` file registered by reference, not an ingested envelope); ``alias``: the manifest's
    name in the query (``m``), when it is joined."""
    at = f"{alias}." if alias else ""
    return f"({at}state = 'ok' AND {at}asked IS DISTINCT FROM '{INGESTED}')"


#: the Parquet key-value metadata holding the generation
GENERATION_KEY = b"netfleet.manifest.generation"
#: segments at most before the base is written again
MAX_SEGMENTS = 24
#: the base is written again when its segments would hold more rows than this share of it
COMPACT_SHARE = 0.25
#: a manifest with fewer rows than this is written whole (a segment would save nothing)
SEGMENT_MIN_ROWS = 4_000

#: (column, Arrow type name): the contract columns first, in this order
_S, _I = "string", "int64"
COLUMNS: tuple[tuple[str, str], ...] = (
    ("file_id", _S), ("source", _S), ("size", _I), ("mtime_ns", _I), ("inode", _I),
    ("etag", _S), ("run_id", _S), ("generation", _I), ("state", _S), ("reason", _S),
    ("labels", _S), ("campaign", _S), ("format", _S), ("file_keys", _S),
    ("pattern_labels", _S), ("inferred", _S), ("flags", _S), ("version_id", _S), ("kept", _S),
    ("checked_ns", _I), ("asked", _S), ("row_id", _I),
)  # fmt: skip


def schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema([(name, getattr(pa, kind)()) for name, kind in COLUMNS])


def manifest_path(catalog_dir: str | os.PathLike[str]) -> Path:
    return Path(catalog_dir) / MANIFEST


def _segment_name(generation: int) -> str:
    return f"g{generation:012d}.parquet"


def _segments_dir(catalog_dir: str | os.PathLike[str]) -> Path:
    """The segments' folder; refused when it is a link (nothing is read, written or deleted
    through one)."""
    folder = Path(catalog_dir) / SEGMENTS
    if folder.is_symlink():
        from netfleet.durable import refused

        raise refused(folder, Path(catalog_dir))
    return folder


def segment_paths(catalog_dir: str | os.PathLike[str]) -> list[Path]:
    """The manifest's segments, oldest first (regular files only)."""
    folder = _segments_dir(catalog_dir)
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    out = []
    for name in names:
        if name.startswith("g") and name.endswith(".parquet") and name[1:-8].isdigit():
            path = folder / name
            if stat.S_ISREG(os.lstat(path).st_mode):
                out.append(path)
    return out


def manifest_files(catalog_dir: str | os.PathLike[str]) -> list[Path]:
    """The base (when there is one) and its segments: the files :func:`read_manifest` reads."""
    base = manifest_path(catalog_dir)
    if not os.path.lexists(base):
        return []
    if base.is_symlink():
        from netfleet.durable import refused

        raise refused(base, Path(catalog_dir))
    return [base, *segment_paths(catalog_dir)]


def _conform(table: pa.Table) -> pa.Table:
    """``table`` with :func:`schema`'s columns first (nulls for those an older file lacks)."""
    import pyarrow as pa

    want = schema()
    for one in want:
        if one.name not in table.column_names:
            table = table.append_column(one, pa.nulls(table.num_rows, one.type))
    return table.select(want.names + [n for n in table.column_names if n not in want.names])


def read_manifest(catalog_dir: str | os.PathLike[str]) -> pa.Table:
    """The catalog's manifest (every row, every state, each in its last version, by
    ``row_id``); an empty table of :func:`schema` when nothing was imported by reference yet.
    Columns added later read as nulls in older files."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = []
    for path in manifest_files(catalog_dir):
        with pq.ParquetFile(path) as one:  # not read_table: it loads pyarrow.dataset (0.2 s)
            tables.append(_conform(one.read()))
    if not tables:
        return schema().empty_table()
    if len(tables) == 1:
        return _with_ids(tables[0], 0)  # a manifest from before row ids: their positions
    table = pa.concat_tables(tables, promote_options="default")
    ids = table.column("row_id").to_pylist()
    generations = table.column("generation").to_pylist()
    last: dict[int, int] = {}
    for at, (row, generation) in enumerate(zip(ids, generations, strict=True)):
        was = last.get(row)
        if was is None or (generations[was] or 0) <= (generation or 0):
            last[row] = at
    return table.take(pa.array([last[row] for row in sorted(last)], pa.int64()))


def duck_view(con: duckdb.DuckDBPyConnection, catalog_dir: Path, name: str = "manifest") -> bool:
    """The view ``name`` over the manifest's rows as :func:`read_manifest` has them; False (no
    view) when the catalog has no manifest."""
    files = manifest_files(catalog_dir)
    if not files:
        return False
    quoted = ", ".join("'" + str(p).replace("'", "''") + "'" for p in files)
    source = f"read_parquet([{quoted}], union_by_name = true)"
    if len(files) > 1:  # the last version of each row
        source = (
            f"(SELECT * FROM {source} QUALIFY row_number() OVER "  # noqa: S608
            "(PARTITION BY row_id ORDER BY generation DESC) = 1 ORDER BY row_id)"
        )
    # every column of :data:`COLUMNS`, null where an older file lacks it (as _conform does)
    have = {d[0] for d in con.execute(f"SELECT * FROM {source} LIMIT 0").description}  # noqa: S608
    lacking = "".join(f", NULL::{_SQL[kind]} AS {n}" for n, kind in COLUMNS if n not in have)
    con.execute(f"CREATE VIEW {name} AS SELECT *{lacking} FROM {source}")  # noqa: S608
    return True


#: the SQL type of each Arrow type name of :data:`COLUMNS`
_SQL = {"string": "VARCHAR", "int64": "BIGINT"}


# --- the stat index ------------------------------------------------------------------------


def _stamps(catalog_dir: str | os.PathLike[str]) -> list[list[Any]]:
    """[name, size, mtime_ns, inode] of every manifest file there (none: [])."""
    out = []
    for path in [manifest_path(catalog_dir), *segment_paths(catalog_dir)]:
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            out.append([path.name, st.st_size, st.st_mtime_ns, st.st_ino])
    return out


#: the index's columns held as int64 (null: :data:`_NULL`); the others are JSON lists
_INTS = frozenset({"row_id", "size", "mtime_ns", "inode", "checked_ns"})
#: columns held as codes into the head's list of their distinct values
_CODED = frozenset({"campaign", "asked", "state"})
_NULL = -(1 << 63)
#: the characters JSON writes as they are (``ensure_ascii``): printable ASCII but quote, backslash
_AS_IS = bytes(c for c in range(0x20, 0x7F) if c not in b'"\\')


if TYPE_CHECKING:
    _ColumnsBase = dict[str, list[Any]]
else:
    _ColumnsBase = dict


class _Columns(_ColumnsBase):
    """The index's columns, each decoded from the file when first asked (a no-op import asks
    only the stat columns, never the 64-hex ones). Rows appended to a column not decoded
    wait in ``tail``: written again, its bytes are copied and the tail's added after them."""

    def __init__(self, body: bytes | memoryview = b"", where: dict[str, Any] | None = None) -> None:
        super().__init__()
        self._body = body
        self._where = where or {}
        self.tail: dict[str, list[Any]] = {}
        #: decoded columns: how many values the file had; changed ones (not only appended)
        self.from_file: dict[str, int] = {}
        self.modified: set[str] = set()

    def raw(self, name: str) -> tuple[memoryview | bytes, list[Any] | None]:
        """A column not decoded: its bytes in the file and its coded values (or None)."""
        offset, length, values = self._where[name]
        return self._body[offset : offset + length], values

    def raw_only(self, name: str) -> bool:
        """Whether ``name`` is as the file holds it: not decoded, nothing appended."""
        return name not in self and name not in self.tail and name in self._where

    def __missing__(self, name: str) -> list[Any]:
        if name not in self._where:
            raise KeyError(name)
        offset, length, values = self._where[name]
        raw = self._body[offset : offset + length]
        if name in _INTS:
            from array import array

            numbers = array("q")
            numbers.frombytes(raw)
            column: list[Any] = list(numbers)
            if _NULL in numbers:
                column = [None if v == _NULL else v for v in column]
        elif values is not None:  # codes into the distinct values
            column = [values[code] for code in json.loads(bytes(raw))]
        else:
            column = json.loads(bytes(raw))
        self.from_file[name] = len(column)
        column.extend(self.tail.pop(name, ()))
        self[name] = column
        return column

    def every(self) -> _Columns:
        for name in INDEX_COLUMNS:
            self[name]  # decoded now
        return self


class Index(Plain):
    """The rows not retired, as columns of :data:`INDEX_COLUMNS` (lists, one value per row),
    with the manifest's generation and the next free ``row_id``."""

    __slots__ = ("generation", "next_row", "columns", "size", "files")  # noqa: RUF023

    generation: int
    next_row: int
    columns: dict[str, list[Any]]
    size: int | None
    #: the manifest files it was read with or written for (:func:`still_current`)
    files: list[list[Any]] | None

    def __init__(
        self,
        generation: int = 0,
        next_row: int = 0,
        columns: dict[str, list[Any]] | None = None,
        size: int | None = None,
        files: list[list[Any]] | None = None,
    ) -> None:
        self.generation = generation
        self.next_row = next_row
        self.columns = {name: [] for name in INDEX_COLUMNS} if columns is None else columns
        self.size = size
        self.files = files

    def __len__(self) -> int:
        return self.size if self.size is not None else len(self.columns["source"])

    def distinct(self, name: str) -> list[Any] | None:
        """The distinct values of a coded column as the file lists them, without decoding
        it; None when it is decoded (or not coded)."""
        columns = self.columns
        if not isinstance(columns, _Columns) or name in columns or name in columns.tail:
            return None
        values = columns._where.get(name, (0, 0, None))[2]
        return list(values) if isinstance(values, list) else None

    def _every(self) -> dict[str, list[Any]]:
        if isinstance(self.columns, _Columns):
            self.columns.every()
        return self.columns

    def ints(self, name: str) -> Sequence[int | None]:
        """An int column's values without making a Python list of them when it is as the file
        holds it: an ``array`` of int64 (null: the lowest int64); else its list (null: None)."""
        columns = self.columns
        if not isinstance(columns, _Columns) or not columns.raw_only(name):
            return columns[name]
        from array import array

        numbers = array("q")
        numbers.frombytes(columns.raw(name)[0])
        return numbers

    def column_is(self, name: str, values: Sequence[Any]) -> bool:
        """Whether column ``name`` holds exactly ``values``, in order (None: null). Compared
        as the file holds it when it is so — an int column as int64 bytes, a text column as
        its JSON when every value is printable ASCII without a quote or backslash (JSON
        writes those as they are) — without decoding it (a no-op import, 10,000 rows: the
        source column's decoding was 2 ms); else against the decoded column."""
        columns = self.columns
        if isinstance(columns, _Columns) and columns.raw_only(name) and name not in _CODED:
            raw = columns.raw(name)[0]
            if name in _INTS:
                from array import array

                try:
                    numbers = array("q", values)
                except (TypeError, OverflowError):
                    numbers = array("q", [_NULL])  # a None (null), a value beyond int64
                if _NULL not in numbers:  # (null's own value: decoded)
                    return numbers.tobytes() == bytes(raw)
            elif values:
                try:
                    joined = '", "'.join(values).encode()
                except (TypeError, UnicodeEncodeError):  # not all text: decoded
                    joined = b"\\"
                # JSON writes printable ASCII but quote and backslash as it is: the separators'
                # quotes are all that is left without those
                if joined.translate(None, _AS_IS) == b'"' * (2 * len(values) - 2):
                    return b'["' + joined + b'"]' == bytes(raw)
        return list(values) == columns[name]

    def row(self, at: int) -> dict[str, Any]:
        return {name: self.columns[name][at] for name in INDEX_COLUMNS}

    def rows(self) -> Iterator[dict[str, Any]]:
        self._every()
        for at in range(len(self)):
            yield self.row(at)

    def set(self, at: int, changes: dict[str, Any]) -> None:
        for name, value in changes.items():
            if name in INDEX_COLUMNS:
                self.columns[name][at] = value
                if isinstance(self.columns, _Columns):
                    self.columns.modified.add(name)

    def append(self, row: dict[str, Any]) -> None:
        self.extend({name: [value] for name, value in row.items()}, 1)

    def extend(self, columns: dict[str, list[Any]], count: int) -> None:
        """``count`` rows given as columns (a list per column, a missing one null): a list
        extended per column, not a call per row."""
        cols = self.columns
        nulls = [None] * count
        for name in INDEX_COLUMNS:
            values = columns.get(name, nulls)
            if isinstance(cols, _Columns) and name not in cols:  # not decoded: its tail
                cols.tail.setdefault(name, []).extend(values)
            else:
                cols[name].extend(values)
        if self.size is not None:
            self.size += count

    def live(self) -> Index:
        """This index without its retired rows."""
        keep = [at for at, state in enumerate(self.columns["state"]) if state != "retired"]
        if len(keep) == len(self):
            return self
        columns = self._every()
        cols = {name: [values[at] for at in keep] for name, values in columns.items()}
        return Index(self.generation, self.next_row, cols)

    @classmethod
    def of_table(cls, table: pa.Table, generation: int) -> Index:
        table = _with_ids(table, 0)
        cols = {name: table.column(name).to_pylist() for name in INDEX_COLUMNS}
        ids = [r for r in cols["row_id"] if r is not None]
        return cls(generation, max(ids, default=-1) + 1, cols).live()


def _encode_index(index: Index, stamps: list[list[Any]]) -> bytes:
    from array import array

    where: dict[str, list[Any]] = {}
    parts: list[bytes] = []
    offset = 0
    columns = index.columns
    for name in INDEX_COLUMNS:
        old: memoryview | bytes = b""
        values: list[Any] | None = None
        if isinstance(columns, _Columns) and name not in columns:  # as read, and its tail
            old, values = columns.raw(name)
            column = columns.tail.get(name, [])
        elif isinstance(columns, _Columns) and name not in columns.modified:  # only appended
            old, values = columns.raw(name)
            column = columns[name][columns.from_file[name] :]
        else:
            column = columns[name]
        if name in _INTS:
            data = array("q", [_NULL if v is None else v for v in column]).tobytes()
        elif name in _CODED:
            values = list(dict.fromkeys([*(values or []), *column]))
            code = {v: n for n, v in enumerate(values)}
            data = json.dumps([code[v] for v in column]).encode()
        else:
            data = json.dumps(column).encode()
        if len(old) > 2 and name not in _INTS:  # two JSON lists as one ("[]": just the tail)
            data = bytes(old[:-1]) + (b", " + data[1:] if column else b"]")
        elif old and name in _INTS:
            data = bytes(old) + data
        where[name] = [offset, len(data), values]
        parts.append(data)
        offset += len(data)
    head = {
        "generation": index.generation, "next_row": index.next_row, "files": stamps,
        "rows": len(index), "columns": where,
    }  # fmt: skip
    return json.dumps(head).encode() + b"\n" + b"".join(parts)


def _read_head(catalog_dir: str | os.PathLike[str], size: int) -> tuple[dict[str, Any], memoryview]:
    """The index's JSON head and the bytes after it (of the first ``size`` bytes; -1: all)."""
    path = Path(catalog_dir) / INDEX
    if size < 0:
        data = read_back(path, MAX_INDEX_BYTES)
    else:
        with os.fdopen(open_back(path), "rb") as fh:
            data = fh.read(size)
    end = data.find(b"\n")
    if end < 0:
        raise ValueError("no head")
    head = loads_back(data[:end])
    rest = memoryview(data)[end + 1 :]
    if not isinstance(head, dict) or not isinstance(head.get("generation"), int):
        raise ValueError("no generation")
    return head, rest


def read_index(catalog_dir: str | os.PathLike[str]) -> Index | None:
    """The index written with the manifest files that are there, or None when there is none
    or it belongs to others. With no manifest at all: generation 0, no rows."""
    stamps = _stamps(catalog_dir)
    if not stamps:
        return Index()
    try:
        head, body = _read_head(catalog_dir, -1)
        where, rows = head.get("columns"), head.get("rows")
        if head.get("files") != stamps or not isinstance(head.get("next_row"), int):
            return None
        if not isinstance(where, dict) or set(where) != set(INDEX_COLUMNS):
            return None
        if not isinstance(rows, int) or sum(where[n][1] for n in where) != len(body):
            return None
        columns = _Columns(body, where)
        return Index(head["generation"], head["next_row"], columns, rows, stamps)
    except (OSError, ValueError, TypeError, AttributeError, IndexError):
        return None


def still_current(catalog_dir: str | os.PathLike[str], index: Index) -> bool:
    """Whether ``index`` is of the manifest files there now (no import wrote since)."""
    return index.files is not None and index.files == _stamps(catalog_dir)


def load_index(catalog_dir: str | os.PathLike[str]) -> Index:
    """:func:`read_index`, or the index made again from the manifest files (pyarrow)."""
    index = read_index(catalog_dir)
    if index is not None:
        return index
    return Index.of_table(read_manifest(catalog_dir), current_generation(catalog_dir))


def _head_generation(catalog_dir: str | os.PathLike[str]) -> int | None:
    """The generation from the index's head, when it belongs to the manifest files that are
    there (the cheat sheet's cache key asks it on every run: the body is not read); None when
    that cannot be told from it."""
    stamps = _stamps(catalog_dir)
    try:
        head, _ = _read_head(catalog_dir, 64 * 1024)
    except (OSError, ValueError, TypeError):
        return None
    if not stamps or head.get("files") != stamps:
        return None
    return int(head["generation"])


def current_generation(catalog_dir: str | os.PathLike[str]) -> int:
    """The generation of the manifest as last written (0: none yet)."""
    head = _head_generation(catalog_dir)
    if head is not None:
        return head
    import pyarrow.parquet as pq

    generation = 0
    for path in manifest_files(catalog_dir):
        meta = pq.read_schema(path).metadata or {}
        raw = meta.get(GENERATION_KEY)
        if raw is not None and raw.isdigit():
            generation = max(generation, int(raw))
    return generation


# --- writing -------------------------------------------------------------------------------


def _parquet(table: pa.Table, generation: int) -> bytes:
    import io

    import pyarrow.parquet as pq

    want = schema()
    table = _conform(table).select(want.names)
    if not table.schema.equals(want):  # (rows_table's are: a cast loads pyarrow.compute)
        table = table.cast(want)
    table = table.replace_schema_metadata({GENERATION_KEY: str(generation).encode()})
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd")
    return buf.getvalue()


def _place(folder: Path, name: str, data: bytes) -> None:
    """``data`` as ``folder/name``: temp file, fsync, rename, fsync the folder."""
    from netfleet.durable import fsync_dir

    tmp = write_temp(folder, data, prefix=TEMP_PREFIX, suffix=".parquet")
    try:
        os.chmod(tmp, 0o644)  # read by the query engines as the catalog's other files are
        os.replace(tmp, folder / name)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(folder)


def write_index(folder: Path, index: Index) -> None:
    """The stat index of the manifest files there (the caller holds the catalog's lock)."""
    data = _encode_index(index.live(), _stamps(folder))
    atomic_write(folder / INDEX, data, prefix=TEMP_PREFIX)
    (folder / "_manifest_index.json").unlink(missing_ok=True)  # the index's earlier form


def _with_ids(rows: pa.Table, first: int) -> pa.Table:
    """``rows`` with a ``row_id`` for each row that has none (``first``, ``first + 1``...)."""
    import pyarrow as pa

    rows = _conform(rows)
    if not rows.column("row_id").null_count:  # (every row has one: no Python per row)
        return rows
    ids = rows.column("row_id").to_pylist()
    taken = {r for r in ids if r is not None}
    fresh = iter(range(max(max(taken) + 1, first) if taken else first, 1 << 62))
    filled = [r if r is not None else next(fresh) for r in ids]
    at = rows.column_names.index("row_id")
    return rows.set_column(at, "row_id", pa.array(filled, pa.int64()))


def write_manifest(
    catalog_dir: str | os.PathLike[str],
    rows: pa.Table,
    generation: int,
    index: Index | None = None,
) -> Path:
    """Replace the manifest with ``rows`` (conformed to :func:`schema`; rows without a
    ``row_id`` are given one) at ``generation``: the base written again, the segments gone.
    ``index``: the stat index of those rows when the caller has it (else made of them)."""
    folder = Path(catalog_dir)
    table = _with_ids(rows, 0)
    _place(folder, MANIFEST, _parquet(table, generation))
    for path in segment_paths(folder):  # their rows' last versions are in the base now
        path.unlink(missing_ok=True)
    write_index(folder, index if index is not None else Index.of_table(table, generation))
    return folder / MANIFEST


def write_changes(
    catalog_dir: str | os.PathLike[str],
    changed: pa.Table,
    index: Index,
    generation: int,
    manifest: pa.Table | None = None,
) -> None:
    """Write one import's rows — ``changed``: new rows and new versions of rows (by
    ``row_id``), every one of ``generation``; ``index`` the stat index once they are in it —
    as a segment when the base is large, else the whole manifest again. ``manifest``: the
    manifest as :func:`read_manifest` gave it, when the caller read it already."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = Path(catalog_dir)
    index.generation = generation
    files = manifest_files(folder)
    segments = files[1:]
    base_rows = 0
    if files:
        meta = pq.read_metadata(files[0])
        has_ids = "row_id" in meta.schema.names
        base_rows = meta.num_rows if has_ids else 0
    extra = changed.num_rows + sum(pq.read_metadata(p).num_rows for p in segments)
    if (
        base_rows >= SEGMENT_MIN_ROWS
        and len(segments) < MAX_SEGMENTS
        and extra <= base_rows * COMPACT_SHARE
    ):
        segments_dir = _segments_dir(folder)
        segments_dir.mkdir(exist_ok=True)
        _place(segments_dir, _segment_name(generation), _parquet(changed, generation))
        write_index(folder, index)
        return
    old = read_manifest(folder) if manifest is None else manifest
    if old.num_rows:
        ids = set(changed.column("row_id").to_pylist())
        keep = [r not in ids for r in old.column("row_id").to_pylist()]
        old = old.filter(pa.array(keep, pa.bool_()))
        changed = pa.concat_tables([old, _conform(changed)], promote_options="default")
        changed = changed.sort_by("row_id")  # the rows in the order they were made
    write_manifest(folder, changed, generation, index)


def rows_table(rows: list[dict[str, Any]]) -> pa.Table:
    """Manifest rows (dicts keyed by column; missing keys are null) as a table."""
    import pyarrow as pa

    want = schema()
    return pa.Table.from_pydict(
        {name: [row.get(name) for row in rows] for name in want.names}, schema=want
    )
