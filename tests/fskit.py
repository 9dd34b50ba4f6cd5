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
