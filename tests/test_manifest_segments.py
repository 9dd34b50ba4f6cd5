"""The manifest in segments (issue 26): an import that changes a few rows of a large manifest
writes only those rows; read back (pyarrow, DuckDB's view, the stat index) it is the manifest
written whole, through new, changed, touched and deleted files, compaction and crashes."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

import duckdb
import pytest

from netfleet.catalog import manifest
from netfleet.catalog.manifest import SEGMENTS, duck_view, read_index, read_manifest
from netfleet.catalog.register import register
from tests.test_import_reference import RUNS, _age

#: the columns compared (``checked_ns`` is when each catalog hashed the file)
SAME = ("row_id", "source", "state", "reason", "file_id", "run_id", "size",
        "generation", "labels", "file_keys", "asked")  # fmt: skip


def _rows(catalog: Path) -> list[tuple[Any, ...]]:
    table = read_manifest(catalog)
    return [tuple(r[c] for c in SAME) for r in table.to_pylist()]


def _duck(catalog: Path) -> list[tuple[Any, ...]]:
    con = duckdb.connect(":memory:")
    assert duck_view(con, catalog)
    found = con.execute(f"SELECT {', '.join(SAME)} FROM manifest ORDER BY row_id").fetchall()
    con.close()
    return [tuple(r) for r in found]


def _steps(src: Path) -> list[tuple[str, Any]]:
    """Import, add a file, change one's bytes, touch one, delete one (each then imported)."""
    first, second, third, fourth = (src / p.name for p in RUNS[:4])

    def add() -> None:
        shutil.copy(RUNS[5], src / RUNS[5].name)
        _age(src)

    def change() -> None:
        second.write_bytes(RUNS[6].read_bytes())
        _age(src)

    def touch() -> None:
        then = time.time_ns() - 30 * 10**9
        os.utime(third, ns=(then, then))

    return [("add", add), ("change", change), ("touch", touch), ("delete", fourth.unlink),
            ("again", lambda: None), ("first", first.unlink)]  # fmt: skip


def _twin(tmp_path: Path, name: str) -> Path:
    src = tmp_path / name
    src.mkdir()
    for f in RUNS[:4]:
        shutil.copy(f, src / f.name)
    _age(src)
    return src


