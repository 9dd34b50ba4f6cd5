"""Several iperf3 processes on several ports, merged into one logical run (iperf3 < 3.16 is one
thread per process: a fast link needs several processes)."""

from __future__ import annotations

from pydantic import Field, model_validator

from netfleet.engines.params.iperf3 import Iperf3Params


class Iperf3MultiParams(Iperf3Params):
    """iperf3 options plus ``processes``: ``parallel`` streams are spread over that many
    client/server process pairs, each on its own port."""

    parallel: int = Field(2, ge=1, le=128, description="streams over all processes (-P each)")
    processes: int = Field(2, ge=1, le=64, description="iperf3 process pairs (own port each)")

    @model_validator(mode="after")
    def _enough_streams(self) -> Iperf3MultiParams:
        if getattr(self, "until_steady", None) is not None:
            raise ValueError("until_steady is for the iperf3 engine: remove it here")
        if self.parallel < self.processes:
            raise ValueError(
                f"parallel ({self.parallel}) is below processes ({self.processes}): every "
                "process needs a stream; raise parallel or lower processes"
            )
        return self

    def streams_per_process(self) -> list[int]:
        """``parallel`` split as evenly as possible, larger shares first."""
        base, extra = divmod(self.parallel, self.processes)
        return [base + (1 if i < extra else 0) for i in range(self.processes)]

    def summary(self) -> str:
        return f"{super().summary()} ×{self.processes} proc"
