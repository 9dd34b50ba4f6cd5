"""A raw result file as stored: its key (``d=…/campaign=…/<run_id>.json.gz``), its gzip bytes,
and decoding one with the size cap, the format upgrade and the partition check. Both kinds of
results root (:mod:`netfleet.store.root` local, :mod:`netfleet.store.s3`) use it."""

from __future__ import annotations

import gzip
import re
import zlib
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from netfleet.errors import StoreError
from netfleet.store.limits import MAX_RAW_BYTES as MAX_RAW_BYTES
from netfleet.store.limits import max_raw_bytes as max_raw_bytes
from netfleet.store.limits import too_large

if TYPE_CHECKING:  # the models (pydantic) when a file is decoded: a no-op ingest needs none
    from netfleet.store.envelope import Envelope

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


#: gzip level of a raw file: an imported file's envelope is mostly its original's gzip bytes
#: (base64), which no level shrinks; level 3 against 6 halves the time (1.3 against 2.6 ms for
#: a seed-002 file) for 9 % more bytes
GZIP_LEVEL = 3


def encode(envelope: Envelope, *, readable: bool = False) -> tuple[str, bytes]:
    """A run as it is stored: its relative key (:func:`partition_path`) and its gzip bytes.
    With ``readable``, a run that ``ingest`` could never read (:func:`~netfleet.store.limits.
    too_large`) is refused with a :class:`StoreError` whose message is the reason."""
    text = envelope.model_dump_json(exclude_none=False).encode()
    why = too_large(text) if readable else None
    if why:
        raise StoreError(why)
    return partition_path(envelope), gzip.compress(text, compresslevel=GZIP_LEVEL, mtime=0)


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


def decode_raw(source: Path | str | IO[bytes], where: str) -> dict[str, Any]:
    """Decode a raw result (a file path or a binary stream; ``where`` names it in errors: a
    path, or an ``s3://`` URL) with the size cap, bring it to the current format version and
    check it against its ``d=``/``campaign=`` partition."""
    limit = max_raw_bytes()
    try:
        with gzip.open(source, "rb") as fh:
            data = fh.read(limit + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise StoreError(
            f"{where}: unreadable raw result (not gzip, or cut short: {type(exc).__name__})",
            hint="move it aside; it was not written by netfleet",
        ) from None
    why = too_large(data)
    if why:
        raise StoreError(
            f"{where}: {why}: skipped",
            hint="a raw result this large is not netfleet's; raise NETFLEET_MAX_RAW_BYTES if it is",
        )
    from netfleet.jsonparse import loads  # json.loads's values, a third of its time

    try:
        doc = loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise StoreError(
            f"{where}: unreadable raw result (not UTF-8 JSON)",
            hint="move it aside; it was not written by netfleet",
        ) from None
    if not isinstance(doc, dict):
        raise StoreError(f"{where}: a raw result must be a JSON object")
    from netfleet.store.envelope import upgrade

    doc = upgrade(doc, where)
    # an object's key is what it claims to be, as for a local file's directory
    _check_partition(Path(where.split("://", 1)[-1]), doc)
    return doc
