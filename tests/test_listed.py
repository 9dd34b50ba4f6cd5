"""The no-op import's listing (:func:`netfleet.catalog.sourcelist.listed`): every file once,
in path order, with its stat; a file named by two sources listed once; the cycle collector,
paused for the loop, left as it was found — even when the listing fails."""

from __future__ import annotations

import gc
import os
from pathlib import Path

import pytest

from netfleet.catalog.sourcelist import listed
from netfleet.errors import InputError


def _tree(tmp_path: Path) -> Path:
    top = tmp_path / "src"
    for name in ("b/2.json", "b/1.json.gz", "a.json", "c/d/3.json", "c/skip.bin"):
        (top / name).parent.mkdir(parents=True, exist_ok=True)
        (top / name).write_bytes(name.encode())
    os.symlink(top / "a.json", top / "b/link.json")
    return top


@pytest.mark.parametrize("collecting", [True, False])
def test_each_file_once_in_path_order_with_its_stat(tmp_path: Path, collecting: bool) -> None:
    top = _tree(tmp_path)
    was = gc.isenabled()
    (gc.enable if collecting else gc.disable)()
    try:
        found = listed([str(top), str(top / "b"), str(top / "a.json")], follow_links=False)
        assert gc.isenabled() is collecting
    finally:
        (gc.enable if was else gc.disable)()
    names = [os.path.relpath(f.source, top) for f in found]
    assert names == ["a.json", "b/1.json.gz", "b/2.json", "b/link.json", "c/d/3.json"]
    for f in found:
        st = os.lstat(f.source)
        assert f.path == f.source and f.size == st.st_size and f.etag is None
        if f.source.endswith("link.json"):  # not a regular file: no stat to compare with
            assert (f.mtime_ns, f.inode) == (None, None)
        else:
            assert (f.mtime_ns, f.inode) == (st.st_mtime_ns, st.st_ino)


def test_a_missing_source_fails_and_the_collector_is_back(tmp_path: Path) -> None:
    top = _tree(tmp_path)
    assert gc.isenabled()
    with pytest.raises(InputError, match="no such file"):
        listed([str(top), str(tmp_path / "gone")], follow_links=False)
    assert gc.isenabled()
