"""Durable writes (base rank 0): fsync a directory, write a file through a temp name + fsync +
rename, so a crash leaves either the old file or the whole new one — never half of it.

Used by the store (raw results), the catalog (Parquet parts), the runner's journal and the lab
state. The temp file lives in the target's directory (rename is atomic only there) and is
removed when anything fails. Many files at once (an import) are written as a group
(:func:`write_group`): two ``syncfs(2)`` per group instead of two ``fsync`` per file.

Below a directory netfleet owns (a results root, a catalog, a state directory: the *top*,
which the user chose and which may itself be a link), nothing is written or deleted through
a symbolic link someone else placed there (issue 23): :func:`open_dir` walks down from the top
one ``openat(O_NOFOLLOW | O_DIRECTORY)`` at a time, :func:`open_in` opens a file below it with
``O_NOFOLLOW``, :func:`checked_dir` makes and checks a directory, :func:`remove_in` deletes
through a directory descriptor. A link met on the way is refused with :class:`LinkRefused`
(exit 4) naming it. Temp files are created with ``O_EXCL`` (never through a link) and renamed
(a rename replaces a link, never follows it). Where a directory is checked once and written
later (ingest's table directories), the descriptor is held and every create, rename and
delete goes through it (:func:`create_in`, :func:`rename_in`, :func:`atomic_write_in`,
:func:`remove_in`), so swapping the directory for a link in between changes nothing.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterable, Sequence
from functools import cache
from pathlib import Path

from netfleet.errors import LinkRefused

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def refused(path: Path, top: Path, what: str = "a symbolic link") -> LinkRefused:
    return LinkRefused(
        f"{path}: {what} inside {top}: refused (netfleet never writes or deletes through a "
        "link in a directory it writes)",
        hint=f"remove {path} (whoever can write into {top} placed it) and run again",
    )


def open_dir(top: Path, *parts: str, create: bool = False) -> int:
    """A descriptor of ``top/parts…``, each part opened below the previous one without
    following a link (made first when ``create``); the caller closes it."""
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    here = top
    try:
        for part in parts:
            here = here / part
            try:
                nfd = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, dir_fd=fd)
                nfd = _open_checked(part, fd, here, top)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                nfd = _open_checked(part, fd, here, top)
            os.close(fd)
            fd = nfd
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_checked(part: str, fd: int, here: Path, top: Path) -> int:
    try:
        return os.open(part, _DIR_FLAGS, dir_fd=fd)
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
        mode = os.stat(part, dir_fd=fd, follow_symlinks=False).st_mode
        what = "a symbolic link" if stat.S_ISLNK(mode) else "not a directory"
        raise refused(here, top, what) from None


def checked_dir(top: Path, *parts: str, create: bool = True) -> Path:
    """``top/parts…``, made when missing; refused when a part is a link or not a directory."""
    if create:
        top.mkdir(parents=True, exist_ok=True)
    os.close(open_dir(top, *parts, create=create))
    return top.joinpath(*parts)


def open_in(top: Path, rel: str, flags: int, mode: int = 0o644) -> int:
    """Open ``top/rel`` (``rel`` with ``/`` between parts) with ``flags``, never through a link:
    neither the file nor a directory on the way below ``top``."""
    *dirs, name = rel.split("/")
    dfd = open_dir(top, *dirs)
    try:
        return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dfd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise refused(top / rel, top) from None
        raise
    finally:
        os.close(dfd)


def remove_in(dfd: int, name: str) -> None:
    """Delete the entry ``name`` of the directory open as ``dfd`` (a link is removed, never
    followed); gone already is fine."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(name, dir_fd=dfd)


def create_in(dfd: int, name: str, mode: int = 0o644) -> int:
    """Create the new file ``name`` in the directory open as ``dfd`` for writing (``O_EXCL``:
    never an existing file, never through a link); the caller closes it."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    return os.open(name, flags, mode, dir_fd=dfd)


def rename_in(dfd: int, src: str, dst: str) -> None:
    """Rename ``src`` to ``dst`` inside the directory open as ``dfd``: the directory checked
    when it was opened, even if its path has been swapped for a link since."""
    os.rename(src, dst, src_dir_fd=dfd, dst_dir_fd=dfd)


def atomic_write_in(
    dfd: int, name: str, data: bytes, prefix: str = ".tmp-", mode: int = 0o644
) -> None:
    """:func:`atomic_write` into the directory open as ``dfd``: temp file (``O_EXCL``, a random
    name, ``mode``), fsync, rename, fsync the directory — every step through the descriptor,
    none through a path."""
    temp = f"{prefix}{os.urandom(8).hex()}.part"
    fd = create_in(dfd, temp, mode)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        rename_in(dfd, temp, name)
    except BaseException:
        remove_in(dfd, temp)
        raise
    os.fsync(dfd)


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """Make a directory's entries (a created or renamed file) survive a crash."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def named(exc: OSError, path: str | os.PathLike[str]) -> OSError:
    """``exc`` with the file it is about (a failed write — ENOSPC, EDQUOT, EIO — names none):
    the error the user sees says which file system to free."""
    if exc.filename is None and exc.errno is not None:
        return type(exc)(exc.errno, exc.strerror, os.fspath(path))
    return exc


def write_temp(directory: Path, data: bytes, prefix: str = ".tmp-", suffix: str = ".part") -> Path:
    """Write ``data`` to a new temp file in ``directory`` and fsync it; return its path."""
    import tempfile  # here: a no-op import reads the catalog and writes nothing

    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise named(exc, tmp) from exc
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
        import ctypes

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
                import ctypes

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
            import tempfile

            fd, name = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=path.parent)
            temps.append((Path(name), path))
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
            except OSError as exc:
                raise named(exc, path) from exc
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
