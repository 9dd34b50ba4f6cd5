"""A catalog whose per-stream rows are lazy, made from captured fixtures: the files are
imported and ingested as today (the *eager* catalog, every row), then a copy keeps the sums only
and registers the files in ``manifest.parquet`` by the import's contract (file_id = SHA-256 of
the bytes, absolute source path, run_id, state ``ok``) — what import by reference leaves."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from netfleet.catalog import manifest
from netfleet.catalog.ingestion import ingest
from netfleet.store import ResultsRoot
from netfleet.store.imports import import_files

TESTS = Path(__file__).parent
FIX = TESTS / "fixtures" / "import"
#: iperf3 client and server files (3.12, 3.18, --json-stream), iperf 2 text and CSV, public
#: outputs (incl. errors, -O 3)
SOURCES = [
    *sorted(p for p in FIX.glob("*.json") if p.name != "MANIFEST.json"),
    *sorted((FIX / "iperf2").glob("*.txt")),
    *sorted((TESTS / "fixtures" / "public").glob("*.json")),
]


def copy_sources(tmp_path: Path, sources: list[Path] = SOURCES) -> list[Path]:
    out = tmp_path / "src"
    out.mkdir()
    copies = []
    for path in sources:
        copy = out / f"{path.parent.name}-{path.name}"
        shutil.copyfile(path, copy)
        copies.append(copy.resolve())
    return copies


def eager_catalog(tmp_path: Path, files: list[Path], labels: bool = True) -> Path:
    root = ResultsRoot(tmp_path / "raw")
    for i, path in enumerate(files):
        kind = "m5.large" if i % 2 else "c5.xlarge"
        extra = [f"instance_type={kind}"] if labels else []
        assert import_files([str(path)], root, labels=extra).bad == []
    catalog = tmp_path / "eager"
    assert ingest(root, catalog).bad == []
    return catalog


def manifest_rows(catalog: Path) -> list[dict[str, object]]:
    con = duckdb.connect()
    got = con.execute(
        f"SELECT run_id, labels, notes FROM read_parquet('{catalog}/runs/*.parquet')"
    ).fetchall()
    rows = []
    for run_id, labels, notes in got:
        imported = json.loads(notes)["imported"]
        path = Path(imported["from"])
        info = path.stat() if path.exists() else None  # a file deleted since: no stat
        rows.append(
            {
                "file_id": imported["sha256"],
                "source": str(path),
                "size": info and info.st_size,
                "mtime_ns": info and info.st_mtime_ns,
                "inode": info and info.st_ino,
                "etag": None,
                "run_id": run_id,
                "generation": 1,
                "state": "ok",
                "reason": None,
                "labels": labels,
                "campaign": "imported",
                "format": json.loads(notes)["imported"].get("format", "iperf3"),
            }
        )
    return rows


def write_manifest(catalog: Path, rows: list[dict[str, object]]) -> None:
    """By the contract's own writer (``netfleet.catalog.manifest``), one generation more; a
    column the contract does not have yet (``asked``) is appended by pyarrow."""
    table = manifest.rows_table(rows)
    extra = sorted({k for r in rows for k in r} - set(table.column_names))
    if not extra:
        generation = manifest.current_generation(catalog) + 1
        manifest.write_manifest(catalog, table, generation)
        return
    for name in extra:
        table = table.append_column(name, pa.array([r.get(name) for r in rows], pa.string()))
    pq.write_table(table, catalog / manifest.MANIFEST)


def lazy_copy(eager: Path, out: Path) -> Path:
    """The eager catalog without its per-stream rows, plus the manifest of its files."""
    shutil.copytree(eager, out, ignore=shutil.ignore_patterns("_sheets", ".lock"))
    for part in (out / "intervals").glob("part-*.parquet"):
        table = pq.read_table(part)
        pq.write_table(table.filter(pc.not_equal(table.column("kind"), "stream")), part)
    write_manifest(out, manifest_rows(eager))
    return out


def sorted_rows(table: pa.Table) -> list[tuple[object, ...]]:
    names = [n for n in table.column_names if n != "file_id"]
    rows = zip(*(table.column(n).to_pylist() for n in names), strict=True)
    return sorted(rows, key=repr)
