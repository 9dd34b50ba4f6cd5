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
    values = max_json_values()
    if values_bound(text) > values:
        return (
            f"holds more than {values:,} JSON values (one per {BYTES_PER_VALUE} bytes of the "
            f"{limit:,} of {ENV})"
        )
    return None
