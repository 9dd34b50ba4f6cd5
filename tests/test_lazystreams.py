"""Per-stream rows served from the registered files (netfleet.catalog.lazystreams): the same rows
an eager ingest of the same files gives, on demand or built into parts keyed by the files'
SHA-256; a changed file is an error naming it; a built part is never stale; queries that name
streams get them."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import netfleet.api
from netfleet.catalog import lazystreams as ls
from netfleet.catalog import lazystreams_build as lb
from netfleet.catalog.ingestion import ingest
from netfleet.catalog.query import needs_streams, query
from netfleet.catalog.views import connect
from netfleet.errors import CatalogError
from netfleet.store import ResultsRoot
from netfleet.store.imports import import_files
from tests.lazykit import (
    FIX,
    SOURCES,
    copy_sources,
    eager_catalog,
    lazy_copy,
    manifest_rows,
    sorted_rows,
    write_manifest,
)

STREAMS = "SELECT * FROM intervals WHERE kind = 'stream'"


@pytest.fixture
def catalogs(tmp_path: Path) -> tuple[Path, Path]:
    eager = eager_catalog(tmp_path, copy_sources(tmp_path))
    return eager, lazy_copy(eager, tmp_path / "lazy")


def rows_of(catalog: Path, sql: str = STREAMS, **kw: object) -> list[tuple[object, ...]]:
    con = connect(catalog, **kw)  # type: ignore[arg-type]
    try:
        return sorted_rows(con.execute(sql).to_arrow_table())
    finally:
        con.close()


def test_built_streams_are_the_rows_eager_ingest_gives(catalogs: tuple[Path, Path]) -> None:
    eager, lazy = catalogs
    expected = rows_of(eager)
    assert len(expected) > 200  # iperf3 client+server, iperf 2 threads, public outputs
    assert rows_of(lazy, "SELECT count(*) FROM intervals WHERE kind = 'stream'") == [(0,)]
    ticks: list[tuple[int, int]] = []
    assert rows_of(lazy, streams=True, progress=lambda d, t: ticks.append((d, t))) == expected
    assert rows_of(lazy, "SELECT * FROM streams", streams=True) == expected
    total = len(manifest_rows(eager))
    assert ticks[0] == (0, total) and ticks[-1] == (total, total)
    parts = list((lazy / "streams").glob("part-*.parquet"))
    assert len(parts) == 1 and set(lb.part_files(parts[0])) == {
        r["file_id"] for r in manifest_rows(eager)
    }
    # the second time reads the part: the files are not opened again
    sources = lazy.parent / "src"
    sources.rename(lazy.parent / "away")
    try:
        assert rows_of(lazy, streams=True) == expected
    finally:
        (lazy.parent / "away").rename(sources)
    # sums are untouched by it
    sums = "SELECT * FROM intervals WHERE kind <> 'stream'"
    assert rows_of(lazy, sums, streams=True) == rows_of(eager, sums)


def test_one_runs_streams_on_demand(catalogs: tuple[Path, Path]) -> None:
    eager, lazy = catalogs
    runs = {r["run_id"]: r for r in manifest_rows(eager)}
    run_id = next(r for r in runs if "v3_18_tcp.client" in str(runs[r]["source"]))
    sql = f"SELECT * FROM streams WHERE run_id = '{run_id}'"
    expected = rows_of(eager, sql)
    assert expected and rows_of(lazy, sql, streams=[run_id]) == expected
    assert not (lazy / "streams").exists()  # served from the file, nothing built
    # only the runs asked for
    assert rows_of(lazy, "SELECT DISTINCT run_id FROM streams", streams=[run_id]) == [(run_id,)]
    # once built, a run asked for is read from the parts, not from its file
    lb.ensure_streams(lazy, ls.manifest_runs(lazy))
    sources = lazy.parent / "src"
    sources.rename(lazy.parent / "away")
    try:
        assert rows_of(lazy, sql, streams=[run_id]) == expected
    finally:
        (lazy.parent / "away").rename(sources)


def test_a_changed_file_is_an_error_naming_it(catalogs: tuple[Path, Path]) -> None:
    eager, lazy = catalogs
    row = next(r for r in manifest_rows(eager) if "v3_12_tcp.client" in str(r["source"]))
    source = Path(str(row["source"]))
    source.write_bytes(source.read_bytes().replace(b'"bytes":', b'"bytes": ', 1))
    for streams in (True, [row["run_id"]]):
        with pytest.raises(CatalogError, match="changed since it was imported") as caught:
            connect(lazy, streams=streams)  # type: ignore[arg-type]
        assert str(source) in caught.value.message and "import again" in str(caught.value.hint)
    assert not list((lazy / "streams").glob("part-*"))  # nothing partial on disk
    source.unlink()
    with pytest.raises(CatalogError, match="cannot read the registered file"):
        connect(lazy, streams=[row["run_id"]])  # type: ignore[list-item]
    # the copy --keep-copy made stands in for a source gone or changed
    kept = lazy.parent / "kept.json"
    original = next(p for p in SOURCES if p.name == source.name.split("-", 1)[1])
    kept.write_bytes(original.read_bytes())
    rows = manifest_rows(eager)
    for r in rows:
        r["kept"] = str(kept) if r["run_id"] == row["run_id"] else None
    write_manifest(lazy, rows)
    sql = f"SELECT * FROM streams WHERE run_id = '{row['run_id']}'"
    assert rows_of(lazy, sql, streams=[row["run_id"]]) == rows_of(eager, sql) != []


def test_parts_are_never_stale(
    catalogs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    eager, lazy = catalogs
    rows = manifest_rows(eager)
    monkeypatch.setattr(lb, "PART_FILES", 16)  # several partitions, one pool of workers
    lb.ensure_streams(lazy, ls.manifest_runs(lazy), workers=2)
    assert len(list((lazy / "streams").glob("part-*.parquet"))) == -(-len(rows) // 16)
    # one file retires, another one's run is relabelled (a new run id for the same bytes)
    with_streams = {r[0] for r in rows_of(eager, "SELECT DISTINCT run_id FROM streams")}
    retired, moved = [r for r in rows if r["run_id"] in with_streams][:2]
    old = rows_of(
        eager, f"SELECT * EXCLUDE (run_id) FROM streams WHERE run_id = '{moved['run_id']}'"
    )
    retired["state"] = "retired"
    moved["run_id"] = "import-relabelled"
    write_manifest(lazy, rows)
    got = rows_of(lazy, "SELECT DISTINCT run_id FROM streams", streams=True)
    assert (retired["run_id"],) not in got and ("import-relabelled",) in got
    new = rows_of(
        lazy,
        "SELECT * EXCLUDE (run_id) FROM streams WHERE run_id = 'import-relabelled'",
        streams=True,
    )
    assert new == old and old
    # the folder holds the current files only, each once
    covered: dict[str, str] = {}
    for part in (lazy / "streams").glob("part-*.parquet"):
        files = lb.part_files(part)
        assert not set(files) & set(covered)
        covered.update(files)
        table = pq.read_table(part)
        assert set(table.column("file_id").to_pylist()) <= set(files)
    live = {str(r["file_id"]): str(r["run_id"]) for r in rows if r["state"] == "ok"}
    assert covered == live
    # a damaged part is not read: it is rebuilt
    before = rows_of(lazy, streams=True)
    part = next((lazy / "streams").glob("part-*.parquet"))
    part.write_bytes(b"not parquet")
    assert rows_of(lazy, streams=True) == before
    assert not part.exists() or lb.part_files(part)


def test_queries_that_name_streams_get_them(catalogs: tuple[Path, Path]) -> None:
    eager, lazy = catalogs
    for sql in (
        "SELECT count(*) FROM streams",
        "SELECT count(*) FROM intervals WHERE kind = 'stream'",
        "SELECT count(DISTINCT stream_id) FROM intervals",
    ):
        assert needs_streams(sql)
        assert query(lazy, sql).rows == query(eager, sql).rows
        assert query(lazy, sql).rows[0][0] > 0
    assert not needs_streams("WITH streams AS (SELECT 1) SELECT * FROM runs")
    assert not needs_streams("SELECT parallel FROM runs")
    # not asked: no streams view, and intervals holds the sums only
    with pytest.raises(CatalogError, match="streams"):
        query(lazy, "SELECT count(*) FROM streams", streams=False)
    assert query(
        lazy, "SELECT count(*) FROM intervals WHERE kind = 'stream'", streams=False
    ).rows == [[0]]
    # netfleet sql --streams-of RUN: that run's rows only, read from its file, nothing built
    run_id = manifest_rows(eager)[0]["run_id"]
    sql = f"SELECT count(*) FROM streams WHERE run_id = '{run_id}'"
    got = netfleet.api.sql(sql, catalog=lazy, streams_of=[str(run_id)])
    assert got.rows == query(eager, sql).rows
    assert netfleet.api.sql("SELECT count(DISTINCT run_id) FROM streams", catalog=lazy,
                            streams_of=[str(run_id)]).rows[0][0] <= 1  # fmt: skip
    # the manifest is a view, for provenance
    assert query(lazy, "SELECT count(*) FROM manifest").rows == [[len(manifest_rows(eager))]]


def test_netfleet_sql_loads_them_and_prints_only_the_answer(catalogs: tuple[Path, Path]) -> None:
    eager, lazy = catalogs
    sql = "SELECT count(*) AS n FROM streams"
    argv = [sys.executable, "-m", "netfleet", "sql", "--format", "csv", "--catalog"]
    got = subprocess.run([*argv, str(lazy), sql], capture_output=True, text=True, check=True)
    assert got.stdout == f"n\n{query(eager, sql).rows[0][0]}\n"  # no progress bar in it
    refused = subprocess.run(
        [*argv, str(lazy), "--no-streams", sql], capture_output=True, text=True
    )
    assert refused.returncode == 2 and "streams" in refused.stderr


def test_a_background_build_covers_every_file(catalogs: tuple[Path, Path]) -> None:
    eager, lazy = catalogs
    proc = lb.start_background(lazy)
    assert proc is not None
    try:
        assert proc.wait(timeout=120) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    parts = list((lazy / "streams").glob("part-*.parquet"))
    covered = {f for p in parts for f in lb.part_files(p)}
    assert covered == {str(r["file_id"]) for r in manifest_rows(eager)}
    assert not [p for p in (lazy / "streams").iterdir() if p.name.startswith(".tmp-")]
    start = time.monotonic()
    assert rows_of(lazy, streams=True) == rows_of(eager)
    assert time.monotonic() - start < 60
    assert lb.start_background(eager) is None  # no file by reference: nothing to build


def test_netfleet_envelopes_registered_by_reference(tmp_path: Path) -> None:
    """A manifest may name netfleet's own envelopes: their rows are read as ingest reads them."""
    eager = eager_catalog(tmp_path, copy_sources(tmp_path, SOURCES[:6]))
    lazy = lazy_copy(eager, tmp_path / "lazy")
    rows = manifest_rows(eager)
    for row in rows:
        envelope = next((tmp_path / "raw").rglob(f"{row['run_id']}.json.gz"))
        row["source"] = str(envelope)
        row["file_id"] = hashlib.sha256(envelope.read_bytes()).hexdigest()
    write_manifest(lazy, rows)
    expected = rows_of(eager)
    assert expected and rows_of(lazy, streams=True) == expected


