"""iperf3 client options. ``direction`` is relative to the test's subject host."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from netfleet.engines.params.base import Direction, EngineParams, StreamsSummary
from netfleet.units import parse_rate, parse_size


def size_str(v: str | int | None) -> str | None:
    """Validate a size (``512kb``) and keep it as written."""
    if v is None:
        return None
    parse_size(v)
    return str(v)


def rate_str(v: str | None) -> str | None:
    """Validate a rate (``500mbit``) and keep it as written."""
    if v is not None:
        parse_rate(v)
    return v


class Iperf3Params(StreamsSummary, EngineParams):
    """iperf3 client options."""

    duration: float = Field(10, gt=0, le=86400, description="seconds of measurement (-t)")
    omit: int = Field(0, ge=0, le=3600, description="seconds omitted at the start (-O)")
    interval: float = Field(1, ge=0.1, le=3600, description="report interval in seconds (-i)")
    parallel: int = Field(1, ge=1, le=128, description="parallel streams (-P)")
    direction: Direction = Field(
        "out", description="out: the subject sends; in: it receives; bidir: both (--bidir)"
    )
    protocol: Literal["tcp", "udp"] = "tcp"
    bitrate: str | None = Field(
        None, description="target bitrate, e.g. 500mbit (-b); UDP default 1mbit"
    )
    window: str | int | None = Field(None, description="socket buffer size, e.g. 512kb (-w)")
    length: str | int | None = Field(None, description="read/write buffer length, e.g. 128kb (-l)")
    mss: int | None = Field(None, ge=88, le=65535, description="TCP maximum segment size (-M)")
    congestion: str | None = Field(
        None, pattern=r"^[a-z0-9_]{1,16}$", description="TCP congestion control algorithm (-C)"
    )
    affinity: str | None = Field(
        None, pattern=r"^[0-9]{1,4}(,[0-9]{1,4})?$", description="CPU affinity n or n,m (-A)"
    )
    zerocopy: bool = Field(False, description="use sendfile (-Z)")
    until_steady: float | None = Field(
        None,
        ge=3,
        le=86400,
        description="adaptive: stop once the rate has been steady this many seconds; "
        "'duration' becomes the maximum",
    )
    steady_tolerance: float = Field(
        0.05, gt=0, lt=1, description="adaptive: relative spread still called steady"
    )
    min_duration: float | None = Field(
        None,
        ge=0,
        le=86400,
        description="adaptive: never stop on a steady rate before this many seconds unless a "
        "level drop (the end of a credit burst) was seen. Default: 0 on a host known fixed-rate "
        "(label burstable: false), else the longest documented burst (60 min, capped at "
        "duration)",
    )

    longest_burst: float | None = Field(
        None,
        gt=0,
        le=86400,
        description="adaptive: the longest plausible burst (s) on these hosts; a level still flat "
        "after it is called steady (without it, and without catalogue figures or a fixed-rate "
        "label, the run waits for the longest documented burst, 60 min, capped at duration)",
    )

    def expected_seconds(self, burst_s: float | None = None) -> float:
        """Adaptive: the first possible stop (``until_steady``, or ``min_duration`` when given,
        plus a few intervals); a burst adds its length ``burst_s`` when known (the drop, then
        ``until_steady`` at the new level). Otherwise ``duration + omit``."""
        if self.until_steady is None:
            return self.measured_seconds()
        wait = self.min_duration if self.min_duration is not None else self.longest_burst
        first = max(self.until_steady + (burst_s or 0.0), wait or 0.0) + 5 * self.interval
        return float(min(first, self.duration) + self.omit)

    _bitrate = field_validator("bitrate")(rate_str)
    _sizes = field_validator("window", "length")(size_str)

    @model_validator(mode="after")
    def _adaptive(self) -> Iperf3Params:
        if self.until_steady is not None:
            if self.direction == "bidir":
                raise ValueError("until_steady needs one direction: use out or in, not bidir")
            if self.until_steady > self.duration:
                raise ValueError(
                    f"until_steady ({self.until_steady:g} s) exceeds duration "
                    f"({self.duration:g} s), the maximum: raise duration"
                )
        return self
