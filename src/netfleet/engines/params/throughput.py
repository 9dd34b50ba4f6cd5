"""The ``throughput`` engine: saturate a link with whichever tool the hosts run best."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from netfleet.engines.params.base import Direction, EngineParams
from netfleet.engines.params.iperf3 import size_str

ThroughputTool = Literal["auto", "iperf3", "iperf3-multi", "iperf2"]


class ThroughputParams(EngineParams):
    """TCP throughput, tool chosen per run from the hosts' CPU counts and engine versions
    (``tool: auto``) or fixed. ``parallel``/``processes`` default to what the hosts need."""

    tool: ThroughputTool = Field("auto", description="auto | iperf3 | iperf3-multi | iperf2")
    duration: float = Field(10, gt=0, le=86400, description="seconds of measurement")
    omit: int = Field(0, ge=0, le=3600, description="seconds omitted at the start")
    interval: float = Field(1, ge=0.5, le=3600, description="report interval in seconds")
    parallel: int | None = Field(
        None, ge=1, le=128, description="streams (threads); default: chosen from the CPU counts"
    )
    processes: int | None = Field(
        None, ge=1, le=64, description="iperf3-multi processes; default: the smaller CPU count"
    )
    direction: Literal["out", "in"] = Field("out", description="relative to the subject")
    window: str | int | None = Field(None, description="socket buffer size, e.g. 500kb")
    length: str | int | None = Field(None, description="write size, e.g. 8kb")

    _sizes = field_validator("window", "length")(size_str)

    def measured_seconds(self) -> float:
        return float(self.duration + self.omit)

    def summary(self) -> str:
        streams = f"P{self.parallel}" if self.parallel else "P auto"
        return f"{self.tool} {self.direction} {streams} {self.duration:g}+{self.omit} s"

    def run_direction(self) -> Direction:
        return self.direction
