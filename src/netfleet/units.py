"""Parsing and formatting of rates, sizes and durations used in specs and lab files.

Rates are bits per second; sizes are bytes. Suffixes follow tc(8): ``kbit mbit gbit`` are
decimal bits, ``kb mb gb`` decimal bytes (tc's ``k``/``m`` in sizes are binary: avoided here),
``kib mib gib`` binary bytes.
"""

from __future__ import annotations

import re

_RATE = {
    "bit": 1,
    "kbit": 1e3,
    "mbit": 1e6,
    "gbit": 1e9,
    "tbit": 1e12,
    "bps": 8,
    "kbps": 8e3,
    "mbps": 8e6,
    "gbps": 8e9,
}
_SIZE = {
    "b": 1,
    "kb": 1e3,
    "mb": 1e6,
    "gb": 1e9,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "kbit": 1e3 / 8,
    "mbit": 1e6 / 8,
    "gbit": 1e9 / 8,
}
_NUM = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*$")


def parse_rate(value: str | int | float) -> float:
    """``"500mbit"`` → 500e6 bits/s. A bare number is bits/s."""
    if isinstance(value, int | float):
        if value <= 0:
            raise ValueError("a rate must be positive")
        return float(value)
    m = _NUM.match(str(value))
    unit = m.group(2).lower() if m else ""
    if not m or (unit and unit not in _RATE):
        raise ValueError(
            f"{value!r} is not a rate: write a number with a unit, e.g. 300mbit, 1.5gbit"
            " (units: bit kbit mbit gbit; bps kbps mbps gbps are bytes/s)"
        )
    rate = float(m.group(1)) * _RATE.get(unit, 1)
    if rate <= 0:
        raise ValueError("a rate must be positive")
    return rate


def parse_size(value: str | int | float) -> float:
    """``"800mb"`` → 800e6 bytes; ``"6750mbit"`` → 843.75e6 bytes. A bare number is bytes."""
    if isinstance(value, int | float):
        if value <= 0:
            raise ValueError("a size must be positive")
        return float(value)
    m = _NUM.match(str(value))
    unit = m.group(2).lower() if m else ""
    if not m or (unit and unit not in _SIZE):
        raise ValueError(
            f"{value!r} is not a size: write a number with a unit, e.g. 64kb, 800mb, 6750mbit"
            " (units: b kb mb gb kib mib gib, or kbit mbit gbit)"
        )
    size = float(m.group(1)) * _SIZE.get(unit, 1)
    if size <= 0:
        raise ValueError("a size must be positive")
    return size


def fmt_rate(bits_per_second: float) -> str:
    """Human form of a rate: ``1.23 Gbit/s``."""
    for unit, scale in (("Gbit/s", 1e9), ("Mbit/s", 1e6), ("kbit/s", 1e3)):
        if abs(bits_per_second) >= scale:
            return f"{bits_per_second / scale:.2f} {unit}"
    return f"{bits_per_second:.0f} bit/s"


def goodput_ratio(mtu: int = 1500, tcp_timestamps: bool = True, l2_header: int = 14) -> float:
    """TCP goodput / L2 wire rate for full-sized segments: 1448/1514 at MTU 1500 with timestamps."""
    mss = mtu - 40 - (12 if tcp_timestamps else 0)
    return mss / (mtu + l2_header)
