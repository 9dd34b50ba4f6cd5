"""Group writes (an import's files): every file whole or absent, no temp file left, whatever
fails; an interrupted import still writes the group it had prepared."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from netfleet.durable import syncfs, write_group
from netfleet.store import ResultsRoot
from netfleet.store import imports as imports_module
from netfleet.store.imports import import_files

FIX = Path(__file__).parent / "fixtures" / "import"
RUNS = sorted(p for p in FIX.glob("*.json") if p.name != "MANIFEST.json")


def _temps(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.name.startswith(".tmp-")]


def test_a_group_is_written_whole(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "old").write_bytes(b"old")
    items = [
        (tmp_path / "a" / "one", b"1" * 100),
        (tmp_path / "b" / "two", b""),
        (tmp_path / "a" / "old", b"new"),  # replaced, as atomic_write replaces
    ]
    assert write_group(items) == [path for path, _ in items]
    assert [p.read_bytes() for p, _ in items] == [b"1" * 100, b"", b"new"]
    assert not _temps(tmp_path)


def test_a_write_that_fails_leaves_no_file_of_the_group(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    items = [
        (tmp_path / "a" / "one", b"1"),
        (tmp_path / "missing-dir" / "two", b"2"),  # its temp cannot be created
        (tmp_path / "a" / "three", b"3"),
    ]
    with pytest.raises(FileNotFoundError):
        write_group(items)
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a"]  # no file, no temp


def test_a_rename_that_fails_keeps_the_renamed_and_removes_the_rest(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "dir").mkdir()  # a file cannot replace a directory
    items = [
        (tmp_path / "a" / "one", b"1"),
        (tmp_path / "a" / "dir", b"2"),
        (tmp_path / "a" / "three", b"3"),
    ]
    with pytest.raises(IsADirectoryError):
        write_group(items)
    assert (tmp_path / "a" / "one").read_bytes() == b"1"
    assert (tmp_path / "a" / "dir").is_dir() and not (tmp_path / "a" / "three").exists()
    assert not _temps(tmp_path)


def test_syncfs_refuses_what_is_not_a_directory(tmp_path: Path) -> None:
    syncfs([tmp_path, tmp_path / "."])  # one filesystem: one call
    (tmp_path / "f").write_bytes(b"")
    with pytest.raises(NotADirectoryError):
        syncfs([tmp_path / "f"])


def test_an_interrupted_import_writes_what_it_had_prepared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C after the third file (before any group was full): those three are written,
    whole, and nothing else; importing again adds the rest and duplicates nothing."""
    sources = tmp_path / "src"
    sources.mkdir()
    for path in RUNS:
        shutil.copy(path, sources / path.name)
    assert len(RUNS) > 4
    monkeypatch.setattr(imports_module, "GROUP_SECONDS", 3600.0)
    root = tmp_path / "root"

    def interrupt(done: int, total: int) -> None:
        if done == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        import_files([str(sources)], ResultsRoot(root), progress=interrupt, pair=False)
    assert len(list(root.rglob("*.json.gz"))) == 3 and not _temps(root)
    for path in root.rglob("*.json.gz"):
        ResultsRoot.read(path)  # whole: decodes and validates
    report = import_files([str(sources)], ResultsRoot(root), pair=False)
    # the three written before the interrupt are reported as already imported, not written again
    assert len(report.already) == 3 and not report.bad
    assert len(report.imported) == len(RUNS) - 3
    assert len(list(root.rglob("*.json.gz"))) == len(RUNS)


def test_groups_are_cut_by_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With groups of two files, every file still lands once, in order."""
    sources = tmp_path / "src"
    sources.mkdir()
    for path in RUNS:
        shutil.copy(path, sources / path.name)
    monkeypatch.setattr(imports_module, "GROUP_FILES", 2)
    calls: list[int] = []
    original = ResultsRoot.write_encoded_many

    def counted(self: ResultsRoot, items: list[tuple[str, bytes]]) -> list[Path]:
        calls.append(len(items))
        return original(self, items)

    monkeypatch.setattr(ResultsRoot, "write_encoded_many", counted)
    report = import_files([str(sources)], ResultsRoot(tmp_path / "root"), pair=False)
    assert calls == [2] * (len(RUNS) // 2) + ([1] if len(RUNS) % 2 else [])
    assert len(set(report.imported)) == len(RUNS)
    assert sorted(report.imported) == sorted(str(p) for p in (tmp_path / "root").rglob("*.json.gz"))
