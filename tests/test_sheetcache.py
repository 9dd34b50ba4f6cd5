"""A cheat sheet read back from the catalog's cache is exactly the computed one, and it is
never stale: a new batch, a touched part, another question or a free SQL filter compute it
again. The cache deletes only its own entries."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from netfleet.catalog import cheatsheet as cheatsheet_module
from netfleet.catalog import ingest
from netfleet.catalog.cheatsheet import cheatsheet_data
from netfleet.catalog.sheetcache import KEEP, SHEETS_DIR
from netfleet.store.root import ResultsRoot
from tests.test_catalog import NAMES, TYPES, make_envelope


@pytest.fixture
def catalog(tmp_path: Path) -> tuple[ResultsRoot, Path]:
    root = ResultsRoot(tmp_path / "raw")
    for n, name in enumerate(NAMES):
        root.write(make_envelope(name, f"run-{n}", labels={"instance_type": TYPES[n % 3]}))
    ingest(root, tmp_path / "cat")
    return root, tmp_path / "cat"


@pytest.fixture
def queries(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The side of every cheat sheet that really ran its query."""
    ran: list[str] = []
    query = cheatsheet_module._cheatsheet

    def counted(con, keys, side, *rest):  # type: ignore[no-untyped-def]
        ran.append(side)
        return query(con, keys, side, *rest)

    monkeypatch.setattr(cheatsheet_module, "_cheatsheet", counted)
    return ran


def test_the_same_question_is_read_back_without_duckdb(catalog: tuple[ResultsRoot, Path]) -> None:
    _, cat = catalog
    first = cheatsheet_data(cat, group_by=("instance_type",), side="sender")
    assert first.rows and len(list((cat / SHEETS_DIR).iterdir())) == 1
    probe = (
        "import sys, json\n"
        "from netfleet.catalog.cheatsheet import cheatsheet_data\n"
        "d = cheatsheet_data(sys.argv[1], group_by=('instance_type',), side='sender')\n"
        "doc = {name: getattr(d, name) for name in d.__slots__}\n"
        "print(json.dumps([doc, 'duckdb' in sys.modules, 'dataclasses' in sys.modules]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, str(cat)], capture_output=True, text=True, check=True
    )
    again, loaded_duckdb, loaded_dataclasses = json.loads(out.stdout)
    assert not loaded_duckdb and not loaded_dataclasses
    doc = {name: getattr(first, name) for name in first.__slots__}
    assert again == json.loads(json.dumps(doc))


def test_a_new_batch_or_a_touched_part_asks_again(
    catalog: tuple[ResultsRoot, Path], queries: list[str]
) -> None:
    root, cat = catalog
    before = cheatsheet_data(cat, group_by=(), side="sender")
    assert cheatsheet_data(cat, group_by=(), side="sender") == before
    assert queries == ["sender"]
    cheatsheet_data(cat, group_by=(), side="receiver")  # another question
    assert queries == ["sender", "receiver"]

    root.write(make_envelope("tcp_p2", "run-new", labels={"instance_type": "new"}))
    ingest(root, cat)
    after = cheatsheet_data(cat, group_by=(), side="sender")
    # a new batch: the kept tally and the batch's runs, no query (netfleet.catalog.sheetstate)
    assert len(queries) == 2
    assert after.runs == before.runs + 1 and after.rows != before.rows

    part = next((cat / "intervals").glob("part-*.parquet"))
    os.utime(part, ns=(part.stat().st_atime_ns, part.stat().st_mtime_ns + 1))
    touched = cheatsheet_data(cat, group_by=(), side="sender")
    assert queries[-1] == "sender" and len(queries) == 3
    assert touched.runs == after.runs and len(touched.rows) == len(after.rows)


