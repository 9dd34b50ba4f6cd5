"""Request/response latency (seed 001's uperf profile): one connection, a ``size``-byte request
and a ``size``-byte response, back to back for ``duration`` seconds."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from netfleet.engines.params.base import EngineParams

LatencyTool = Literal["auto", "sockperf", "iperf2"]


class LatencyParams(EngineParams):
    """sockperf ping-pong or iperf2 ``--bounceback``; ``tool: auto`` prefers sockperf (every
    sample, so exact percentiles) and falls back to iperf2 (100 µs histogram bins)."""

    tool: LatencyTool = Field("auto", description="auto | sockperf | iperf2")
    duration: float = Field(10, ge=1, le=86400, description="seconds of request/response")
    size: int = Field(90, ge=12, le=65000, description="request and response size in bytes")
    full_rtt: bool = Field(
        True, description="report the full round trip (sockperf --full-rtt); false: half"
    )

    def summary(self) -> str:
        return f"{self.tool} {self.size} B rr {self.duration:g} s"
