"""When the next round of a watch is due: ``--every 6h`` (or the spec's ``watch.every``) as
seconds, and the round times as a pure function of the start and the clock — the loop takes an
injectable clock, so it is tested without waiting six hours."""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass
from typing import Protocol

from netfleet.errors import InputError

_EVERY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min|h|d)?\s*$", re.IGNORECASE)
_SECONDS = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}
#: a schedule shorter than this is a typo (every run would overlap the next)
MIN_EVERY = 1.0
MAX_EVERY = 366 * 86400.0


def parse_every(text: str | float, field: str = "--every") -> float:
    """``6h``, ``30m``, ``90s``, ``1d`` or a bare number of seconds → seconds."""
    if isinstance(text, int | float):
        seconds = float(text)
    else:
        m = _EVERY.match(text)
        if not m:
            raise InputError(f"{field}: {text!r} is not a duration", hint="e.g. 6h, 30m, 90s or 1d")
        seconds = float(m.group(1)) * _SECONDS[(m.group(2) or "s").lower()]
    if not (MIN_EVERY <= seconds <= MAX_EVERY) or not math.isfinite(seconds):
        raise InputError(
            f"{field}: {text!r} is out of range",
            hint=f"between {MIN_EVERY:g} s and 366 d, e.g. 6h",
        )
    return seconds


def fmt_every(seconds: float) -> str:
    """The shortest exact spelling: 21600 → ``6h``; systemd reads the same units."""
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def next_due(start: float, every: float, now: float) -> float:
    """The first round time ``start + k·every`` (k ≥ 1) after ``now``: a round that overran
    its slot makes the missed slots be skipped, not run back to back."""
    if now < start:
        return start
    k = math.floor((now - start) / every) + 1
    return start + k * every


class Clock(Protocol):
    def now(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


@dataclass
class WallClock:
    """The real clock (``time.time`` / ``time.sleep``)."""

    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)
