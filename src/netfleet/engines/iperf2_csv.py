"""iperf 2's output lines (``-y C`` CSV, and ``-e``/plain text for imports): parsed, and split
into interval and final lines. Shared by the engine (its run summary), its catalog rows and
``netfleet import``."""

from __future__ import annotations

import math
import re
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


#: an interval line of iperf2's text output (``-e`` or plain): ``[  1] 0.0000-1.0000 sec  547 MBytes
#: 4.59 Gbits/sec ...`` (``[ *1]`` on a ``-R`` client); UDP server lines add ``0.001 ms 0/893 (0%)``
TEXT_LINE = re.compile(
    r"^\[\s*\*?(?P<id>\d+)\]\s+(?P<start>[\d.]+)\s*-\s*(?P<end>[\d.]+)\s+sec\s+"
    r"(?P<xfer>[\d.]+)\s+(?P<xunit>[KMGT]?Bytes)\s+(?P<rate>[\d.]+)\s+(?P<runit>[KMGT]?(?:bits|Bytes))/sec"
    r"(?:\s+(?P<jitter>[\d.]+)\s+ms\s+(?P<lost>-?\d+)/\s*(?P<total>\d+)\s+\((?P<pct>[\d.eE+-]+)%\))?"
)
_SCALE = {"": 1, "K": 1, "M": 2, "G": 3, "T": 4}


def parse_text(text: str) -> list[CsvLine]:
    """The per-stream interval and final lines of iperf2's human-readable output (``-e`` or
    plain), as :class:`CsvLine` values. Transfer units are binary (KBytes = 1024 bytes), rate
    units decimal (Mbits = 10^6 bits); both are rounded to 3 significant digits by iperf2, so
    ``bytes`` here is approximate. ``[SUM]`` lines and the server report a UDP client echoes are
    skipped (netfleet sums the streams; the server's own output has that report)."""
    out: list[CsvLine] = []
    for raw in text.splitlines():
        if "Server Report:" in raw:
            break  # what follows on a UDP client is the server's final, not the client's
        m = TEXT_LINE.match(raw.strip())
        if m is None:
            continue
        runit = m["runit"]
        nbytes = float(m["xfer"]) * 1024 ** _SCALE[m["xunit"].removesuffix("Bytes")]
        if runit.endswith("bits"):
            rate = float(m["rate"]) * 1000 ** _SCALE[runit.removesuffix("bits")]
        else:  # -f K/M/G: bytes per second, binary units
            rate = float(m["rate"]) * 8 * 1024 ** _SCALE[runit.removesuffix("Bytes")]
        udp: dict[str, Any] = {}
        if m["jitter"] is not None:
            udp = {
                "jitter_ms": float(m["jitter"]),
                "lost": int(m["lost"]),
                "total": int(m["total"]),
                "lost_percent": float(m["pct"]),
                "out_of_order": None,
            }
        start, end = float(m["start"]), float(m["end"])
        if not all(math.isfinite(x) for x in (start, end, rate, nbytes)):
            continue
        out.append(CsvLine("", 0, "", 0, int(m["id"]), start, end, round(nbytes), rate, **udp))
    return out


def parse_output(text: str) -> list[CsvLine]:
    """CSV lines when the output is ``-y C``, else the text lines."""
    return parse_csv(text) or parse_text(text)


def split_finals(lines: list[CsvLine], interval: float) -> tuple[list[CsvLine], list[CsvLine]]:
    """(interval lines, final summary lines). A stream's final line starts at 0 and spans more
    than one interval, or is its second line starting at 0 (a run of about one interval: the
    final spans the first interval again, or a little more when the run ended late — 0.0-1.1
    after 0.0-1.0 on a loaded machine)."""
    intervals: list[CsvLine] = []
    finals: list[CsvLine] = []
    started: set[int] = set()  # streams whose first interval (from 0) has been seen
    for line in lines:
        if line.stream < 0:
            continue  # a sum line: netfleet sums the streams itself
        long_span = line.start == 0 and line.end - line.start > interval * 1.5
        if long_span or (line.start == 0 and line.stream in started):
            finals.append(line)
        else:
            if line.start == 0:
                started.add(line.stream)
            intervals.append(line)
    return intervals, finals
