"""``netfleet verify`` looks before it reads (issue 37 item 7): a registered file replaced by a
link to someone else's file, by a FIFO or by a sparse giant is ``changed``, told by its stat —
the link's target and the FIFO are never opened, the giant is never read to its end."""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

from netfleet.catalog.verify import verify
from netfleet.cli.boundary import guarded
from netfleet.cli.main import app
from tests.fskit import Closes

FIX = Path(__file__).parent / "fixtures" / "import"
FILES = sorted(p for p in FIX.glob("*.json") if p.name != "MANIFEST.json")[:4]


def _read_bytes() -> int:
    """Bytes this process has read through read(2) so far (/proc/self/io's rchar)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar")


def test_verify_tells_a_replaced_file_by_its_stat_without_opening_or_reading_it(
    tmp_path: Path,
) -> None:
    src = tmp_path / "src"
    src.mkdir()
    for f in FILES:
        shutil.copy(f, src / f.name)
    then = time.time_ns() - 60 * 10**9
    for p in src.iterdir():
        os.utime(p, ns=(then, then))
    catalog = tmp_path / "C"
    assert (
        guarded(lambda: app(["import", str(src), "--catalog", str(catalog)], standalone_mode=False))
        == 0
    )
    linked, fifo, sparse, kept = (src / f.name for f in FILES)
    secret = tmp_path / "secret"
    secret.mkdir(mode=0o700)
    (secret / "x.json").write_bytes(kept.read_bytes())  # the same bytes, another file
    linked.unlink()
    linked.symlink_to(secret / "x.json")
    fifo.unlink()
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: os.close(os.open(fifo, os.O_WRONLY)), daemon=True)
    writer.start()  # waits until a reader opens the FIFO
    with sparse.open("r+b") as fh:
        fh.truncate(1 << 30)
    closes = Closes(secret)
    try:
        before = _read_bytes()
        report = verify(catalog, workers=1)
        read = _read_bytes() - before
        fifo_unopened = writer.is_alive()
        assert closes.names(0.2) == []  # the link's target never opened
    finally:
        closes.close()
        if writer.is_alive():  # let the writer go
            os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
        writer.join(5)
    assert sorted(Path(p).name for p in report.changed) == sorted(
        [linked.name, fifo.name, sparse.name]
    )
    assert report.ok == 1 and not report.corrupt and not report.missing
    assert fifo_unopened, "the FIFO was opened"
    assert read < 64 << 20, f"{read:,} bytes read"  # not the sparse gigabyte
