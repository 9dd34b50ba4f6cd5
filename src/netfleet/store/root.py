"""Where raw results live. The root is a URL: a local path, ``file://`` or ``s3://bucket/prefix``
(:mod:`netfleet.store.s3`; Athena/Trino/Spark read the layout as it is). Both kinds offer the
same small interface, :data:`RawStore`: ``url``, ``write``, ``files``, ``glob``, ``read``,
``journal_root`` (always local) and ``flush_pending``."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlparse

from netfleet.durable import atomic_write, checked_dir, write_group
from netfleet.errors import InputError, StoreError
from netfleet.store.rawfile import decode_raw, encode
from netfleet.store.s3 import RAW_GLOB, parse_s3_url

if TYPE_CHECKING:
    from netfleet.store.envelope import Envelope


@dataclass(frozen=True)
class ResultsRoot:
    """A local results root. Writes are atomic: temp file in the same directory, fsync, rename."""

    path: Path

    @property
    def url(self) -> str:
        return str(self.path)

    @property
    def journal_root(self) -> Path:
        """Where the campaign journals live: inside the root (``.netfleet/``)."""
        return self.path

    def flush_pending(self) -> list[str]:
        """Nothing is ever pending locally (writes are synchronous); see :class:`S3Root`."""
        return []

    def check_access(self) -> None:
        """Nothing to check ahead: a local write fails at once, before any host exists."""

    def glob(self, pattern: str) -> list[Path]:
        """Raw files whose path relative to the root matches ``pattern`` (sorted)."""
        if not self.path.exists():
            return []
        return sorted(self.path.glob(pattern))

    def write(self, envelope: Envelope) -> Path:
        return self.write_encoded(*encode(envelope))

    def write_encoded(self, rel: str, data: bytes) -> Path:
        """Store what :func:`encode` made (an import encodes in worker processes)."""
        return atomic_write(self._final(rel), data, prefix=".tmp-", suffix=".part")

    def write_encoded_many(self, items: Sequence[tuple[str, bytes]]) -> list[Path]:
        """Store many at once (an import): each atomically, the filesystem synced per group
        rather than per file (:func:`netfleet.durable.write_group`)."""
        finals = [(self._final(rel), data) for rel, data in items]
        return write_group(finals, prefix=".tmp-", suffix=".part")

    def has(self, rel: str) -> bool:
        """Whether a raw result is stored at ``rel`` (a file or anything else at its name)."""
        return os.path.lexists(self.path / rel)

    def _final(self, rel: str) -> Path:
        """Where ``rel`` is stored, its directories made; never through a d=/campaign= link
        out of the root (:func:`netfleet.durable.checked_dir`)."""
        *dirs, name = rel.split("/")
        return checked_dir(self.path, *dirs) / name

    def files(self) -> Iterator[Path]:
        """Every raw result file, in a stable order. Temp files (``.tmp-*``) are never listed."""
        return iter(self.glob(RAW_GLOB))

    @staticmethod
    def read(path: Path | str) -> dict[str, Any]:
        """Decode one raw file and bring it to the current format version (see :func:`read_raw`)."""
        return read_raw(Path(path))


def read_raw(path: Path) -> dict[str, Any]:
    """Decode one local raw file, treating it as hostile (the results directory may be shared):

    * a symbolic link — the file, or its ``d=``/``campaign=`` directory — is refused, so nothing
      outside the results root is read (``O_NOFOLLOW`` plus a resolved-path check);
    * it may inflate to :func:`max_raw_bytes` at most (a gzip bomb is refused, not inflated);
    * an envelope whose ``campaign`` or date disagrees with its ``campaign=``/``d=`` directory is
      refused: where a file sits is what it claims to be.

    Refusals are :class:`StoreError` and never quote the file's bytes."""
    check_not_linked(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise StoreError(
                f"{path}: a symbolic link: not followed",
                hint="netfleet reads only regular files inside the results root",
            ) from None
        raise StoreError(f"{path}: cannot be read ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as raw:
        try:
            regular = stat.S_ISREG(os.fstat(raw.fileno()).st_mode)
        except OSError as exc:
            raise StoreError(f"{path}: cannot be read ({exc.strerror})") from None
        if not regular:
            raise StoreError(f"{path}: not a regular file")
        return decode_raw(raw, str(path))


def check_not_linked(path: Path) -> None:
    """The ``d=``/``campaign=`` directories of ``path`` are real directories, not links out."""
    part = path.parent
    if not (part.name.startswith("campaign=") and part.parent.name.startswith("d=")):
        return
    top = part.parent.parent
    if os.path.realpath(part) != os.path.join(os.path.realpath(top), part.parent.name, part.name):
        raise StoreError(
            f"{path}: its directory is a symbolic link: not followed",
            hint="netfleet reads only regular files inside the results root",
        )


class RawStore(Protocol):
    """A results root of either kind (:class:`ResultsRoot` local, :class:`S3Root`). A *ref* is
    what ``files``/``glob`` return (a ``Path`` or an ``S3Object``) and ``read`` accepts."""

    @property
    def url(self) -> str: ...

    @property
    def journal_root(self) -> Path: ...

    def write(self, envelope: Envelope) -> Any: ...

    def write_encoded(self, rel: str, data: bytes) -> Any: ...

    def write_encoded_many(self, items: Sequence[tuple[str, bytes]]) -> list[Any]: ...

    def has(self, rel: str) -> bool: ...

    def files(self) -> Iterator[Any]: ...

    def glob(self, pattern: str) -> list[Any]: ...

    def read(self, ref: Any) -> dict[str, Any]: ...

    def flush_pending(self) -> list[str]: ...

    def check_access(self) -> None:
        """Raise StoreError now if this session could not store its results (before any host
        is acquired: an S3 root is probed with a write and a delete)."""


def open_root(url: str | os.PathLike[str]) -> RawStore:
    """Open a results root from a path or URL."""
    text = os.fspath(url)
    parsed = urlparse(text)
    if parsed.scheme in ("", "file"):
        return ResultsRoot(Path(parsed.path if parsed.scheme else text).expanduser())
    if parsed.scheme == "s3":
        return parse_s3_url(text)
    raise InputError(
        f"results root {text!r}: unknown scheme {parsed.scheme!r}",
        hint="use a local path, a file:// URL or s3://BUCKET/PREFIX",
    )


def as_root(root: RawStore | str | os.PathLike[str]) -> RawStore:
    """``root`` itself if it is already an opened root, else :func:`open_root` of it."""
    if isinstance(root, str | os.PathLike):
        return open_root(root)
    return root
