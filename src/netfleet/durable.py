"""Durable writes (base rank 0): fsync a directory, write a file through a temp name + fsync +
rename, so a crash leaves either the old file or the whole new one — never half of it.

Used by the store (raw results), the catalog (Parquet parts), the runner's journal and the lab
state. The temp file lives in the target's directory (rename is atomic only there) and is
removed when anything fails. Many files at once (an import) are written as a group
(:func:`write_group`): two ``syncfs(2)`` per group instead of two ``fsync`` per file.
"""

from __future__ import annotations

import ctypes
import os
import tempfile
from collections.abc import Iterable, Sequence
from functools import cache
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


@cache
def _libc_syncfs() -> object | None:
    try:
        return ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):  # not glibc/musl on Linux: os.sync() instead
        return None


def syncfs(directories: Iterable[str | os.PathLike[str]]) -> None:
    """Flush every filesystem holding one of ``directories`` to disk: file data and metadata
    (created and renamed entries), one ``syncfs(2)`` per filesystem."""
    one_per_device: dict[int, str | os.PathLike[str]] = {}
    for directory in directories:
        one_per_device.setdefault(os.stat(directory).st_dev, directory)
    call = _libc_syncfs()
    if call is None:
        os.sync()
        return
    for directory in one_per_device.values():
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            if call(fd) != 0:  # type: ignore[operator]
                err = ctypes.get_errno()
                raise OSError(err, os.strerror(err), str(directory))
        finally:
            os.close(fd)


def write_group(
    items: Sequence[tuple[Path, bytes]], prefix: str = ".tmp-", suffix: str = ".part"
) -> list[Path]:
    """Write each ``(path, data)`` atomically, as :func:`atomic_write` does one file: every
    file to a temp name beside its path, the filesystems synced once, then every temp renamed
    to its path, then synced once more. A crash leaves each path absent, or its old or whole
    new content — never half of it; the renames not yet synced may be lost (the files are then
    written again by whoever wrote them). Temps not renamed are removed when anything fails."""
    temps: list[tuple[Path, Path]] = []
    renamed = 0
    try:
        for path, data in items:
            fd, name = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=path.parent)
            temps.append((Path(name), path))
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
        directories = {path.parent for path, _ in items}
        syncfs(directories)
        for temp, path in temps:
            os.replace(temp, path)
            renamed += 1
        syncfs(directories)
    finally:
        for temp, _ in temps[renamed:]:
            temp.unlink(missing_ok=True)
    return [path for path, _ in items]
