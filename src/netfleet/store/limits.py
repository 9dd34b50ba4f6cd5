"""The one size limit of a raw result, shared by ``netfleet import`` (which refuses a file whose
envelope would break it) and ``ingest`` (which skips a raw file that breaks it), so import never
accepts what ingest can never read (issue 23).

A raw result may inflate to :func:`max_raw_bytes` (``NETFLEET_MAX_RAW_BYTES``, default 256 MiB)
and hold at most :func:`max_json_values` JSON values (that many bytes / 12; real iperf3 output
has some 23 bytes a value, its compact copy 15, so for it the byte limit is met first): memory
once parsed grows with the values, not the bytes (``[0,0,…]`` is 2 bytes a value in the file,
some 30 in memory), so both are checked before the text is parsed.
"""

from __future__ import annotations

import os
from typing import Protocol

#: bytes a raw result may inflate to (override: NETFLEET_MAX_RAW_BYTES)
MAX_RAW_BYTES = 256 * 1024 * 1024
#: at most one JSON value per this many bytes of the limit
BYTES_PER_VALUE = 12
ENV = "NETFLEET_MAX_RAW_BYTES"


def max_raw_bytes() -> int:
    raw = os.environ.get(ENV, "").strip()
    return int(raw) if raw.isdigit() and int(raw) > 0 else MAX_RAW_BYTES


def max_json_values() -> int:
    return max(1, max_raw_bytes() // BYTES_PER_VALUE)


def values_bound(text: bytes) -> int:
    """An upper bound of the JSON values in ``text``, without parsing it: each value but the
    first of an array or object follows a comma, each first one an opening bracket."""
    return text.count(b",") + text.count(b"[") + text.count(b"{") + 1


def too_large(text: bytes, size: int | None = None) -> str | None:
    """Why a raw result's (inflated) JSON ``text`` breaks the limit, or None. ``size`` is its
    byte count when ``text`` holds only part of it."""
    limit = max_raw_bytes()
    if (len(text) if size is None else size) > limit:
        return f"inflates to more than {limit:,} bytes ({ENV})"
    if len(text) < max_json_values():  # one value per byte at most: no need to count them
        return None
    return _values_reason() if values_bound(text) > max_json_values() else None


class Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


#: bytes :func:`stream_too_large` reads at a time
CHUNK = 1 << 20


def stream_too_large(fh: Readable) -> str | None:
    """:func:`too_large` of a whole (inflated) stream, read a chunk at a time — memory stays
    at one chunk — for a reader that cannot count JSON values itself (ingest's DuckDB fast
    path), so one limit governs every reader. Stops at the first byte past the limit."""
    limit = max_raw_bytes()
    size = bound = 0
    while size <= limit:
        chunk = fh.read(CHUNK)
        if not chunk:
            break
        size += len(chunk)
        bound += chunk.count(b",") + chunk.count(b"[") + chunk.count(b"{")
    if size > limit:
        return f"inflates to more than {limit:,} bytes ({ENV})"
    return _values_reason() if bound + 1 > max_json_values() else None


def _values_reason() -> str:
    return (
        f"holds more than {max_json_values():,} JSON values (one per {BYTES_PER_VALUE} bytes "
        f"of the {max_raw_bytes():,} of {ENV})"
    )
