"""A no-op import decides "nothing changed" column by column (``register._unchanged``: the
index's columns compared as its file holds them) when the listing found exactly the index's
rows in its order; otherwise ``register._active`` and the file-by-file loop of
``register._work`` decide. "Unchanged" only ever where the loop finds nothing: checked for
every case — unchanged, a new file, a changed size, mtime or inode, a racy file, a missing
row, a gone file, another order, other options, an S3 ETag, a null in the index, names JSON
escapes (issue 26)."""

from __future__ import annotations

import json
import os
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from netfleet.catalog import register as reg
from netfleet.catalog import sourcelist
from netfleet.catalog.manifest import INDEX_COLUMNS, Index, _Columns, _encode_index
from netfleet.catalog.sourcelist import Found

SECOND = 1_000_000_000


def _files(tmp_path: Path, count: int = 6) -> tuple[str, list[Found]]:
    top = tmp_path / "raw"
    for n in range(count):
        folder = top / f"d={n % 2}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"f{n}.json"
        path.write_bytes(b"x" * (n + 1))
        then = 1_700_000_000 * SECOND + n * SECOND
        os.utime(path, ns=(then, then))
    return str(top), sourcelist.listed([str(top)], False)


def _index(found: list[Found], edit: Callable[[list[dict[str, Any]]], None] | None = None) -> Index:
    """The index an import of ``found`` wrote, read back as from its file (columns decoded
    when asked)."""
    rows = [
        dict(
            row_id=n,
            source=f.source,
            campaign="c",
            asked="a",
            state="ok",
            size=f.size,
            mtime_ns=f.mtime_ns,
            inode=f.inode,
            etag=f.etag,
            file_id="0" * 64,
            kept=None,
            checked_ns=(f.mtime_ns or 0) + 60 * SECOND,
            run_id=f"r{n}",
            reason=None,
        )
        for n, f in enumerate(found)
    ]
    if edit is not None:
        edit(rows)
    columns = {name: [row[name] for row in rows] for name in INDEX_COLUMNS}
    data = _encode_index(Index(1, len(rows), columns), [])
    end = data.index(b"\n")
    head = json.loads(data[:end])
    body = memoryview(data)[end + 1 :]
    return Index(1, len(rows), _Columns(body, head["columns"]), len(rows), [])


def _both(
    found: list[Found], top: str, index: Index, monkeypatch: pytest.MonkeyPatch
) -> tuple[bool, tuple[list[Found], list[str]]]:
    """Whether the column-wise check said "unchanged", and what the loop answers (on the same
    index); "unchanged" only where the loop finds nothing to read and nothing gone."""
    same = reg._unchanged(found, index, "c", "a")
    answer = reg._work(found, [top], index, reg._active(index, "c", "a"))
    if same:
        assert answer == ([], [])
    return same, answer


