"""Where raw results live. The root is a URL: a local path, ``file://`` or ``s3://bucket/prefix``
(:mod:`netfleet.store.s3`; Athena/Trino/Spark read the layout as it is). Both kinds offer the
same small interface, :data:`RawStore`: ``url``, ``write``, ``files``, ``glob``, ``read``,
``journal_root`` (always local) and ``flush_pending``."""

from __future__ import annotations

import gzip
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol
from urllib.parse import urlparse

from netfleet.errors import InputError, StoreError
from netfleet.store.durable import atomic_write_bytes
from netfleet.store.envelope import Envelope, upgrade
from netfleet.store.s3 import RAW_GLOB, parse_s3_url

_SAFE = re.compile(r"^[A-Za-z0-9._-]+$")


def partition_path(envelope: Envelope) -> str:
    """Relative key of a run: ``d=YYYY-MM-DD/campaign=NAME/<run_id>.json.gz`` (UTC date)."""
    for what, value in (("campaign", envelope.campaign), ("run_id", envelope.run_id)):
        if not _SAFE.match(value):
            raise StoreError(
                f"{what} {value!r} cannot be part of a result path",
                hint="use letters, digits, '.', '_' and '-' only",
            )
    day = envelope.started_at[:10]
    return f"d={day}/campaign={envelope.campaign}/{envelope.run_id}.json.gz"


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

    def glob(self, pattern: str) -> list[Path]:
        """Raw files whose path relative to the root matches ``pattern`` (sorted)."""
        if not self.path.exists():
            return []
        return sorted(self.path.glob(pattern))

    def write(self, envelope: Envelope) -> Path:
        rel = partition_path(envelope)
        data = gzip.compress(
            envelope.model_dump_json(exclude_none=False).encode(), compresslevel=6, mtime=0
        )
        return atomic_write_bytes(self.path / rel, data)

    def files(self) -> Iterator[Path]:
        """Every raw result file, in a stable order. Temp files (``.tmp-*``) are never listed."""
        return iter(self.glob(RAW_GLOB))

    @staticmethod
    def read(path: Path | str) -> dict[str, Any]:
        """Decode one raw file and bring it to the current format version."""
        return decode_raw(path, str(path))


def decode_raw(source: Path | str | IO[bytes], where: str) -> dict[str, Any]:
    """Decode a raw result (a file path or a binary stream; ``where`` names it in errors) and
    bring it to the current format version."""
    try:
        with gzip.open(source, "rt", encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, EOFError, ValueError) as exc:
        raise StoreError(
            f"{where}: unreadable raw result ({exc})",
            hint="move it aside; it was not written by netfleet",
        ) from exc
    if not isinstance(doc, dict):
        raise StoreError(f"{where}: a raw result must be a JSON object")
    return upgrade(doc, where)


class RawStore(Protocol):
    """A results root of either kind (:class:`ResultsRoot` local, :class:`S3Root`). A *ref* is
    what ``files``/``glob`` return (a ``Path`` or an ``S3Object``) and ``read`` accepts."""

    @property
    def url(self) -> str: ...

    @property
    def journal_root(self) -> Path: ...

    def write(self, envelope: Envelope) -> Any: ...

    def files(self) -> Iterator[Any]: ...

    def glob(self, pattern: str) -> list[Any]: ...

    def read(self, ref: Any) -> dict[str, Any]: ...

    def flush_pending(self) -> list[str]: ...


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