def test_an_answer_is_not_kept_when_a_batch_commits_while_it_is_computed(
    catalog: tuple[ResultsRoot, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The views were opened before the batch committed: the answer may lack it, so it must
    not be filed under the catalog's new state (nor its old one, which can come back only by
    deleting parts by hand)."""
    root, cat = catalog
    query = cheatsheet_module._cheatsheet

    def with_an_ingest_meanwhile(*args):  # type: ignore[no-untyped-def]
        answer = query(*args)
        root.write(make_envelope("tcp_p2", "run-meanwhile", labels={"instance_type": "x"}))
        ingest(root, cat)
        return answer

    monkeypatch.setattr(cheatsheet_module, "_cheatsheet", with_an_ingest_meanwhile)
    during = cheatsheet_data(cat, group_by=())
    assert not (cat / SHEETS_DIR).exists()
    monkeypatch.setattr(cheatsheet_module, "_cheatsheet", query)
    assert cheatsheet_data(cat, group_by=()).runs == during.runs + 1


def test_free_sql_filters_are_never_kept(
    catalog: tuple[ResultsRoot, Path], queries: list[str]
) -> None:
    _, cat = catalog
    for _ in range(2):
        cheatsheet_data(cat, group_by=(), where="started_at < now()")
    assert queries == ["receiver", "receiver"]
    assert not (cat / SHEETS_DIR).exists()
    for _ in range(2):  # an exact filter is kept
        cheatsheet_data(cat, group_by=(), where={"instance_type": TYPES[0]})
    assert len(queries) == 3


def test_a_damaged_entry_is_computed_again_and_rewritten(
    catalog: tuple[ResultsRoot, Path], queries: list[str]
) -> None:
    _, cat = catalog
    good = cheatsheet_data(cat)
    [entry] = (cat / SHEETS_DIR).iterdir()
    doc = json.loads(entry.read_text())
    damaged = ["{not json", json.dumps({"rows": []}), json.dumps({**doc, "runs": "many"})]
    for text in damaged:
        entry.write_text(text)
        assert cheatsheet_data(cat) == good
    assert len(queries) == 1 + len(damaged)
    assert cheatsheet_data(cat) == good and len(queries) == 1 + len(damaged)  # rewritten


def test_pruning_deletes_only_its_own_oldest_entries(
    catalog: tuple[ResultsRoot, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, cat = catalog
    monkeypatch.setattr("netfleet.catalog.sheetcache.KEEP", 2)
    folder = cat / SHEETS_DIR
    folder.mkdir()
    foreign = folder / "notes.txt"
    foreign.write_text("mine")
    outside = cat.parent / "outside.json"
    outside.write_text("keep")
    (folder / f"sheet-{'0' * 64}.json").symlink_to(outside)
    for unit in ("gbit", "mbit", "kbit"):
        cheatsheet_data(cat, unit=unit)
    ours = sorted(p.name for p in folder.iterdir() if p.is_file() and not p.is_symlink())
    assert len([n for n in ours if n.startswith("sheet-")]) == 2
    assert foreign.read_text() == "mine" and outside.read_text() == "keep"
    assert KEEP >= 2


def test_a_linked_sheets_folder_is_neither_read_nor_written_through(
    catalog: tuple[ResultsRoot, Path], tmp_path: Path, queries: list[str]
) -> None:
    _, cat = catalog
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (cat / SHEETS_DIR).symlink_to(elsewhere)
    for _ in range(2):
        cheatsheet_data(cat)
    assert queries == ["receiver", "receiver"] and not list(elsewhere.iterdir())


def test_the_keys_are_hashlib_s_sha256_without_openssl() -> None:
    """The keys' SHA-256 (CPython's own module, not OpenSSL's ``_hashlib``) is hashlib's: the
    entries keep their names, and a no-op loads no OpenSSL (tests/test_oneproc.py)."""
    import hashlib

    from netfleet.catalog import sheetcache

    for data in (b"", b"netfleet", bytes(range(256)) * 300):
        assert sheetcache.sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
    assert sheetcache.sha256.__module__ in ("_sha256", "_sha2")
