"""Where raw results live. The root is a URL: a local path or ``file://`` today; ``s3://`` is the
layout's purpose (Athena/Trino/Spark read it as it is) and plugs in here as another root kind."""

from __future__ import annotations

import errno
import gzip
import json
import os
import re
import stat
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from netfleet.durable import atomic_write
from netfleet.errors import InputError, StoreError
from netfleet.store.envelope import Envelope, upgrade

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

    def write(self, envelope: Envelope) -> Path:
        rel = partition_path(envelope)
        final = self.path / rel
        final.parent.mkdir(parents=True, exist_ok=True)
        _check_not_linked(final)  # never write through a d=/campaign= link out of the root
        data = gzip.compress(
            envelope.model_dump_json(exclude_none=False).encode(), compresslevel=6, mtime=0
        )
        return atomic_write(final, data, prefix=".tmp-", suffix=".part")

    def files(self) -> Iterator[Path]:
        """Every raw result file, in a stable order. Temp files (``.tmp-*``) are never listed."""
        if not self.path.exists():
            return iter(())
        return iter(sorted(self.path.glob("d=*/campaign=*/*.json.gz")))

    @staticmethod
    def read(path: Path) -> dict[str, Any]:
        """Decode one raw file and bring it to the current format version (see :func:`read_raw`)."""
        return read_raw(path)


#: bytes a raw result may inflate to (override: NETFLEET_MAX_RAW_BYTES)
MAX_RAW_BYTES = 256 * 1024 * 1024


def max_raw_bytes() -> int:
    raw = os.environ.get("NETFLEET_MAX_RAW_BYTES", "").strip()
    return int(raw) if raw.isdigit() and int(raw) > 0 else MAX_RAW_BYTES


def read_raw(path: Path) -> dict[str, Any]:
    """Decode one local raw file, treating it as hostile (the results directory may be shared):

    * a symbolic link — the file, or its ``d=``/``campaign=`` directory — is refused, so nothing
      outside the results root is read (``O_NOFOLLOW`` plus a resolved-path check);
    * it may inflate to :func:`max_raw_bytes` at most (a gzip bomb is refused, not inflated);
    * an envelope whose ``campaign`` or date disagrees with its ``campaign=``/``d=`` directory is
      refused: where a file sits is what it claims to be.

    Refusals are :class:`StoreError` and never quote the file's bytes."""
    _check_not_linked(path)
    limit = max_raw_bytes()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise StoreError(
                f"{path}: a symbolic link: not followed",
                hint="netfleet reads only regular files inside the results root",
            ) from None
        raise StoreError(f"{path}: cannot be read ({exc.strerror})") from None
    try:
        with os.fdopen(fd, "rb") as raw:
            if not stat.S_ISREG(os.fstat(raw.fileno()).st_mode):
                raise StoreError(f"{path}: not a regular file")
            with gzip.GzipFile(fileobj=raw, mode="rb") as fh:
                data = fh.read(limit + 1)
    except StoreError:
        raise
    except (OSError, EOFError, zlib.error) as exc:
        raise StoreError(
            f"{path}: unreadable raw result (not gzip, or cut short: {type(exc).__name__})",
            hint="move the file aside; it was not written by netfleet",
        ) from None
    if len(data) > limit:
        raise StoreError(
            f"{path}: inflates to more than {limit:,} bytes: skipped",
            hint="a raw result this large is not netfleet's; raise NETFLEET_MAX_RAW_BYTES if it is",
        )
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise StoreError(
            f"{path}: unreadable raw result (not UTF-8 JSON)",
            hint="move the file aside; it was not written by netfleet",
        ) from None
    if not isinstance(doc, dict):
        raise StoreError(f"{path}: a raw result must be a JSON object")
    doc = upgrade(doc, str(path))
    _check_partition(path, doc)
    return doc


def _check_not_linked(path: Path) -> None:
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


def _check_partition(path: Path, doc: dict[str, Any]) -> None:
    part = path.parent
    if not (part.name.startswith("campaign=") and part.parent.name.startswith("d=")):
        return
    campaign = part.name.removeprefix("campaign=")
    day = part.parent.name.removeprefix("d=")
    claimed = doc.get("campaign")
    if claimed != campaign:
        raise StoreError(
            f"{path}: the envelope says campaign {str(claimed)[:64]!r} but sits under "
            f"campaign={campaign}: refused",
            hint="a result's campaign is the directory it is stored in; move the file aside",
        )
    started = doc.get("started_at")
    if not isinstance(started, str) or started[:10] != day:
        raise StoreError(
            f"{path}: the envelope's started_at {str(started)[:32]!r} is not in its directory's "
            f"d={day}: refused",
            hint="a result's date is the directory it is stored in; move the file aside",
        )


def open_root(url: str | os.PathLike[str]) -> ResultsRoot:
    """Open a results root from a path or URL."""
    text = os.fspath(url)
    parsed = urlparse(text)
    if parsed.scheme in ("", "file"):
        return ResultsRoot(Path(parsed.path if parsed.scheme else text).expanduser())
    if parsed.scheme == "s3":
        raise InputError(
            f"results root {text!r}: the S3 store is not available in this version",
            hint="use a local directory; the same layout can be synced to S3",
        )
    raise InputError(
        f"results root {text!r}: unknown scheme {parsed.scheme!r}",
        hint="use a local path or file:// URL",
    )
