"""Issue 37: ``--keep-copy`` treats its folder as a store root writes, and keeps only the file
that was read.

Another user (``nobody``) can write the keep folder and owns the sources. Each test sets up what
they could plant — a link at the kept name, a link at the temp name a copy used to take, a
source swapped right after netfleet read it (timed by inotify) — and checks that root wrote
nothing outside the folder, kept no link, FIFO or foreign inode, and recorded a copy only of
the bytes it read.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import threading
import time
from pathlib import Path

import pytest

from netfleet.catalog.manifest import read_manifest
from netfleet.catalog.register import register
from tests.fskit import Closes, small_tmpfs

FIXTURE = Path(__file__).parent / "fixtures" / "import" / "v3_12_tcp.client.json"
NOBODY = 65534
SECRET = b"root:$6$not-for-nobody$\n"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the attacker is another user")


def _sources(folder: Path, count: int) -> list[Path]:
    """``count`` distinct runs (each its own cookie), owned by nobody, modified a minute ago."""
    folder.mkdir(parents=True)
    doc = json.loads(FIXTURE.read_text())
    then = time.time_ns() - 60 * 10**9
    out = []
    for i in range(count):
        doc["start"]["cookie"] = f"keep{i:020d}"
        doc["start"]["timestamp"]["timesecs"] += 1
        path = folder / f"r{i:04d}.json"
        path.write_text(json.dumps(doc))
        os.chown(path, NOBODY, NOBODY)
        os.utime(path, ns=(then, then))
        out.append(path)
    os.chown(folder, NOBODY, NOBODY)
    return out


def _theirs(folder: Path) -> Path:
    folder.mkdir(exist_ok=True)
    os.chown(folder, NOBODY, NOBODY)
    folder.chmod(0o777)
    return folder


def _secret(tmp_path: Path) -> Path:
    victim = tmp_path / "shadow"
    victim.write_bytes(SECRET)
    victim.chmod(0o600)
    return victim


def _rows(catalog: Path) -> dict[str, dict[str, object]]:
    return {Path(r["source"]).name: r for r in read_manifest(catalog).to_pylist()}


def _assert_kept_safely(keep: Path, catalog: Path) -> None:
    """Every entry of the keep folder is a regular file root owns, no one else can write,
    holding the bytes its name says; every kept path the manifest records is such an entry."""
    for entry in keep.iterdir():
        st = entry.lstat()
        assert stat.S_ISREG(st.st_mode), f"{entry}: not a regular file"
        assert st.st_uid == 0 and not st.st_mode & 0o022, f"{entry}: {oct(st.st_mode)}"
        assert hashlib.sha256(entry.read_bytes()).hexdigest() == entry.name.split(".")[0]
    for row in _rows(catalog).values():
        if row["kept"]:
            assert Path(str(row["kept"])).parent == keep.resolve()
            assert Path(str(row["kept"])).read_bytes() == Path(str(row["source"])).read_bytes()


def test_a_link_planted_at_the_kept_name_is_replaced_not_followed(tmp_path: Path) -> None:
    (src,) = _sources(tmp_path / "src", 1)
    victim = _secret(tmp_path)
    keep = _theirs(tmp_path / "keep")
    name = hashlib.sha256(src.read_bytes()).hexdigest() + ".json"
    (keep / name).symlink_to(victim)  # nobody's link: "already kept"
    report = register([str(src.parent)], tmp_path / "cat", keep_copy=str(keep))
    assert report.registered == [str(src)]
    assert victim.read_bytes() == SECRET
    assert not (keep / name).is_symlink()
    assert _rows(tmp_path / "cat")[src.name]["kept"] == str(keep.resolve() / name)
    _assert_kept_safely(keep, tmp_path / "cat")


def test_a_link_planted_at_a_temp_name_is_never_written_through(tmp_path: Path) -> None:
    """A copy (the keep folder on another file system) never opens a name someone could have
    placed: the old temp name ``.tmp-<sha256>.json`` was predictable."""
    (src,) = _sources(tmp_path / "src", 1)
    victim = _secret(tmp_path)
    with small_tmpfs(tmp_path / "other", "8m") as other:
        keep = _theirs(other / "keep")
        digest = hashlib.sha256(src.read_bytes()).hexdigest()
        for name in (f".tmp-{digest}.json", f".tmp-{digest}.json.part"):
            (keep / name).symlink_to(victim)
        register([str(src.parent)], tmp_path / "cat", keep_copy=str(keep))
        assert victim.read_bytes() == SECRET
        kept = keep / f"{digest}.json"
        assert kept.read_bytes() == src.read_bytes()
        assert os.stat(kept).st_uid == 0
        assert stat.S_IMODE(os.stat(kept).st_mode) == 0o644  # the source's bits, root's file
        planted = {p.name for p in keep.iterdir() if p.is_symlink()}
        assert planted == {f".tmp-{digest}.json", f".tmp-{digest}.json.part"}  # left as found
        for p in keep.iterdir():
            if p.is_symlink():
                p.unlink()
        _assert_kept_safely(keep, tmp_path / "cat")


def test_a_kept_copy_of_someone_else_s_file_is_root_s_own_inode(tmp_path: Path) -> None:
    """A hard link would still be the owner's inode (they could change the "kept" bytes): a
    file root does not own is copied, with its own mode (0600 stays 0600)."""
    one, two = _sources(tmp_path / "src", 2)
    one.chmod(0o600)
    keep = tmp_path / "keep"
    register([str(one.parent)], tmp_path / "cat", keep_copy=str(keep))
    rows = _rows(tmp_path / "cat")
    for src, mode in ((one, 0o600), (two, 0o644)):
        kept = Path(str(rows[src.name]["kept"]))
        st = os.stat(kept)
        assert st.st_ino != os.stat(src).st_ino
        assert st.st_uid == 0 and stat.S_IMODE(st.st_mode) == mode
    _assert_kept_safely(keep, tmp_path / "cat")


SWAPS = ["link to a root-only file", "FIFO", "link to /dev/zero, links followed"]


@pytest.mark.parametrize("swap", SWAPS)
def test_a_source_swapped_after_it_was_read_is_refused_not_kept(tmp_path: Path, swap: str) -> None:
    """The moment the workers have read some files (inotify), the first one read is swapped:
    netfleet keeps no link, FIFO or device, never waits, and refuses that file with its reason
    (the others are imported and kept)."""
    files = _sources(tmp_path / "src", 600)  # ≥ 512: read by the workers, settled later
    src = files[0].parent
    victim = _secret(tmp_path)
    keep = tmp_path / "keep"
    closes = Closes(src)
    swapped: list[str] = []

    def attacker() -> None:
        seen: list[str] = []
        while len(seen) < 20:
            got = closes.names(30)
            if not got:
                return
            seen += [name for name in got if name.endswith(".json")]  # not the folder's
        first = src / seen[0]
        temp = src / ".swap"
        if swap == "FIFO":
            os.mkfifo(temp)
        else:
            temp.symlink_to("/dev/zero" if "zero" in swap else victim)
        os.rename(temp, first)
        swapped.append(first.name)

    thread = threading.Thread(target=attacker)
    thread.start()
    try:
        report = register(
            [str(src)], tmp_path / "cat", keep_copy=str(keep), workers=2,
            follow_links="followed" in swap,
        )  # fmt: skip
    finally:
        thread.join(60)
        closes.close()
    assert swapped, "the swap never happened"
    rows = _rows(tmp_path / "cat")
    row = rows[swapped[0]]
    # the keep's own look after the read refuses it; on a busy machine the swap can come
    # before the worker's second look at the file it read (it was descheduled in between):
    # then the reader refuses it first. Refused and not kept either way.
    reasons = ("after it was read", "changed while it was read")
    assert row["state"] == "bad" and any(r in str(row["reason"]) for r in reasons), row
    assert row["kept"] is None
    assert (str(src / swapped[0]), str(row["reason"])) in report.bad
    assert len(report.registered) == 599
    assert sum(1 for r in rows.values() if r["kept"]) == 599
    assert victim.read_bytes() == SECRET
    os.unlink(src / swapped[0])  # (a FIFO would hang the check below)
    _assert_kept_safely(keep, tmp_path / "cat")