def test_the_side_the_import_was_told(tmp_path: Path) -> None:
    """An iperf 2 CSV says neither side: imported with --side server, its streams are the
    server's, lazily too (the manifest's ``asked``)."""
    plain = tmp_path / "src" / "tcp.txt"  # no side in the name
    plain.parent.mkdir()
    plain.write_bytes((FIX / "iperf2" / "tcp_csv.server.txt").read_bytes())
    root = ResultsRoot(tmp_path / "raw")
    assert import_files([str(plain.resolve())], root, side="server").bad == []
    assert ingest(root, tmp_path / "eager").bad == []
    lazy = lazy_copy(tmp_path / "eager", tmp_path / "lazy")
    rows = manifest_rows(tmp_path / "eager")
    sides = "SELECT DISTINCT side FROM streams"
    assert rows_of(tmp_path / "eager", sides) == [("server",)]
    assert rows_of(lazy, sides, streams=True) == [("client",)]  # not told: auto
    for row in rows:
        row["asked"] = json.dumps({"labels": {}, "pattern": None, "side": "server"})
    write_manifest(lazy, rows)
    shutil.rmtree(lazy / "streams")
    assert rows_of(lazy, streams=True) == rows_of(tmp_path / "eager")


def test_files_imported_by_reference_give_the_eager_streams(tmp_path: Path) -> None:
    """End to end with the import by reference (``netfleet import --catalog``, once it is
    there): every fixture registered, its per-stream rows made lazily equal those an eager
    ingest of the same files' envelopes gives (run ids aside: the two imports name runs
    differently)."""
    files = copy_sources(tmp_path)
    eager = eager_catalog(tmp_path, files, labels=False)
    report = netfleet.api.register([str(f) for f in files], catalog=tmp_path / "ref")
    assert not report.bad

    def without_run_id(rows: list[tuple[object, ...]]) -> list[tuple[object, ...]]:
        return sorted((r[1:] for r in rows), key=repr)

    lazy = rows_of(tmp_path / "ref", streams=True)
    assert len(lazy) > 200 and without_run_id(lazy) == without_run_id(rows_of(eager))


