"""A small file system of a test's own, to fill: a tmpfs mounted under the test's tmp_path (as
root) and unmounted whatever happens; the test is skipped where mounting is not allowed."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def small_tmpfs(where: Path, size: str = "64k") -> Iterator[Path]:
    where.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {made.stderr.decode()[:200]}")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=False)


def resume_offered_beyond_run(err: str) -> bool:
    """Whether the fix of an error message offers ``--resume`` other than for ``netfleet run``."""
    return "--resume" in err.split("fix:", 1)[-1].split("netfleet run")[0]


class Closes:
    """inotify on one folder: the names of files closed after reading (``IN_CLOSE_NOWRITE``),
    in order — for a test that swaps a file the moment netfleet has read it."""

    _IN_CLOSE_NOWRITE = 0x10

    def __init__(self, folder: Path) -> None:
        import ctypes
        import os

        self._libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self._libc.inotify_init1(os.O_CLOEXEC)
        if self.fd < 0:
            pytest.skip("no inotify here")
        if self._libc.inotify_add_watch(self.fd, bytes(folder), self._IN_CLOSE_NOWRITE) < 0:
            os.close(self.fd)
            pytest.skip("cannot watch the folder")

    def names(self, timeout: float) -> list[str]:
        """The names closed since the last call (waiting up to ``timeout`` s for one)."""
        import os
        import select
        import struct

        out: list[str] = []
        if not select.select([self.fd], [], [], timeout)[0]:
            return out
        buf = os.read(self.fd, 1 << 16)
        at = 0
        while at < len(buf):
            _, _, _, size = struct.unpack_from("iIII", buf, at)
            name = buf[at + 16 : at + 16 + size].rstrip(b"\0").decode()
            out.append(name)
            at += 16 + size
        return out

    def close(self) -> None:
        import os

        os.close(self.fd)