def test_unchanged_is_decided_column_wise(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    top, found = _files(tmp_path)
    same, answer = _both(found, top, _index(found), monkeypatch)
    assert same and answer == ([], [])
    # compared as the file holds them: no column decoded into Python values
    index = _index(found)
    assert reg._unchanged(found, index, "c", "a")
    assert not set(index.columns)


def _with(at: int, **changes: Any) -> Callable[[list[dict[str, Any]]], None]:
    def edit(rows: list[dict[str, Any]]) -> None:
        rows[at].update(changes)

    return edit


@pytest.mark.parametrize(
    ("edit", "read"),
    [
        (_with(2, size=999), [2]),
        (_with(3, mtime_ns=5), [3]),
        (_with(0, inode=1), [0]),
        (_with(4, checked_ns=None), []),  # a null in the index: the loop decides (not racy)
        (_with(5, state="missing"), [5]),  # back at its source: read again
        (_with(1, campaign="other"), [1]),  # not active: new for this import
        (_with(1, asked="other"), [1]),  # other options
    ],
)
def test_a_changed_row_is_read(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    edit: Callable[[list[dict[str, Any]]], None],
    read: list[int],
) -> None:
    top, found = _files(tmp_path)
    same, (todo, gone) = _both(found, top, _index(found, edit), monkeypatch)
    assert not same
    assert todo == [found[n] for n in read] and gone == []


def test_a_racy_file_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    top, found = _files(tmp_path)
    # checked 1 s after its mtime: racy (the others 60 s after theirs; the newest mtime is
    # later than this one's check, so the one-comparison shortcut cannot answer)
    edit = _with(0, checked_ns=found[0].mtime_ns + SECOND)
    same, (todo, gone) = _both(found, top, _index(found, edit), monkeypatch)
    assert not same and todo == [found[0]] and gone == []
    # every file checked just over 2 s after the newest mtime: none racy
    newest = max(f.mtime_ns or 0 for f in found)

    def late(rows: list[dict[str, Any]]) -> None:
        for row in rows:
            row["checked_ns"] = newest + reg.RACY_NS

    assert _both(found, top, _index(found, late), monkeypatch) == (True, ([], []))
    edit = _with(5, checked_ns=found[5].mtime_ns + reg.RACY_NS - 1)  # the newest, just racy
    same, (todo, _) = _both(found, top, _index(found, edit), monkeypatch)
    assert not same and todo == [found[5]]


def test_new_gone_and_reordered_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    top, found = _files(tmp_path)
    index = _index(found[:-1])  # one file new
    same, (todo, gone) = _both(found, top, index, monkeypatch)
    assert not same and todo == [found[-1]] and gone == []
    Path(found[0].path).unlink()  # one file gone
    after = sourcelist.listed([top], False)
    same, (todo, gone) = _both(after, top, _index(found), monkeypatch)
    assert not same and todo == [] and gone == [found[0].source]
    # the index's rows in another order than the listing's: nothing changed all the same
    same, answer = _both(found, top, _index(found, lambda rows: rows.reverse()), monkeypatch)
    assert not same and answer == ([], [])


def test_etags_and_unstatted_files_go_to_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    top, found = _files(tmp_path)
    tagged = [Found(*f[:5], etag="e") for f in found]  # (S3's: size and ETag)
    same, answer = _both(tagged, top, _index(tagged), monkeypatch)
    assert not same and answer == ([], [])
    bare = [*found[:-1], Found(found[-1].source, found[-1].path, None)]  # stat failed
    same, (todo, _) = _both(bare, top, _index(found), monkeypatch)
    assert not same and todo == [bare[-1]]
    # columns made in memory (not read from the index's file): the loop
    plain = Index(1, len(found), {n: list(v) for n, v in _index(found).columns.every().items()})
    assert _both(found, top, plain, monkeypatch) == (False, ([], []))


def test_names_json_escapes_are_compared_decoded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    top, found = _files(tmp_path, 2)
    for name in ('q"uote.json', "back\\slash.json", "caf\u00e9.json", "tab\tname.json"):
        (Path(top) / "d=0" / name).write_bytes(b"{}")
    found = sourcelist.listed([top], False)
    assert _both(found, top, _index(found), monkeypatch) == (True, ([], []))
    index = _index(found)
    assert index.column_is("source", [f.source for f in found])
    assert "source" in index.columns  # (decoded to compare: JSON escapes these names)
    other = [f.source for f in found]
    other[1] = other[1] + "x"
    assert not _index(found).column_is("source", other)


def test_column_is_against_the_file_and_the_decoded_column(tmp_path: Path) -> None:
    _, found = _files(tmp_path, 3)
    sizes = [f.size for f in found]
    index = _index(found)
    assert index.column_is("size", sizes) and "size" not in index.columns
    assert not index.column_is("size", [*sizes[:-1], 0])
    assert not index.column_is("size", sizes[:-1])
    assert not index.column_is("size", [*sizes[:-1], None])  # a null is not a value
    assert _index(found).ints("size") == array("q", sizes)  # not decoded: an int64 array
    assert "size" in index.columns  # (decoded to compare with a None) and then its list:
    assert index.ints("size") == sizes
    nulled = _index(found, _with(0, size=None))
    assert nulled.column_is("size", [None, *sizes[1:]])
    assert not nulled.column_is("size", [-(1 << 63), *sizes[1:]])  # null's own value
    assert not _index(found).column_is("source", [f.source for f in found][::-1])
    index.columns["size"]  # decoded: compared as lists
    assert index.column_is("size", sizes) and not index.column_is("size", sizes[::-1])
    index.append({**index.row(0), "row_id": 3})  # appended rows (a tail) count too
    assert index.column_is("source", [*(f.source for f in found), found[0].source])
    assert index.column_is("inode", [*(f.inode for f in found), found[0].inode])
