"""The ``credit`` test: drain the bucket, idle for T, burst again — the refill of "up to"."""

from __future__ import annotations

from pydantic import Field, field_validator, model_validator

from netfleet.engines.params.base import Direction, EngineParams

#: intervals a phase needs beyond ``until_steady`` (a level drop is seen over 3–5 intervals)
PHASE_SLACK_INTERVALS = 5
#: the drain's baseline check (:mod:`netfleet.engines.credit`): idle, then a short run, in
#: report intervals
CHECK_IDLE_INTERVALS = 3
CHECK_INTERVALS = 5
#: the drain's first part lasts at least this many intervals (the analysis needs ≥ 6)
MIN_DRAIN_INTERVALS = 8


class CreditParams(EngineParams):
    """Drain to the baseline, then for each idle time T: idle T seconds, burst until the
    baseline is steady again. Credits regained after T = what the burst sent above baseline."""

    duration: float = Field(
        600, gt=0, le=86400, description="the longest the drain phase may take, seconds"
    )
    idle: list[float] = Field(
        min_length=1, description="idle times T in seconds, e.g. [30, 60, 120]; one burst each"
    )
    until_steady: float = Field(
        30, ge=3, le=3600, description="seconds of steady baseline that end a phase"
    )
    steady_tolerance: float = Field(0.05, gt=0, lt=1)
    burst_max: float = Field(600, gt=0, le=86400, description="the longest a burst may take")
    interval: float = Field(1, ge=0.1, le=60, description="report interval (-i)")
    parallel: int = Field(2, ge=1, le=128, description="streams (-P); seed 004 used 2")
    direction: Direction = Field("out", description="out or in, relative to the subject")

    @field_validator("idle")
    @classmethod
    def _idle(cls, v: list[float]) -> list[float]:
        if any(t < 0 or t > 86400 for t in v):
            raise ValueError("idle times are seconds between 0 and 86400")
        return v

    @model_validator(mode="after")
    def _one_way(self) -> CreditParams:
        if self.direction == "bidir":
            raise ValueError("a credit test measures one direction: use out or in")
        if self.until_steady >= self.duration or self.until_steady >= self.burst_max:
            raise ValueError("until_steady must be shorter than duration and burst_max")
        return self

    def measured_seconds(self) -> float:
        """Upper bound: the drain, every idle, and every burst at its maximum."""
        return float(self.duration + sum(self.idle) + len(self.idle) * self.burst_max)

    def expected_seconds(self, burst_s: float | None = None) -> float:
        """Every idle, each phase ending once steady (``until_steady`` plus the few intervals a
        drop needs) and the drain's baseline check (idle + a short run: a host already at its
        baseline ends the drain there); a full bucket's drain adds ``burst_s`` when known (else
        it is unknown before the run; each later burst adds what its idle refilled)."""
        phase = self.until_steady + PHASE_SLACK_INTERVALS * self.interval
        drain = max(
            phase + min(burst_s or 0.0, self.duration), (MIN_DRAIN_INTERVALS + 1) * self.interval
        )
        check = (CHECK_IDLE_INTERVALS + CHECK_INTERVALS + 1) * self.interval
        return float(sum(self.idle) + drain + len(self.idle) * phase + check)

    def summary(self) -> str:
        idles = ",".join(f"{t:g}" for t in self.idle)
        return f"{self.direction} credit drain≤{self.duration:g}s idle[{idles}]s P{self.parallel}"

    def run_direction(self) -> Direction:
        return self.direction
