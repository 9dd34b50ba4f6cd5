"""What every engine's parameters have in common."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Direction = Literal["out", "in", "bidir"]


class EngineParams(BaseModel):
    """Base of every engine's parameter model. ``duration`` is the measured time in seconds."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    duration: float = Field(10, gt=0, le=86400, description="seconds of measurement")

    def measured_seconds(self) -> float:
        """How long the engine runs (measurement plus anything omitted)."""
        return float(self.duration)

    def expected_seconds(self, burst_s: float | None = None) -> float:
        """How long the engine is expected to run: :meth:`measured_seconds` unless it may stop
        early (adaptive runs), then the time to its first possible stop — after the burst
        when the host's full burst ``burst_s`` (σ / (C − ρ), seconds) is known."""
        return self.measured_seconds()

    def summary(self) -> str:
        """A few words for progress lines and plans."""
        return f"{self.duration:g} s"

    def run_direction(self) -> Direction | None:
        """The direction relative to the subject, or None where it means nothing (latency)."""
        return None


class StreamsSummary:
    """Shared by the stream engines' params (iperf3, iperf2): they all have ``duration``,
    ``omit``, ``parallel``, ``direction`` and ``protocol``."""

    if TYPE_CHECKING:  # declared by the models themselves; pydantic must not see them here
        duration: float
        omit: int
        parallel: int
        direction: Direction
        protocol: str

    def measured_seconds(self) -> float:
        return float(self.duration + self.omit)

    def summary(self) -> str:
        udp = " udp" if self.protocol == "udp" else ""
        return f"{self.direction} P{self.parallel}{udp} {self.duration:g}+{self.omit} s"

    def run_direction(self) -> Direction:
        return self.direction


#: parameter names that older or imported results stored, → the spec's name for them. One
#: vocabulary everywhere (spec, envelope, catalog, advice): the spec's. Imported iperf3 files
#: stored iperf3's own ``num_streams`` before issue 22; results are read through
#: :func:`spec_params`.
OTHER_NAMES: dict[str, str] = {"num_streams": "parallel"}


def spec_params(params: Any) -> dict[str, Any]:
    """``params`` of a stored result in the spec's vocabulary (:data:`OTHER_NAMES` renamed; the
    spec's own name wins when both are there). Anything not a mapping gives ``{}``."""
    if not isinstance(params, Mapping):
        return {}
    out = {k: v for k, v in params.items() if k not in OTHER_NAMES}
    for other, name in OTHER_NAMES.items():
        if other in params and params[other] is not None:
            out.setdefault(name, params[other])
    return out
