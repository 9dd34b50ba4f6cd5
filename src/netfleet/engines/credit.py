"""The ``credit`` engine: iperf3 phases that measure a token bucket's refill.

Phase ``drain`` bursts until the baseline has been steady (the bucket is empty); then for each
idle time T: idle T seconds, and a ``burst`` phase runs until the baseline is steady again. Each
phase is an adaptive iperf3 run (see :mod:`netfleet.engines.iperf3_live`). The result keeps every
phase's iperf3 JSON untouched::

    {"phases": [{"phase": "drain", "idle_s": null, "started_s": 0.0, "adaptive": {...},
                 "iperf3": {...}, "server_stdout": "..."},
                {"phase": "burst", "idle_s": 30, ...}, ...]}

A host may already be at its baseline when the drain starts (a burst test just emptied its
bucket — the best start for a refill test). A flat level without a drop is then either that
baseline or a burst's peak, so once the drain has been steady for ``until_steady`` without a
drop, a ``check`` phase tells them apart: idle :data:`CHECK_IDLE_INTERVALS` intervals, then a
short run. At the baseline the idle refilled the bucket a little, so the check starts above the
level and falls back to it: the drain is over (``"at_baseline": true``). At a peak (or on a link
without a bucket) it starts at the level: the drain goes on in a second ``drain`` phase (up to
``duration`` in all), and the analysis counts every part's bits above the baseline.
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
from netfleet.engines.params.credit import (
    CHECK_IDLE_INTERVALS,
    CHECK_INTERVALS,
    MIN_DRAIN_INTERVALS,
    CreditParams,
)
from netfleet.engines.summaries import no_rows

#: the check's first intervals must exceed the drain's level by this many tolerances
CHECK_MARGIN = 4

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
    def _phase(params: CreditParams, maximum: float, minimum: float | None = None) -> Iperf3Params:
        return Iperf3Params(
            duration=maximum,
            interval=params.interval,
            parallel=params.parallel,
            direction=params.direction,
            until_steady=params.until_steady,
            steady_tolerance=params.steady_tolerance,
            # a phase may only end on a steady baseline after a level drop, or at its maximum
            # (or, for the drain's first part, at ``minimum``: a baseline check follows)
            min_duration=maximum if minimum is None else minimum,
        )

    @staticmethod
    def _check(params: CreditParams) -> Iperf3Params:
        return Iperf3Params(
            duration=CHECK_INTERVALS * params.interval,
            interval=params.interval,
            parallel=params.parallel,
            direction=params.direction,
        )

    @staticmethod
    def above_level(result: Mapping[str, Any] | None, level: float, tolerance: float) -> bool:
        """Whether the check run started above ``level``: its first two full intervals' best
        rate exceeds it by :data:`CHECK_MARGIN` tolerances (a refilled bucket's spike)."""
        intervals = (result or {}).get("intervals") or []
        rates = []
        for iv in intervals[:3]:
            s = iv.get("sum") if isinstance(iv, Mapping) else None
            if isinstance(s, Mapping) and isinstance(s.get("bits_per_second"), int | float):
                rates.append(float(s["bits_per_second"]))
        return bool(rates) and max(rates[:2]) > level * (1 + CHECK_MARGIN * tolerance)

    async def execute(self, session: RunSession, params: CreditParams) -> Outcome:
        check_params(params, CreditParams)
        phases: list[dict[str, Any]] = []
        session.notes["credit"] = {"phases": phases}
        result: dict[str, Any] = {"phases": phases}
        # long enough for the analysis to classify the drain on its own (≥ 6 intervals)
        shortest = max(params.until_steady, MIN_DRAIN_INTERVALS * params.interval)
        first = self._phase(params, params.duration, min(shortest, params.duration))
        ok, adaptive = await self._run_phase(session, phases, "drain", None, first)
        if not ok:
            return Outcome("failed", f"drain phase: {phases[-1]['reason']}", result)
        baseline = adaptive.get("level_bps")
        if adaptive.get("stop") == "steady" and adaptive.get("drop_seen_at_s") is None:
            # steady without a drop: the baseline already, or a burst's peak? the check says
            level = float(baseline or 0.0)
            await asyncio.sleep(CHECK_IDLE_INTERVALS * params.interval)
            ok, _ = await self._run_phase(
                session, phases, "check", CHECK_IDLE_INTERVALS * params.interval,
                self._check(params),
            )  # fmt: skip
            if not ok:
                return Outcome("failed", f"check phase: {phases[-1]['reason']}", result)
            at_baseline = self.above_level(phases[-1]["iperf3"], level, params.steady_tolerance)
            phases[-1]["at_baseline"] = at_baseline
            phases[-1]["level_bps"] = level
            remaining = params.duration - (phases[0]["ended_s"] - phases[0]["started_s"])
            if not at_baseline and remaining > params.until_steady:
                ok, adaptive = await self._run_phase(
                    session, phases, "drain", None, self._phase(params, remaining)
                )
                if not ok:
                    return Outcome("failed", f"drain phase: {phases[-1]['reason']}", result)
                baseline = adaptive.get("level_bps")
        for idle in params.idle:
            await asyncio.sleep(idle)
            ok, _ = await self._run_phase(
                session, phases, "burst", idle, self._phase(params, params.burst_max), baseline
            )
            if not ok:
                return Outcome("failed", f"burst phase: {phases[-1]['reason']}", result)
        session.notes["credit"] = {
            "phases": [
                {k: p[k] for k in ("phase", "idle_s", "started_s", "ended_s", "adaptive")}
                | {k: p[k] for k in ("at_baseline", "level_bps") if k in p}
                for p in phases
            ]
        }
        return Outcome("ok", None, result)

    async def _run_phase(
        self,
        session: RunSession,
        phases: list[dict[str, Any]],
        name: str,
        idle: float | None,
        params: Iperf3Params,
        baseline: float | None = None,
    ) -> tuple[bool, dict[str, Any]]:
        """Run one phase, append its record; (whether it succeeded, its adaptive notes)."""
        started = time.monotonic() - session.t0
        outcome = await self.iperf3.execute(session, params, target_bps=baseline)
        adaptive = session.notes.pop("adaptive", None)
        phases.append(
            {
                "phase": name,
                "idle_s": idle,
                "started_s": round(started, 3),
                "ended_s": round(time.monotonic() - session.t0, 3),
                "status": outcome.status,
                "reason": outcome.reason,
                "adaptive": adaptive,
                "iperf3": outcome.result,
                "server_stdout": session.outputs.pop("server_stdout", None),
            }
        )
        return outcome.status == "ok", adaptive or {}

    def salvage(self, session: RunSession, params: CreditParams, interrupted: bool) -> Outcome:
        partial = self.iperf3.salvage(session, self._phase(params, params.duration), interrupted)
        phases = session.notes.get("credit", {}).get("phases", [])
        return Outcome(
            partial.status, partial.reason, {"phases": phases, "partial_iperf3": partial.result}
        )
