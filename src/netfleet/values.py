"""Tolerant coercion of JSON values into typed columns: a wrong type becomes NULL, never a crash."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

_EMPTY: Mapping[str, Any] = {}
_INT64 = range(-(2**63), 2**63)


def obj(value: Any) -> Mapping[str, Any]:
    """``value`` if it is a JSON object, else an empty one."""
    if type(value) is dict:  # the common case, without the ABC check (a hot path of ingest)
        return value
    return value if isinstance(value, Mapping) else _EMPTY


def as_int(value: Any) -> int | None:
    """An integer that fits the int64 columns, else None."""
    number: int | None = None
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        number = value
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        number = int(value)
    elif isinstance(value, str):
        try:
            number = int(value.strip())
        except ValueError:
            return None
    return number if number is not None and number in _INT64 else None


def as_float(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        number = float(value)
        return number if math.isfinite(number) else None
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


def as_bool(value: Any) -> bool | None:
    """JSON booleans, and iperf3's 0/1 integers (``test_start.reverse``)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    return None


def as_str(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)
