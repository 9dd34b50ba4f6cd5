"""Parsing and formatting of rates, sizes and durations used in specs and lab files.

Rates are bits per second; sizes are bytes. Written so they cannot be misread:

* rates in **bits**: ``300mbit``, ``300Mbit/s``, ``300Mb/s``, ``2.5gbit``, or iperf3's bare
  suffix ``300M`` (iperf3's ``-b`` counts bits); decimal (k = 10³);
* rates in **bytes** only with an explicit ``/s``: ``40MB/s``, ``40MByte/s``;
* ``bps kbps mbps gbps`` are refused: AWS writes "Gbps" for gigabits, tc(8) reads ``mbps`` as
  megabytes — the error offers both readings;
* sizes: ``kb mb gb`` (any case) are decimal bytes, ``kib mib gib`` binary bytes, iperf3's bare
  ``K M G`` binary bytes (as ``-w 512K``), ``kbit mbit gbit`` bits (a bucket of ``2700gbit``);
* credit buckets (:func:`parse_credit`) are sizes without the bare ``K M G``: ``2700G`` beside
  ``--peak 10G`` (Gbit/s) is refused as "2700gbit or 2700GiB?".

A bare number is bits/s (rates) or bytes (sizes). Values above :data:`MAX_RATE` /
:data:`MAX_SIZE` are refused as a unit mistake.
"""

from __future__ import annotations

import re

#: the fastest rate any spec may name: above every NIC and any fleet's total (a unit slip)
MAX_RATE = 10e12
#: the largest size any spec may name (1 PB): above any window, file or credit bucket
MAX_SIZE = 1e15


def plausible_rate(value: object) -> bool:
    """A measured rate a link can carry: a finite number of bits/s from 0 to :data:`MAX_RATE`
    (NaN, infinite, negative or larger values are a broken or forged result, never averaged)."""
    kind = type(value)
    if kind is float or kind is int:  # the common cases first (a hot path)
        return 0 <= value <= MAX_RATE  # type: ignore[operator]
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return 0 <= value <= MAX_RATE  # False for NaN; inf is above MAX_RATE


_PREFIX = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}
_BINARY = {"k": 1024.0, "m": 1024.0**2, "g": 1024.0**3, "t": 1024.0**4}
_NUM = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)\s*([a-zA-Z/]*)\s*$")
#: "500mbit", "500Mbit/s", "500Mb/s", "500mb/s", "500M" (iperf3), "500bit"
_RATE_BITS = re.compile(r"^(?P<p>[kKmMgGtT]?)(?:bits?(?:/s(?:ec)?)?|b/s)?$")
#: "40MB/s", "40MByte/s", "40mbyte/s", "40B/s"
_RATE_BYTES = re.compile(r"^(?P<p>[kKmMgGtT]?)(?:B|[bB]ytes?)/s$")
_AMBIGUOUS = re.compile(r"^(?P<p>[kKmMgGtT]?)bps$", re.IGNORECASE)
_RATE_UNITS = "bit kbit mbit gbit (or Mbit/s, iperf3's 300M), bytes as MB/s or MByte/s"


