"""ICMP echo (seed 001: ``ping -c 50 -s 1400 -i 0.2 -q``). Client only: no server process."""

from __future__ import annotations

from pydantic import Field

from netfleet.engines.params.base import EngineParams


class PingParams(EngineParams):
    """``ping -c COUNT -s SIZE -i INTERVAL -w DURATION`` towards the server host's address."""

    duration: float = Field(
        60, gt=0, le=86400, description="deadline in seconds (-w): ping stops then at the latest"
    )
    count: int = Field(50, ge=1, le=100000, description="echo requests (-c)")
    size: int = Field(1400, ge=0, le=65507, description="payload bytes (-s)")
    interval: float = Field(
        0.2, ge=0.002, le=60, description="seconds between requests (-i; below 0.2 needs root)"
    )

    def measured_seconds(self) -> float:
        return float(min(self.duration, self.count * self.interval + 1))

    def summary(self) -> str:
        return f"{self.count}×{self.size} B every {self.interval:g} s"