def _segmented(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A folder of four files imported, and every later import writing a segment."""
    src = _twin(tmp_path, "src")
    cat = tmp_path / "cat"
    register([str(src)], cat)
    monkeypatch.setattr(manifest, "SEGMENT_MIN_ROWS", 0)
    monkeypatch.setattr(manifest, "COMPACT_SHARE", 100.0)
    return src, cat


def test_segments_read_back_as_the_manifest_written_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole_src, seg_src = _twin(tmp_path, "a"), _twin(tmp_path, "b")
    whole, seg = tmp_path / "whole", tmp_path / "seg"
    register([str(whole_src)], whole)
    register([str(seg_src)], seg)
    for (what, step_a), (_, step_b) in zip(_steps(whole_src), _steps(seg_src), strict=True):
        step_a()
        step_b()
        register([str(whole_src)], whole)
        with monkeypatch.context() as m:
            m.setattr(manifest, "SEGMENT_MIN_ROWS", 0)
            m.setattr(manifest, "COMPACT_SHARE", 100.0)
            report = register([str(seg_src)], seg)
        norm = [(r[0], r[1].replace("/b/", "/a/"), *r[2:]) for r in _rows(seg)]
        assert norm == _rows(whole), what
        assert _duck(seg) == _rows(seg), what
        index = read_index(seg)
        assert index is not None and index.generation == report.generation
        live = sorted(tuple(r[c] for c in ("row_id", "state")) for r in index.rows())
        assert live == sorted((r[0], r[2]) for r in _rows(seg) if r[2] != "retired"), what
    assert len(os.listdir(seg / SEGMENTS)) == 5  # one per import that changed anything
    assert not (whole / SEGMENTS).exists()
    states = [r[2] for r in _rows(seg)]
    assert states.count("retired") == 1 and states.count("missing") == 2


def test_many_segments_are_compacted_into_the_base(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src, cat = _segmented(tmp_path, monkeypatch)
    monkeypatch.setattr(manifest, "MAX_SEGMENTS", 2)
    seen = []
    for _, step in _steps(src)[:3]:
        step()
        register([str(src)], cat)
        seen.append(len(manifest.segment_paths(cat)))
        assert _duck(cat) == _rows(cat)
    assert seen == [1, 2, 0]  # the third import writes the base again
    assert len(_rows(cat)) == 6  # 4 + 1 added + 1 new row of the changed file


def test_a_crash_between_segment_and_index_or_inside_compaction_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src, cat = _segmented(tmp_path, monkeypatch)
    steps = _steps(src)
    steps[0][1]()
    register([str(src)], cat)
    kept = manifest.segment_paths(cat)[0].read_bytes()
    # the segment committed, the index not written: the index of the files before it is
    # refused, the manifest read from the Parquet files, and nothing is read again
    before = (cat / manifest.INDEX).read_bytes()
    steps[1][1]()
    register([str(src)], cat)
    (cat / manifest.INDEX).write_bytes(before)
    assert read_index(cat) is None
    rows = _rows(cat)
    again = register([str(src)], cat)
    assert not again.registered and not again.changed and again.unchanged == 5
    assert read_index(cat) is not None  # made again, under the import's lock
    assert _rows(cat) == rows and manifest.current_generation(cat) == 3
    # compaction cut after the base: a segment it had folded in is still there
    monkeypatch.setattr(manifest, "MAX_SEGMENTS", 0)
    steps[2][1]()
    register([str(src)], cat)
    assert not manifest.segment_paths(cat)
    rows = _rows(cat)
    (cat / SEGMENTS / manifest._segment_name(2)).write_bytes(kept)
    assert _rows(cat) == rows and _duck(cat) == rows


def test_the_stat_index_written_again_after_appends_is_the_index_made_whole(
    tmp_path: Path,
) -> None:
    """An import that only adds rows copies the index's columns it never decoded and adds the
    new values after them: the same index as one made from the manifest."""
    from netfleet.catalog.manifest import Index, write_index

    src = _twin(tmp_path, "src")
    cat = tmp_path / "cat"
    register([str(src)], cat)
    for n, extra in enumerate(RUNS[4:7]):
        shutil.copy(extra, src / extra.name)
        then = time.time_ns() - 60 * 10**9
        os.utime(src / extra.name, ns=(then, then))
        assert len(register([str(src)], cat).registered) == 1, n
        made = Index.of_table(read_manifest(cat), manifest.current_generation(cat))
        index = read_index(cat)
        assert index is not None
        assert list(index.rows()) == list(made.rows())
    index = read_index(cat)
    assert index is not None
    index.append({"row_id": 99, "source": "/x", "state": "bad", "campaign": "c"})
    write_index(cat, index)  # a new coded value, nulls in every other column
    again = read_index(cat)
    assert again is not None and list(again.rows())[-1] == {
        **dict.fromkeys(manifest.INDEX_COLUMNS), "row_id": 99, "source": "/x", "state": "bad",
        "campaign": "c",
    }  # fmt: skip
    assert [r for r in again.rows()][:-1] == list(made.rows())


def test_a_linked_segments_folder_is_refused(tmp_path: Path) -> None:
    from netfleet.durable import LinkRefused

    src = _twin(tmp_path, "src")
    cat = tmp_path / "cat"
    register([str(src)], cat)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (cat / SEGMENTS).symlink_to(elsewhere)
    with pytest.raises(LinkRefused):
        read_manifest(cat)
    assert not list(elsewhere.iterdir())


def test_a_manifest_from_before_row_ids_is_read_and_upgraded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A manifest written before ``row_id`` (and its ``_manifest_index.json``): its rows read
    with their positions as ids, the next import writes it whole with ids, then segments."""
    import pyarrow.parquet as pq

    src = _twin(tmp_path, "src")
    cat = tmp_path / "cat"
    register([str(src)], cat)
    old = read_manifest(cat).drop_columns(["row_id"])
    pq.write_table(old, cat / manifest.MANIFEST)
    (cat / manifest.INDEX).unlink()
    (cat / "_manifest_index.json").write_text("{}")
    assert [r[0] for r in _rows(cat)] == [0, 1, 2, 3]
    monkeypatch.setattr(manifest, "SEGMENT_MIN_ROWS", 0)
    monkeypatch.setattr(manifest, "COMPACT_SHARE", 100.0)
    for n, (_, step) in enumerate(_steps(src)[:2]):
        step()
        register([str(src)], cat)
        assert len(manifest.segment_paths(cat)) == n  # whole first (no ids), then a segment
    assert "row_id" in pq.read_schema(cat / manifest.MANIFEST).names
    assert not (cat / "_manifest_index.json").exists()
    rows = _rows(cat)
    assert [r[0] for r in rows] == [0, 1, 2, 3, 4, 5] and _duck(cat) == rows
    assert [r[2] for r in rows].count("retired") == 1
