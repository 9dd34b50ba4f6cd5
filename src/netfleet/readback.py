"""Reading back a file netfleet wrote, from a place someone else may write (issue 37).

A catalog's format file, ``_retire.json``, ``_run_ids/``, ``_sheets/``, ``_tallies/`` and
``_manifest_index``, the source files the manifest names, a watch's ``state.json``: each is
read by :func:`read_back` (and its JSON parsed by :func:`loads_back`), under the rules the
journal reader (:mod:`netfleet.journalfile`) keeps too:

- looked at with ``lstat`` before it is opened: a FIFO, a device, a socket or a directory is
  never opened (opening a device can act; reading a FIFO waits for ever), a link is never
  followed;
- opened with ``O_NOFOLLOW | O_NONBLOCK`` and required to be the regular file looked at (its
  device and inode, ``fstat``): a swap in between is refused;
- at most a cap of bytes, told by the size before anything is read (a sparse terabyte costs
  nothing);
- JSON nested deeper than :data:`MAX_DEPTH` is refused — the parser's own ``RecursionError``
  on 100,000 levels caught, the depth of what parsed measured without recursion;
- ``own``: only a file of this process's user that nobody else may write (a cache entry: what
  another user put there is not believed).

What breaks a rule raises :class:`NotOurs`, a ``ValueError``: the caller treats the file as
damaged — ignores it, rebuilds it, names it in an error — as it does a file that does not
parse. (No ``dataclasses`` here: the cheat sheet's cached path imports it.)
"""

from __future__ import annotations

import json
import os
import stat
from typing import Any  # (loaded already: ``netfleet`` imports it)

#: netfleet's records and documents nest a few levels; a deeper one is not netfleet's
MAX_DEPTH = 16


class NotOurs(ValueError):
    """A file read back is not one netfleet could have written (a link, a FIFO, a device, a
    directory, another user's, larger than its cap, JSON nested too deep)."""


def open_back(path: str | os.PathLike[str], *, dir_fd: int | None = None, own: bool = False) -> int:
    """An fd for reading the regular file at ``path`` (the module's rules; NotOurs, or OSError:
    FileNotFoundError when there is none)."""
    seen = os.lstat(path, dir_fd=dir_fd)
    if not stat.S_ISREG(seen.st_mode):
        raise NotOurs("not a regular file")
    if own and (seen.st_uid != os.geteuid() or seen.st_mode & 0o022):
        raise NotOurs("written by another user")
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    fd = os.open(path, flags, dir_fd=dir_fd)
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or (info.st_dev, info.st_ino) != (seen.st_dev, seen.st_ino):
        os.close(fd)
        raise NotOurs("replaced while it was opened")
    return fd


def read_back(
    path: str | os.PathLike[str], limit: int, *, dir_fd: int | None = None, own: bool = False
) -> bytes:
    """The bytes of the file at ``path`` (:func:`open_back`); NotOurs when it holds more than
    ``limit`` bytes."""
    fd = open_back(path, dir_fd=dir_fd, own=own)
    with os.fdopen(fd, "rb") as fh:
        if os.fstat(fd).st_size > limit:
            raise NotOurs(f"larger than {limit:,} bytes")
        data = fh.read(limit + 1)
    if len(data) > limit:  # it grew meanwhile
        raise NotOurs(f"larger than {limit:,} bytes")
    return data


def loads_back(data: bytes | str, max_depth: int | None = MAX_DEPTH) -> Any:
    """``json.loads(data)``, with JSON nested more than ``max_depth`` levels (None: any depth
    the parser takes) refused as NotOurs — the parser's own ``RecursionError`` included."""
    try:
        value = json.loads(data)
    except RecursionError:
        raise NotOurs("JSON nested too deep") from None
    if max_depth is not None and deeper_than(value, max_depth):
        raise NotOurs(f"JSON nested more than {max_depth} levels deep")
    return value


def deeper_than(value: Any, limit: int) -> bool:
    """Do lists and objects in ``value`` nest more than ``limit`` levels (no recursion)?"""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return False
