"""Durable writes (base rank 0): fsync a directory, write a file through a temp name + fsync +
rename, so a crash leaves either the old file or the whole new one — never half of it.

Used by the store (raw results), the catalog (Parquet parts), the runner's journal and the lab
state. The temp file lives in the target's directory (rename is atomic only there) and is
removed when anything fails.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """Make a directory's entries (a created or renamed file) survive a crash."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_temp(directory: Path, data: bytes, prefix: str = ".tmp-", suffix: str = ".part") -> Path:
    """Write ``data`` to a new temp file in ``directory`` and fsync it; return its path."""
    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


def atomic_write(
    path: Path, data: bytes, prefix: str = ".tmp-", suffix: str = ".part", sync_dir: bool = True
) -> Path:
    """Replace ``path`` with ``data`` atomically: temp file, fsync, rename, fsync the directory."""
    tmp = write_temp(path.parent, data, prefix, suffix)
    try:
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if sync_dir:
        fsync_dir(path.parent)
    return path
