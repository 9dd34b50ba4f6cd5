"""A folder below the import root swapped for a link between the listing and the read (issue 37
item 5): ``O_NOFOLLOW`` guards the last component only, so the file opened must also be the one
listed (its inode, size and mtime). Otherwise root would read a file the link points at — a
root-only file — and put its SHA-256 in the world-readable manifest, or its bytes in the
results. The swap comes exactly between the two: after the real listing, before the real read
(import by reference), or from the progress callback after the first file (envelope import)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

from netfleet.catalog import reader
from netfleet.catalog.sourcelist import Options, listed
from netfleet.store import ResultsRoot
from netfleet.store.imports import import_files

FIX = Path(__file__).parent / "fixtures" / "import"
FILES = sorted(p for p in FIX.glob("*.json") if p.name != "MANIFEST.json")


def _folders(tmp_path: Path) -> tuple[Path, Path]:
    """``src/a.json`` and ``src/sub/z.json`` (someone else's folder), and a root-only folder
    ``secret/sub/z.json`` holding another file under the same name and size."""
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    shutil.copy(FILES[0], src / "a.json")
    shutil.copy(FILES[1], src / "sub" / "z.json")
    secret = tmp_path / "secret"
    secret.mkdir(mode=0o700)
    body = FILES[2].read_bytes()
    size = (src / "sub" / "z.json").stat().st_size
    # the same size: only the inode (and the mtime) tell the two apart
    (secret / "z.json").write_bytes(body[:size].ljust(size, b" "))
    st = (src / "sub" / "z.json").stat()
    os.utime(secret / "z.json", ns=(st.st_atime_ns, st.st_mtime_ns))
    os.chmod(secret / "z.json", 0o600)
    return src, secret


def _swap(src: Path, secret: Path) -> None:
    (src / "sub").rename(src / "old-sub")
    (src / "sub").symlink_to(secret)


def test_a_folder_swapped_for_a_link_after_listing_is_never_read_by_reference(
    tmp_path: Path,
) -> None:
    src, secret = _folders(tmp_path)
    items = list(listed([str(src)], False))
    assert [Path(i.path).name for i in items] == ["a.json", "z.json"]
    _swap(src, secret)
    reads, _ = reader.read_task(items, Options("camp", {}, None), False)
    by_name = {Path(r.row["source"]).name: r.row for r in reads}
    assert by_name["a.json"]["state"] == "ok"
    swapped = by_name["z.json"]
    assert swapped["state"] == "bad"
    assert "not the file listed" in swapped["reason"]
    secret_id = hashlib.sha256((secret / "z.json").read_bytes()).hexdigest()
    assert secret_id not in json.dumps([r.row for r in reads], default=str)


def test_a_folder_swapped_for_a_link_after_listing_is_never_read_into_results(
    tmp_path: Path,
) -> None:
    src, secret = _folders(tmp_path)
    root = ResultsRoot(tmp_path / "results")
    report = import_files(
        [str(src)], root, progress=lambda done, _total: done == 1 and _swap(src, secret)
    )
    assert len(report.imported) == 1
    assert [(Path(p).name, "not the file listed" in why) for p, why in report.bad] == [
        ("z.json", True)
    ]
