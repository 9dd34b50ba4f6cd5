"""iperf 2 client options (throughput). ``direction`` is relative to the test's subject host."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from netfleet.engines.params.base import EngineParams, StreamsSummary
from netfleet.engines.params.iperf3 import rate_str, size_str


class Iperf2Params(StreamsSummary, EngineParams):
    """iperf 2 (2.1+) options: ``-P n`` is one thread per stream."""

    duration: float = Field(10, gt=0, le=86400, description="seconds of measurement (-t)")
    omit: int = Field(
        0, ge=0, le=3600, description="seconds at the start flagged omitted (iperf2 has no -O)"
    )
    interval: float = Field(1, ge=0.5, le=3600, description="report interval in seconds (-i)")
    parallel: int = Field(1, ge=1, le=128, description="parallel streams, one thread each (-P)")
    direction: Literal["out", "in"] = Field(
        "out", description="out: the subject sends; in: it receives (-R)"
    )
    protocol: Literal["tcp", "udp"] = "tcp"
    bitrate: str | None = Field(None, description="target rate, e.g. 500mbit (-b); UDP 1mbit")
    window: str | int | None = Field(None, description="socket buffer size, e.g. 512kb (-w)")
    length: str | int | None = Field(None, description="write size, e.g. 8kb (-l)")
    mss: int | None = Field(None, ge=88, le=65535, description="TCP maximum segment size (-M)")

    _bitrate = field_validator("bitrate")(rate_str)
    _sizes = field_validator("window", "length")(size_str)
