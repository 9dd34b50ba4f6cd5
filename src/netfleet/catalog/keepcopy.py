"""``--keep-copy``: each file read kept as it is, named by its SHA-256 — a copy (a reflink where
the file system can) owned by the importing user, a hard link only to a file that user owns and
nobody else can write; S3 to S3 a server-side copy of the same object.

The keep folder is a store netfleet writes as root that others may write into, and the source
may change between the read and the keep (docs/security.md, "The keep folder is a store"). So
nothing below the folder is followed (no-follow directory descriptors; an entry created under a
random ``O_EXCL`` temp name and renamed into place); an entry found under the name counts only
when it is a regular file this user owns, nobody else can write, holding the SHA-256; the source
is opened again ``O_NONBLOCK`` and must be the very file read (same inode, size and mtime), at
most its size copied and the copy hashed against the file's id; a copy has the source's
permission bits (never more than ``0o644``). A file that cannot be kept so is refused with its
reason (:class:`NotKept`): the import goes on with the others.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from netfleet.catalog.layout import TEMP_PREFIX
from netfleet.catalog.sourcelist import Found, s3_client, s3_split
from netfleet.durable import atomic_write_in, create_in, open_dir, remove_in, rename_in

_CHUNK = 1 << 20
_FICLONE = 0x40049409


class NotKept(Exception):
    """The file could not be kept as it was read (the reason is the message)."""


class Keeper:
    """Where files are kept (``--keep-copy DEST``: a folder or an ``s3://`` prefix) and how the
    sources were read (``follow_links``: through a link only when the import was asked to)."""

    def __init__(self, dest: str, follow_links: bool = False) -> None:
        self.dest = dest
        self.follow_links = follow_links

    def keep(self, item: Found, row: Mapping[str, Any]) -> str:
        """Keep the file ``row`` says was read from ``item`` (its ``file_id``, ``size``,
        ``mtime_ns``, ``inode``), named by its SHA-256 and its name's suffixes; its place.
        :class:`NotKept` when it is no longer that file or the keep folder refuses it."""
        digest = str(row["file_id"])
        name = digest + "".join(Path(item.source).suffixes[-2:])
        try:
            if self.dest.startswith("s3://"):
                return self._to_s3(item, row, digest, name)
            return self._to_folder(item, row, digest, name)
        except OSError as exc:
            raise NotKept(f"not kept in {self.dest} ({exc.strerror or exc})") from None

    # -- S3 destination ----------------------------------------------------------------------

    def _to_s3(self, item: Found, row: Mapping[str, Any], digest: str, name: str) -> str:
        from botocore.exceptions import BotoCoreError, ClientError

        bucket, prefix = s3_split(self.dest)
        key = f"{prefix.rstrip('/')}/{name}" if prefix else name
        client = s3_client()
        try:
            if item.source.startswith("s3://"):  # server-side: the bytes never come here
                src_bucket, src_key = s3_split(item.source)
                extra = {"CopySourceIfMatch": item.etag} if item.etag else {}
                client.copy_object(
                    Bucket=bucket, Key=key, CopySource={"Bucket": src_bucket, "Key": src_key},
                    **extra,
                )  # fmt: skip
            else:
                data = self._local_bytes(item, row, digest)
                client.put_object(Bucket=bucket, Key=key, Body=data)
        except (BotoCoreError, ClientError) as exc:
            raise NotKept(f"not kept in {self.dest} ({exc})") from None
        return f"s3://{bucket}/{key}"

    def _local_bytes(self, item: Found, row: Mapping[str, Any], digest: str) -> bytes:
        fd = self._reopen(item, row)
        try:
            data = b"".join(_chunks(fd, int(row["size"]) + 1))
        finally:
            os.close(fd)
        _check(data, int(row["size"]), digest)
        return data

    # -- local destination -------------------------------------------------------------------

    def _to_folder(self, item: Found, row: Mapping[str, Any], digest: str, name: str) -> str:
        top = Path(self.dest)
        dfd = open_dir(top)
        try:
            if not _holds(dfd, name, digest, int(row["size"])):
                if item.source.startswith("s3://"):
                    from botocore.exceptions import BotoCoreError, ClientError

                    try:
                        data = _s3_bytes(item, row, digest)
                    except (BotoCoreError, ClientError) as exc:
                        raise NotKept(f"not kept: cannot read it again ({exc})") from None
                    atomic_write_in(dfd, name, data, TEMP_PREFIX, 0o600)
                else:
                    self._copy_local(dfd, name, item, row, digest)
        finally:
            os.close(dfd)
        return str(top.resolve() / name)

    def _copy_local(
        self, dfd: int, name: str, item: Found, row: Mapping[str, Any], digest: str
    ) -> None:
        src = self._reopen(item, row)
        try:
            st = os.fstat(src)
            mode = stat.S_IMODE(st.st_mode) & 0o644
            temp = _temp_name()
            if _linkable(st):
                try:  # the very inode read (through its descriptor, never its path again)
                    os.link(f"/proc/self/fd/{src}", temp, dst_dir_fd=dfd, follow_symlinks=True)
                except OSError:
                    _clone_or_copy(src, dfd, temp, int(row["size"]), mode)
            else:
                _clone_or_copy(src, dfd, temp, int(row["size"]), mode)
        finally:
            os.close(src)
        try:
            _check_entry(dfd, temp, int(row["size"]), digest)
            rename_in(dfd, temp, name)
        except BaseException:
            remove_in(dfd, temp)
            raise
        os.fsync(dfd)

    def _reopen(self, item: Found, row: Mapping[str, Any]) -> int:
        """The source opened again, without waiting on a FIFO: the descriptor, when it is the
        regular file read (same inode, size and mtime); else :class:`NotKept`."""
        flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
        if not self.follow_links:
            flags |= os.O_NOFOLLOW
        try:
            fd = os.open(item.path, flags)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise NotKept("not kept: it became a symbolic link after it was read") from None
            raise NotKept(f"not kept: cannot open it again ({exc.strerror or exc})") from None
        st = os.fstat(fd)
        same = (
            stat.S_ISREG(st.st_mode)
            and st.st_size == row.get("size")
            and st.st_mtime_ns == row.get("mtime_ns")
            and st.st_ino == row.get("inode")
        )
        if not same:
            os.close(fd)
            raise NotKept("not kept: it changed (or was replaced) after it was read")
        return fd


def _temp_name() -> str:
    return f"{TEMP_PREFIX}{os.urandom(12).hex()}.part"


def _linkable(st: os.stat_result) -> bool:
    """A hard link is a kept copy only when the file is this user's and nobody else can write
    it (else its owner could change the "kept" bytes later)."""
    return st.st_uid == os.geteuid() and not st.st_mode & 0o022 and st.st_nlink >= 1


def _holds(dfd: int, name: str, digest: str, size: int) -> bool:
    """Whether the folder's entry ``name`` is already the kept file: a regular file this user
    owns, nobody else can write, ``size`` bytes hashing to ``digest``. Anything else there
    (a link, a FIFO, someone else's file, other bytes) is replaced by the new copy."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        if not (stat.S_ISREG(st.st_mode) and _linkable(st) and st.st_size == size):
            return False
        return _digest(fd, size + 1) == digest
    finally:
        os.close(fd)


def _clone_or_copy(src: int, dfd: int, temp: str, size: int, mode: int) -> None:
    """A new file ``temp`` in the folder: a reflink of ``src`` where the file system can (one
    ioctl, no bytes moved), else a copy of at most ``size`` bytes; synced."""
    import fcntl

    out = create_in(dfd, temp, 0o600)
    try:
        try:
            fcntl.ioctl(out, _FICLONE, src)
        except OSError:  # one byte more than read: a file grown since is seen, not cut
            for part in _chunks(src, size + 1):
                view = memoryview(part)
                while view:
                    view = view[os.write(out, view) :]
        os.fchmod(out, mode)
        os.fsync(out)
    except BaseException:
        os.close(out)
        remove_in(dfd, temp)
        raise
    os.close(out)


def _check_entry(dfd: int, temp: str, size: int, digest: str) -> None:
    """The new entry holds exactly the bytes read (its size and SHA-256), else :class:`NotKept`."""
    fd = os.open(temp, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
    try:
        if os.fstat(fd).st_size != size or _digest(fd, size + 1) != digest:
            raise NotKept("not kept: its bytes changed after it was read")
    finally:
        os.close(fd)


def _s3_bytes(item: Found, row: Mapping[str, Any], digest: str) -> bytes:
    bucket, key = s3_split(item.source)
    extra = {"IfMatch": item.etag} if item.etag else {}
    body = s3_client().get_object(Bucket=bucket, Key=key, **extra)["Body"]
    with contextlib.closing(body):
        data = body.read(int(row["size"]) + 1)
    _check(data, int(row["size"]), digest)
    return data


def _check(data: bytes, size: int, digest: str) -> None:
    if len(data) != size or hashlib.sha256(data).hexdigest() != digest:
        raise NotKept("not kept: its bytes changed after it was read")


def _chunks(fd: int, most: int) -> Iterator[bytes]:
    """At most ``most`` bytes of ``fd`` from its start, a chunk at a time."""
    os.lseek(fd, 0, os.SEEK_SET)
    while most > 0:
        part = os.read(fd, min(most, _CHUNK))
        if not part:
            return
        yield part
        most -= len(part)


def _digest(fd: int, most: int) -> str:
    sha = hashlib.sha256()
    for part in _chunks(fd, most):
        sha.update(part)
    return sha.hexdigest()
