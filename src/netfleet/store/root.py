"""Where raw results live. The root is a URL: a local path or ``file://`` today; ``s3://`` is the
layout's purpose (Athena/Trino/Spark read it as it is) and plugs in here as another root kind."""

from __future__ import annotations

import gzip
import json
import os
import re
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
        """Decode one raw file and bring it to the current format version."""
        try:
            with gzip.open(path, "rt", encoding="utf-8") as fh:
                doc = json.load(fh)
        except (OSError, EOFError, ValueError) as exc:
            raise StoreError(
                f"{path}: unreadable raw result ({exc})",
                hint="move the file aside; it was not written by netfleet",
            ) from exc
        if not isinstance(doc, dict):
            raise StoreError(f"{path}: a raw result must be a JSON object")
        return upgrade(doc, str(path))


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
