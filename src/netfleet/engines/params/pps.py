"""The ``pps`` engine: how many small packets per second a path delivers."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from netfleet.engines.params.base import Direction, EngineParams

PpsTool = Literal["auto", "iperf2", "iperf3"]


class PpsParams(EngineParams):
    """Small UDP datagrams as fast as the sender can (or at ``offered_pps``): packets sent and
    delivered per second, loss, and what limited it — the sender, the receiver or the path."""

    tool: PpsTool = Field(
        "auto", description="auto (iperf 2 where both hosts have it, else iperf3) | iperf2 | iperf3"
    )
    duration: float = Field(10, gt=0, le=3600, description="seconds of measurement")
    size: int = Field(
        64, ge=32, le=8972, description="UDP payload bytes per datagram (-l); 64 = small packets"
    )
    parallel: int = Field(
        2, ge=1, le=64, description="sending streams (iperf 2: a thread each; iperf3 3.12: one)"
    )
    offered_pps: int | None = Field(
        None, ge=1, le=100_000_000,
        description="packets per second to offer in all (spread over the streams); "
        "none: as fast as the sender can",
    )  # fmt: skip
    direction: Literal["out", "in"] = Field(
        "out", description="out: the subject sends; in: it receives"
    )
    loss_ok: float = Field(
        1.0, ge=0, le=100, description="loss % up to which delivery counts as lossless"
    )

    def measured_seconds(self) -> float:
        return float(self.duration)

    def summary(self) -> str:
        offered = f"{self.offered_pps:,} pps" if self.offered_pps else "max"
        streams = f"{self.size} B ×{self.parallel}"
        return f"{self.tool} {self.direction} {streams} {offered} {self.duration:g} s"

    def run_direction(self) -> Direction:
        return self.direction
