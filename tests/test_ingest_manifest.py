"""An ingested envelope gets a manifest row (issue 34): one rule decides what is already in for
``ingest`` and ``register`` (the manifest's stat rule), one provenance story (``netfleet
verify`` hashes an ingested envelope as it does a file held by reference), and the
by-reference readers keep to the files held by reference."""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from pathlib import Path

import pytest

from netfleet import api
from netfleet.analysis.sources import catalog_documents, registered_documents
from netfleet.catalog import connect, ingest
from netfleet.catalog.lazystreams import manifest_runs
from netfleet.catalog.manifest import INGESTED, read_manifest
from netfleet.store.root import ResultsRoot
from tests.test_catalog import NAMES, populate

FIX = Path(__file__).parent / "fixtures" / "import"


def _aged(root: ResultsRoot) -> None:
    """Every envelope written a while ago (one written in the last 2 s is read again: racy)."""
    past = time.time_ns() - 10**10
    for path in root.files():
        os.utime(path, ns=(past, past))


def _rows(catalog: Path) -> dict[str, dict[str, object]]:
    return {row["source"]: row for row in read_manifest(catalog).to_pylist()}


@pytest.fixture
def ingested(tmp_path: Path) -> tuple[ResultsRoot, Path]:
    root = ResultsRoot(tmp_path / "raw")
    populate(root, NAMES[:4])
    _aged(root)
    catalog = tmp_path / "cat"
    report = ingest(root, catalog)
    assert (report.ingested, report.bad) == (4, [])
    return root, catalog


def test_each_ingested_envelope_has_its_manifest_row(ingested: tuple[ResultsRoot, Path]) -> None:
    root, catalog = ingested
    rows = _rows(catalog)
    files = sorted(root.files())
    assert sorted(rows) == [str(p.resolve()) for p in files]  # source = its raw path
    con = connect(catalog)
    try:
        runs = dict(con.execute("SELECT run_id, source FROM runs").fetchall())
    finally:
        con.close()
    for path in files:
        row = rows[str(path.resolve())]
        st = path.stat()
        assert row["file_id"] == hashlib.sha256(path.read_bytes()).hexdigest()
        assert (row["size"], row["mtime_ns"], row["inode"]) == (
            st.st_size,
            st.st_mtime_ns,
            st.st_ino,
        )
        assert (row["state"], row["asked"], row["campaign"]) == ("ok", INGESTED, "camp")
        assert runs[row["run_id"]] == str(path)  # the run's rows trace back to the row's file


def test_verify_checks_ingested_envelopes(ingested: tuple[ResultsRoot, Path]) -> None:
    root, catalog = ingested
    assert api.verify(catalog=catalog).ok == 4
    first, second, *_ = sorted(root.files())
    st = first.stat()
    data = bytearray(first.read_bytes())
    data[-9] ^= 0xFF  # other bytes (the gzip's CRC), same size, same inode, times put back
    with open(first, "r+b") as fh:
        fh.write(data)
    os.utime(first, ns=(st.st_atime_ns, st.st_mtime_ns))
    second.unlink()
    report = api.verify(catalog=catalog)
    assert report.ok == 2
    assert [source for source, _ in report.corrupt] == [str(first.resolve())]
    assert report.missing == [str(second.resolve())]


def test_already_in_is_the_manifests_rule(ingested: tuple[ResultsRoot, Path]) -> None:
    """A file whose stat is its row's is not opened (a damaged one stays unread: verify's to
    find); a touched one is read again and its row refreshed; a copy of a run under another
    name is read, its run found in the catalog; a file gone is marked missing, its run kept."""
    root, catalog = ingested
    first, second, third, fourth = sorted(root.files())
    st = first.stat()
    with open(first, "r+b") as fh:  # not a gzip any more, under the same stat
        fh.write(b"\0" * st.st_size)
    os.utime(first, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.utime(second, ns=(time.time_ns() - 5 * 10**9,) * 2)  # touched: same bytes
    copy = third.with_name("copy-of-a-run.json.gz")
    shutil.copyfile(third, copy)
    os.utime(copy, ns=(time.time_ns() - 5 * 10**9,) * 2)
    fourth.unlink()
    report = ingest(root, catalog)
    assert (report.seen, report.ingested, report.skipped, report.bad) == (4, 0, 4, [])
    rows = _rows(catalog)
    assert rows[str(second.resolve())]["mtime_ns"] == second.stat().st_mtime_ns
    assert rows[str(copy.resolve())]["run_id"] == rows[str(third.resolve())]["run_id"]
    assert rows[str(fourth.resolve())]["state"] == "missing"
    con = connect(catalog)
    try:
        assert con.execute("SELECT count(*) FROM runs").fetchone() == (4,)
    finally:
        con.close()
    # nothing changed since: decided from the manifest's index, nothing read
    again = ingest(root, catalog)
    assert (again.seen, again.ingested, again.skipped, again.bad) == (4, 0, 4, [])


def test_by_reference_readers_keep_to_files_held_by_reference(
    ingested: tuple[ResultsRoot, Path], tmp_path: Path
) -> None:
    """In a catalog holding ingested envelopes and a file registered by reference, the
    by-reference readers list the registered file only; an ingested run is read from its
    envelope, the registered one from its file; the envelopes' per-stream rows stay queried."""
    _, catalog = ingested
    foreign = tmp_path / "foreign.json"
    shutil.copyfile(FIX / "v3_12_tcp.client.json", foreign)
    assert api.register([str(foreign)], catalog=catalog).bad == []
    held = manifest_runs(catalog)
    assert [run.source for run in held] == [str(foreign.resolve())]
    con = connect(catalog, streams=True)  # the registered file's built, the envelopes' stored
    try:
        ids = [r for (r,) in con.execute("SELECT run_id FROM runs ORDER BY run_id").fetchall()]
        per_run = dict(
            con.execute("SELECT run_id, count(*) FROM streams GROUP BY run_id").fetchall()
        )
        stored = con.execute("SELECT count(*) FROM intervals_eager WHERE kind = 'stream'")
        eager = stored.fetchone()
    finally:
        con.close()
    assert held[0].run_id in per_run
    assert eager is not None and eager[0] > 0
    assert sum(n for run, n in per_run.items() if run != held[0].run_id) == eager[0]  # once
    docs, problems = catalog_documents(catalog, ids)
    assert problems == []
    where = sorted(source for _, source in docs)
    assert str(foreign.resolve()) in where and len(where) == 5
    assert [d["run_id"] for d in registered_documents(catalog)] == [held[0].run_id]