def parse_rate(value: str | int | float) -> float:
    """``"500mbit"`` / ``"500Mbit/s"`` / ``"500M"`` → 500e6 bits/s; ``"40MB/s"`` → 320e6."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a rate: write e.g. 300mbit")
    if isinstance(value, int | float):
        return _bounded_rate(float(value), str(value))
    text = str(value)
    m = _NUM.match(text)
    if not m:
        raise ValueError(f"{text!r} is not a rate: write a number with a unit, e.g. 300mbit")
    number, unit = float(m.group(1)), m.group(2)
    if amb := _AMBIGUOUS.match(unit):
        p = amb["p"].lower()
        word = {"": "", "k": "kilo", "m": "mega", "g": "giga", "t": "tera"}[p]
        n, big = m.group(1), p.upper()
        raise ValueError(
            f"{text!r} is ambiguous: '{unit}' means {word}bits/s to AWS but {word}bytes/s to "
            f"tc(8). Write {n}{p}bit for {big}bit/s (bits), or {n}{big}B/s for {big}Byte/s "
            "(bytes, 8× more)"
        )
    if bits := _RATE_BITS.match(unit):
        return _bounded_rate(number * _PREFIX[bits["p"].lower()], text)
    if byte := _RATE_BYTES.match(unit):
        return _bounded_rate(number * _PREFIX[byte["p"].lower()] * 8, text)
    if re.fullmatch(r"[kKmMgGtT]?(B|[bB]ytes?)", unit):
        raise ValueError(
            f"{text!r}: a rate in bytes needs '/s' ({m.group(1)}{unit}/s), or write bits "
            f"({_RATE_UNITS})"
        )
    raise ValueError(f"{text!r} is not a rate: units are {_RATE_UNITS}")


def _bounded_rate(rate: float, text: str) -> float:
    if rate <= 0:
        raise ValueError("a rate must be positive")
    if rate > MAX_RATE:
        raise ValueError(
            f"{text!r} is {fmt_rate(rate)}, above {fmt_rate(MAX_RATE)}: check the unit "
            "(rates are bits/s: 300mbit, 10gbit)"
        )
    return rate


#: size units (lower case) → bytes; iperf3's bare K/M/G are handled case-sensitively below
_SIZE = {
    "": 1.0,
    "b": 1.0,
    "byte": 1.0,
    "bytes": 1.0,
    "kb": 1e3,
    "mb": 1e6,
    "gb": 1e9,
    "tb": 1e12,
    "kbyte": 1e3,
    "mbyte": 1e6,
    "gbyte": 1e9,
    "tbyte": 1e12,
    "kib": 1024.0,
    "mib": 1024.0**2,
    "gib": 1024.0**3,
    "tib": 1024.0**4,
    "bit": 1 / 8,
    "kbit": 1e3 / 8,
    "mbit": 1e6 / 8,
    "gbit": 1e9 / 8,
    "tbit": 1e12 / 8,
}


def parse_size(value: str | int | float) -> float:
    """``"800mb"`` → 800e6 bytes; ``"512K"`` (iperf3) → 524288; ``"6750mbit"`` → 843.75e6."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a size: write e.g. 64kb")
    if isinstance(value, int | float):
        return _bounded_size(float(value), str(value))
    text = str(value)
    m = _NUM.match(text)
    unit = m.group(2) if m else ""
    if m and unit in ("K", "M", "G", "T"):
        return _bounded_size(float(m.group(1)) * _BINARY[unit.lower()], text)
    if not m or unit.lower() not in _SIZE:
        raise ValueError(
            f"{value!r} is not a size: write a number with a unit, e.g. 64kb, 800mb, 6750mbit"
            " (units: b kb mb gb (decimal bytes), kib mib gib or iperf3's K M G (binary bytes),"
            " kbit mbit gbit (bits))"
        )
    return _bounded_size(float(m.group(1)) * _SIZE[unit.lower()], text)


def parse_credit(value: str) -> float:
    """A credit bucket in **bits** (1 credit = 1 Gbit): ``"2700gbit"`` → 2.7e12. Any size unit
    :func:`parse_size` reads works (``"337.5GB"`` = 337.5e9 bytes), except iperf3's bare
    ``K M G T``: beside rates where ``10G`` is 10 Gbit/s, ``2700G`` as 2700 GiB (8.6× more)
    is a trap, so it is refused with both readings. A bare number is refused too: a unit
    must say bits or bytes."""
    m = _NUM.match(str(value))
    if m and (m.group(2) in ("", "K", "M", "G", "T") or m.group(2).lower() in ("k", "m", "g", "t")):
        n, p = m.group(1), m.group(2).lower()
        if not p:
            raise ValueError(f"{value!r}: give a unit (credits are Gbit: {n}gbit)")
        raise ValueError(
            f"{value!r}: {n}{p}bit or {n}{p.upper()}iB? A credit is a Gbit: write {n}{p}bit "
            f"(bits) or {n}{p.upper()}iB (binary bytes, ×{_BINARY[p] * 8 / _PREFIX[p]:.3g})"
        )
    return parse_size(value) * 8


def _bounded_size(size: float, text: str) -> float:
    if size <= 0:
        raise ValueError("a size must be positive")
    if size > MAX_SIZE:
        raise ValueError(
            f"{text!r} is {size:.3g} bytes, above {MAX_SIZE:.0e} (1 PB): check the unit"
        )
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
