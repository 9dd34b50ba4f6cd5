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


#: the one home of the goodput/wire arithmetic: Ethernet L2 header (no FCS, as counted by the
#: kernel and tbf), IP + TCP headers + the timestamp option of a full-sized segment, default MTU
L2_HEADER = 14
TCP_IP_OVERHEAD = 40 + 12
DEFAULT_MTU = 1500


def goodput_ratio(
    mtu: int = DEFAULT_MTU, tcp_timestamps: bool = True, l2_header: int = L2_HEADER
) -> float:
    """TCP goodput / L2 wire rate for full-sized segments: 1448/1514 at MTU 1500 with timestamps."""
    mss = mtu - 40 - (12 if tcp_timestamps else 0)
    return mss / (mtu + l2_header)


#: goodput / wire at MTU 1500 with TCP timestamps (1448/1514)
GOODPUT_PER_WIRE = goodput_ratio()


def wire_factor(mtu: int | None, protocol: str | None) -> float | None:
    """wire rate / goodput for full-sized TCP segments with timestamps: (MTU + 14)/(MTU − 52)
    (1514/1448 at MTU 1500, the inverse of :func:`goodput_ratio`). ``None`` for UDP, whose
    datagram size is not known here."""
    if protocol not in (None, "tcp"):
        return None
    m = mtu or DEFAULT_MTU
    return (m + L2_HEADER) / (m - TCP_IP_OVERHEAD)


#: display units of a rate: name → (bits per second in one unit, label without "/s")
RATE_UNITS: dict[str, tuple[float, str]] = {
    "bit": (1.0, "bit"),
    "kbit": (1e3, "kbit"),
    "mbit": (1e6, "Mbit"),
    "gbit": (1e9, "Gbit"),
    "tbit": (1e12, "Tbit"),
}


def rate_unit(unit: str, fastest: float = 0.0) -> tuple[float, str]:
    """Scale and label (without "/s") of a display unit; ``auto`` picks Gbit from 1 Gbit/s up,
    else Mbit (a lab runs at Mbit/s, a cloud at Gbit/s). An unknown unit is an input error."""
    from netfleet.errors import InputError

    if unit.lower() == "auto":
        return RATE_UNITS["gbit"] if fastest >= 1e9 or fastest == 0.0 else RATE_UNITS["mbit"]
    try:
        return RATE_UNITS[unit.lower()]
    except KeyError:
        raise InputError(
            f"unknown unit {unit!r}", hint=f"use auto or one of {', '.join(RATE_UNITS)}"
        ) from None
