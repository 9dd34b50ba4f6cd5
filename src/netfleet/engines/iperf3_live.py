"""Reading iperf3 intervals while a test runs, and deciding when the baseline is steady.

Before 3.17 iperf3 prints JSON only at the end, so the live series comes from a *text* server
(``--forceflush --format k``: one line per interval, bitrate in whole Kbit/s). From 3.17 the client
prints one JSON event per line (``--json-stream``). Both feed a :class:`SteadyDetector`.
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

#: "[SUM]   0.00-1.00   sec  24.0 MBytes  201234 Kbits/sec ..." or "[  5]   ..." (one stream)
_LINE = re.compile(
    r"^\[\s*(?P<id>SUM|\d+)\]\s+(?P<start>\d+\.\d+)-(?P<end>\d+\.\d+)\s+sec\s+"
    r"(?P<xfer>[\d.]+)\s+(?P<xunit>[KMGT]?Bytes)\s+(?P<rate>[\d.]+)\s+(?P<runit>[KMGT]?bits/sec)"
    r"(?P<rest>.*)$"
)
_SCALE = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_BYTES = {"": 1.0, "K": 1024.0, "M": 1024.0**2, "G": 1024.0**3, "T": 1024.0**4}


@dataclass(frozen=True)
class LiveInterval:
    start: float
    end: float
    bits_per_second: float
    omitted: bool = False


@dataclass
class TextIntervalParser:
    """Parses iperf3's text interval lines into sum intervals (per-stream lines are summed only
    when there is no [SUM] line, i.e. one stream). Summary lines (sender/receiver) are skipped."""

    streams: int = 1
    _pending: dict[tuple[float, float], list[float]] = field(default_factory=dict)

    def feed(self, line: str) -> LiveInterval | None:
        m = _LINE.match(line.strip())
        if not m or re.search(r"\b(sender|receiver)\b", m["rest"]):
            return None
        rate = float(m["rate"]) * _SCALE[m["runit"][0] if m["runit"][0] in _SCALE else ""]
        omitted = "omitted" in m["rest"]
        start, end = float(m["start"]), float(m["end"])
        if end <= start:
            return None  # the receiver's sub-10 ms stub rounds to "2.00-2.00": no time to use
        if m["id"] == "SUM" or self.streams == 1:
            return LiveInterval(start, end, rate, omitted)
        return None

    def parse_all(self, text: str) -> list[LiveInterval]:
        out: list[LiveInterval] = []
        for line in text.splitlines():
            iv = self.feed(line)
            # 3.12 repeats the last interval when the client vanishes (SIGINT): keep one
            if iv is not None and not (out and (out[-1].start, out[-1].end) == (iv.start, iv.end)):
                out.append(iv)
        return out


def parse_text_intervals(text: str, streams: int) -> list[LiveInterval]:
    """Every sum interval in an iperf3 text report (e.g. a ``--forceflush`` server's stdout)."""
    return TextIntervalParser(streams=streams).parse_all(text)


def text_interval_bytes(iv: LiveInterval) -> float:
    return iv.bits_per_second * (iv.end - iv.start) / 8


class JsonStreamParser:
    """Parses ``--json-stream`` lines; rebuilds the document ``--json`` would have printed."""

    def __init__(self) -> None:
        self.doc: dict[str, Any] = {"start": {}, "intervals": [], "end": {}}

    def feed(self, line: str) -> LiveInterval | None:
        line = line.strip()
        if not line.startswith("{"):
            return None
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            return None
        kind, data = event.get("event"), event.get("data")
        if kind == "interval" and isinstance(data, dict):
            self.doc["intervals"].append(data)
            s = data.get("sum") or {}
            if "bits_per_second" in s:
                return LiveInterval(
                    float(s.get("start", 0)),
                    float(s.get("end", 0)),
                    float(s["bits_per_second"]),
                    bool(s.get("omitted")),
                )
        elif kind in ("start", "end"):
            self.doc[kind] = data
        elif kind == "error":
            self.doc["error"] = data
        elif kind == "server_output_json":
            self.doc["server_output_json"] = data
        elif kind == "server_output_text":
            self.doc["server_output_text"] = data
        return None

    def parse_all(self, text: str) -> dict[str, Any]:
        for line in text.splitlines():
            self.feed(line)
        return self.doc


#: the fewest intervals whose median is the level before a drop (one spike among them is ignored)
PRE_DROP_MIN_INTERVALS = 3
#: the most intervals the pre-drop level is taken over (besides ``window_s`` seconds)
PRE_DROP_INTERVALS = 5
#: intervals whose median is "the new level" when a drop is first suspected
RECENT_INTERVALS = 3


@dataclass
class SteadyDetector:
    """Says when a live series has been steady for ``window_s`` seconds.

    Steady: over the last window, at least ``share`` of the intervals lie within ``tolerance``
    (relative) of the window's median — robust to a single dip. Stopping also needs one of:

    * ``target`` (a known baseline, bits/s): a steady window at that level;
    * a *confirmed* level drop (the end of a credit burst): the median of the last
      :data:`RECENT_INTERVALS` falls ``4 × tolerance`` below the level before it (the median of
      the preceding ``window_s`` seconds, at least :data:`PRE_DROP_INTERVALS` intervals, so
      one-interval spikes are not a level), and the series then stays below that for
      ``window_s`` seconds. A suspected drop that the series climbs back from is forgotten; an
      unconfirmed one never overrides ``min_duration_s``. After the drop only a steady window
      below the pre-drop level (and at most ``ceiling``, when given) stops the run;
    * otherwise ``min_duration_s`` elapsed, so a long burst at peak is not mistaken for the
      baseline.

    ``ceiling`` (bits/s): the highest level that can be the baseline (the host's catalogue
    baseline in the run's units, plus the tolerance): a level above it is still the burst.
    """

    window_s: float = 30.0
    tolerance: float = 0.05
    share: float = 0.9
    min_duration_s: float = 0.0
    #: a known baseline (bits/s): when set, only a window at this level counts as steady
    target: float | None = None
    ceiling: float | None = None
    series: list[LiveInterval] = field(default_factory=list)
    #: when the confirmed drop began (s, the end of the burst)
    drop_seen_at: float | None = None
    #: when it was confirmed (``window_s`` at the lower level)
    drop_confirmed_at: float | None = None
    #: the level before the drop (bits/s): after a drop only a window below it is the baseline
    before_drop: float | None = None
    steady_since: float | None = None
    #: a drop suspected but not yet confirmed: (its start, the level before it)
    _suspect: tuple[float, float] | None = None

    def add(self, iv: LiveInterval) -> bool:
        """Add an interval; True when the test may stop."""
        if iv.omitted:
            return False
        self.series.append(iv)
        t = iv.end
        window = [x.bits_per_second for x in self.series if x.end > t - self.window_s]
        span = t - self.series[0].start
        if self.drop_seen_at is None:
            self._follow_drop(t)
        if span < self.window_s or len(window) < 3:
            return False
        if not self._steady(window):
            self.steady_since = None
            return False
        if self.steady_since is None:
            self.steady_since = t
        level = statistics.median(window)
        if self.target is not None:
            return abs(level / self.target - 1) <= 2 * self.tolerance
        if self.before_drop is not None:
            # a window still made mostly of the burst is steady, but at the peak, not the baseline
            below = level < self.before_drop * (1 - 4 * self.tolerance)
            if below and (self.ceiling is None or level <= self.ceiling):
                return True
        return span >= self.min_duration_s

    def level(self) -> float | None:
        """The median rate of the last window (the baseline once stopped on a steady rate)."""
        if not self.series:
            return None
        t = self.series[-1].end
        return statistics.median(
            x.bits_per_second for x in self.series if x.end > t - self.window_s
        )

    def _steady(self, values: Iterable[float]) -> bool:
        vals = list(values)
        med = statistics.median(vals)
        if med <= 0:
            return False
        close = sum(abs(v - med) <= self.tolerance * med for v in vals)
        return close >= self.share * len(vals)

    def _follow_drop(self, t: float) -> None:
        """Suspect, confirm or forget a level drop (see the class docstring)."""
        if self._suspect is None:
            self._suspect = self._dropped()
            return
        start, before = self._suspect
        low = before * (1 - 4 * self.tolerance)
        after = [x.bits_per_second for x in self.series if x.start >= start]
        if statistics.median(after[-RECENT_INTERVALS:]) >= low:
            self._suspect = None  # back at the level: a dip, not the end of the burst
            return
        below = sum(v < low for v in after)
        if t - start >= self.window_s and below >= self.share * len(after):
            self.drop_seen_at, self.before_drop, self.drop_confirmed_at = start, before, t
            self._suspect = None

    def _dropped(self) -> tuple[float, float] | None:
        """A suspected drop: the median of the last :data:`RECENT_INTERVALS` sits well below
        the median of the window before them. Returns (the drop's start, that level) or None."""
        if len(self.series) < RECENT_INTERVALS + PRE_DROP_MIN_INTERVALS:
            return None
        recent = self.series[-RECENT_INTERVALS:]
        earlier = self.series[:-RECENT_INTERVALS]
        since = recent[0].start - self.window_s
        pre = [x.bits_per_second for x in earlier if x.end > since]
        if len(pre) < PRE_DROP_INTERVALS:
            pre = [x.bits_per_second for x in earlier[-PRE_DROP_INTERVALS:]]
        before = statistics.median(pre)
        low = before * (1 - 4 * self.tolerance)
        if statistics.median(x.bits_per_second for x in recent) >= low:
            return None
        return next(x.start for x in recent if x.bits_per_second < low), before
