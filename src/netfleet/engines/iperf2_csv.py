"""iperf 2's ``-y C`` CSV lines: parsed, and split into interval and final lines. Shared by the
engine (its run summary) and its catalog rows."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CsvLine:
    """One ``-y C`` line."""

    src: str
    sport: int
    dst: str
    dport: int
    stream: int
    start: float
    end: float
    bytes: int
    bps: float
    jitter_ms: float | None = None
    lost: int | None = None
    total: int | None = None
    lost_percent: float | None = None
    out_of_order: int | None = None


def parse_csv(text: str) -> list[CsvLine]:
    """Every well-formed CSV line of iperf2 output; anything else is skipped."""
    out = []
    for raw in text.splitlines():
        f = raw.strip().split(",")
        if len(f) not in (9, 14) or "-" not in f[6]:
            continue
        try:
            start, end = (float(x) for x in f[6].split("-", 1))
            udp: dict[str, Any] = {}
            if len(f) == 14:
                udp = {
                    "jitter_ms": float(f[9]),
                    "lost": int(f[10]),
                    "total": int(f[11]),
                    "lost_percent": float(f[12]),
                    "out_of_order": int(f[13]),
                }
            line = CsvLine(
                f[1], int(f[2]), f[3], int(f[4]), int(f[5]), start, end, int(f[7]), float(f[8]),
                **udp,
            )  # fmt: skip
        except ValueError:
            continue
        if not all(math.isfinite(x) for x in (start, end, line.bps)):
            continue  # "nan"/"inf" from a misbehaving (or hostile) host is not a measurement
        out.append(line)
    return out


def split_finals(lines: list[CsvLine], interval: float) -> tuple[list[CsvLine], list[CsvLine]]:
    """(interval lines, final summary lines). A stream's final line starts at 0 and spans more
    than one interval, or repeats the span of its first interval (a run of one interval)."""
    intervals: list[CsvLine] = []
    finals: list[CsvLine] = []
    seen: dict[tuple[int, float, float], int] = {}
    for line in lines:
        if line.stream < 0:
            continue  # a sum line: netfleet sums the streams itself
        key = (line.stream, round(line.start, 3), round(line.end, 3))
        long_span = line.start == 0 and line.end - line.start > interval * 1.5
        if long_span or key in seen:
            finals.append(line)
        else:
            seen[key] = 1
            intervals.append(line)
    return intervals, finals