def test_sources_on_s3(tmp_path: Path) -> None:
    """``s3://bucket/key`` sources (moto's server on loopback): read once each, checked, the
    same rows; an object changed since is named."""
    from netfleet import aws
    from tests.motokit import moto_server

    eager = eager_catalog(tmp_path, copy_sources(tmp_path, SOURCES[:8]))
    lazy = lazy_copy(eager, tmp_path / "lazy")
    rows = manifest_rows(eager)
    with moto_server():
        s3 = aws.client("s3", region="us-east-1")
        s3.create_bucket(Bucket="raw")
        for n, row in enumerate(rows):
            key = f"files/{n}-{Path(str(row['source'])).name}"
            s3.put_object(Bucket="raw", Key=key, Body=Path(str(row["source"])).read_bytes())
            row.update(source=f"s3://raw/{key}", mtime_ns=None, inode=None, etag="x")
        write_manifest(lazy, rows)
        assert rows_of(lazy, streams=True) == rows_of(eager)
        shutil.rmtree(lazy / "streams")  # built parts would serve the registered bytes' rows
        changed = str(rows[0]["source"]).removeprefix("s3://raw/")
        s3.put_object(Bucket="raw", Key=changed, Body=b"{}")
        with pytest.raises(CatalogError, match="changed since it was imported"):
            connect(lazy, streams=[str(rows[0]["run_id"])])
        s3.delete_object(Bucket="raw", Key=changed)
        with pytest.raises(CatalogError, match="cannot read the registered object"):
            connect(lazy, streams=[str(rows[0]["run_id"])])


def test_a_stream_rate_no_link_can_carry(tmp_path: Path) -> None:
    """Import by reference does not decode per-stream entries, so it registers a file whose
    stream claims 1e308 bit/s: its rows are made all the same, and the ``intervals`` and
    ``streams`` views leave the impossible one out (``intervals_stored`` has it)."""
    doc = json.loads((FIX / "v3_12_tcp.client.json").read_text())
    doc["intervals"][1]["streams"][0]["bits_per_second"] = 1e308
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(doc))
    report = netfleet.api.register([str(forged)], catalog=tmp_path / "c")
    assert not report.bad
    con = connect(tmp_path / "c", streams=True)
    try:
        stored = con.execute(
            "SELECT count(*) FROM intervals_stored WHERE kind = 'stream'"
        ).fetchone()
        shown = con.execute("SELECT count(*) FROM streams").fetchone()
        worst = con.execute("SELECT max(bits_per_second) FROM streams").fetchone()
    finally:
        con.close()
    assert stored and shown and worst
    assert stored[0] == shown[0] + 1 and worst[0] < 1e12
