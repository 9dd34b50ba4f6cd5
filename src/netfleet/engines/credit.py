"""The ``credit`` engine: iperf3 phases that measure a token bucket's refill.

Phase ``drain`` bursts until the baseline has been steady (the bucket is empty); then for each
idle time T: idle T seconds, and a ``burst`` phase runs until the baseline is steady again. Each
phase is an adaptive iperf3 run (see :mod:`netfleet.engines.iperf3_live`). The result keeps every
phase's iperf3 JSON untouched::

    {"phases": [{"phase": "drain", "idle_s": null, "started_s": 0.0, "adaptive": {...},
                 "iperf3": {...}, "server_stdout": "..."},
                {"phase": "burst", "idle_s": 30, ...}, ...]}
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from netfleet.engines.contract import (
    EngineInfo,
    Host,
    Measure,
    Outcome,
    Summary,
    check_params,
)
from netfleet.engines.iperf3 import Iperf3
from netfleet.engines.params import Iperf3Params
from netfleet.engines.params.credit import CreditParams
from netfleet.engines.summaries import no_rows

if TYPE_CHECKING:
    from netfleet.engines.contract import RunSession


class Credit:
    name = "credit"
    title: ClassVar[str] = (
        'Drain the credit bucket, idle for T, burst again: the refill behind "up to".'
    )
    params_model: ClassVar[type[CreditParams]] = CreditParams
    measures: ClassVar[Measure] = "credit"
    #: commands the preflight checks
    tools: tuple[str, ...] = ("iperf3",)
    #: tool → package, per package manager: iperf3's
    packages: ClassVar[dict[str, dict[str, str]]] = Iperf3.packages
    needs_server = True

    def __init__(self) -> None:
        self.iperf3 = Iperf3()

    #: the credit model reads the phases from the raw file (analysis/sources): no rows
    table_rows = staticmethod(no_rows)

    @staticmethod
    def summary(result: Mapping[str, Any]) -> Summary:
        phases = result.get("phases")
        phases = phases if isinstance(phases, list) else []
        bursts = sum(1 for p in phases if isinstance(p, Mapping) and p.get("phase") == "burst")
        return Summary(None, f"drain + {bursts} burst(s): see netfleet credit")

    async def probe(self, host: Host) -> EngineInfo:
        info = await self.iperf3.probe(host)
        return EngineInfo(self.name, info.version, info.version_tuple)

    def unsupported(self, params: CreditParams, info: EngineInfo) -> list[str]:
        return self.iperf3.unsupported(self._phase(params, params.duration), info)

    @staticmethod
    def _phase(params: CreditParams, maximum: float) -> Iperf3Params:
        return Iperf3Params(
            duration=maximum,
            interval=params.interval,
            parallel=params.parallel,
            direction=params.direction,
            until_steady=params.until_steady,
            steady_tolerance=params.steady_tolerance,
            # a phase may only end on a steady baseline after a level drop, or at its maximum
            min_duration=maximum,
        )

    async def execute(self, session: RunSession, params: CreditParams) -> Outcome:
        check_params(params, CreditParams)
        phases: list[dict[str, Any]] = []
        session.notes["credit"] = {"phases": phases}
        result: dict[str, Any] = {"phases": phases}
        plan: list[tuple[str, float | None, float]] = [("drain", None, params.duration)]
        plan += [("burst", t, params.burst_max) for t in params.idle]
        baseline: float | None = None
        for name, idle, maximum in plan:
            if idle:
                await asyncio.sleep(idle)
            started = time.monotonic() - session.t0
            outcome = await self.iperf3.execute(
                session, self._phase(params, maximum), target_bps=baseline
            )
            adaptive = session.notes.get("adaptive") or {}
            if name == "drain":
                baseline = adaptive.get("level_bps")
            phases.append(
                {
                    "phase": name,
                    "idle_s": idle,
                    "started_s": round(started, 3),
                    "ended_s": round(time.monotonic() - session.t0, 3),
                    "status": outcome.status,
                    "reason": outcome.reason,
                    "adaptive": session.notes.pop("adaptive", None),
                    "iperf3": outcome.result,
                    "server_stdout": session.outputs.pop("server_stdout", None),
                }
            )
            if outcome.status != "ok":
                return Outcome("failed", f"{name} phase: {outcome.reason}", result)
        session.notes["credit"] = {
            "phases": [
                {k: p[k] for k in ("phase", "idle_s", "started_s", "ended_s", "adaptive")}
                for p in phases
            ]
        }
        return Outcome("ok", None, result)

    def salvage(self, session: RunSession, params: CreditParams, interrupted: bool) -> Outcome:
        partial = self.iperf3.salvage(session, self._phase(params, params.duration), interrupted)
        phases = session.notes.get("credit", {}).get("phases", [])
        return Outcome(
            partial.status, partial.reason, {"phases": phases, "partial_iperf3": partial.result}
        )
