"""``latency-under-load``: idle latency, then the same probe while iperf3 loads the path up, down
and both ways (flent's rrul, crusader's phases) — how much a full queue adds to the round trip.

One probe runs through the whole test: irtt (UDP every ``interval``, one-way delays split up and
down; needs ``irtt`` on both hosts) or, as the fallback, ``ping -D`` (RTT only). The timeline,
in seconds since the probe started::

    0 ─ idle ─▶ idle ─ phase 1 (duration) ─ gap ─ phase 2 ─ gap ─ … ─ gap ─▶ end of the probe

Each loaded phase is one ``iperf3 -c … -t duration -P parallel`` (``up``: the client sends,
``down``: ``-R``, ``both``: ``--bidir``) against one ``iperf3 -s`` on the server host; the gap
lets the queue drain before the next phase. The result keeps the probe's raw output and every
load's iperf3 JSON untouched, the phases' start/end times, and a summary per phase computed by
:mod:`netfleet.engines.loaded_phases` (which the catalog rows re-derive).

Catalog: ``latency_phases`` (one row per phase) and ``latency_samples`` (one row per probe
packet, for the latency-over-time plot) — the ``latency`` table's one row per run cannot hold
phases.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from netfleet.engines import loaded_phases
from netfleet.engines.contract import EngineInfo, Host, Measure, Outcome, Summary, check_params
from netfleet.engines.iperf3 import Iperf3
from netfleet.engines.irtt import Irtt
from netfleet.engines.params.base import EngineParams
from netfleet.engines.ping import Ping
from netfleet.engines.probes import ToolsInfo, boot_id, cpu_count, tool_version, version_text
from netfleet.errors import EngineError, HostError
from netfleet.units import parse_rate

if TYPE_CHECKING:
    from netfleet.engines.contract import RunSession, Started

Phase = Literal["up", "down", "both"]
Probe = Literal["auto", "irtt", "ping"]
#: probes in the order ``auto`` tries them
PROBES = ("irtt", "ping")
#: iperf3 gained --bidir in 3.7
MIN_BIDIR = (3, 7)


class LoadedLatencyParams(EngineParams):
    """Idle, then each of ``phases`` for ``duration`` seconds with the probe running throughout."""

    duration: float = Field(5, gt=0, le=3600, description="seconds of each loaded phase")
    idle: float = Field(5, gt=0, le=3600, description="seconds of idle probing before any load")
    phases: tuple[Phase, ...] = Field(
        ("up", "down", "both"),
        min_length=1,
        description="loads in order: up (client sends), down (server sends), both (--bidir)",
    )
    gap: float = Field(1.0, ge=0.2, le=60, description="seconds between phases (queues drain)")
    settle: float = Field(
        0.5, ge=0, le=60, description="seconds left out at each phase start (TCP fills the queue)"
    )
    interval: float = Field(
        0.01, ge=0.01, le=1, description="seconds between probe packets (irtt's minimum: 10 ms)"
    )
    probe: Probe = Field("auto", description="irtt (one-way delays), ping, or auto: irtt if both")
    parallel: int = Field(
        8, ge=1, le=128, description="iperf3 streams per direction (-P; few let a deep queue drain)"
    )
    link_rate: float | None = Field(
        None, description="the path's rate (e.g. 1gbit): a load below reach × it is flagged"
    )
    reach: float = Field(
        0.85, gt=0, le=1, description="fraction of link_rate the load's goodput must reach"
    )

    @field_validator("link_rate", mode="before")
    @classmethod
    def _rate(cls, value: Any) -> Any:
        return None if value is None else parse_rate(value)

    @field_validator("duration")
    @classmethod
    def _whole(cls, value: float) -> float:
        if value != int(value):
            raise ValueError(
                f"duration {value:g} is not whole seconds: iperf3 3.12 reads -t as an integer "
                f"(it would load for {int(value)} s); write {max(1, round(value))}"
            )
        return value

    @model_validator(mode="after")
    def _settle(self) -> LoadedLatencyParams:
        if self.settle >= min(self.duration, self.idle):
            raise ValueError(
                f"settle ({self.settle:g} s) leaves nothing of a phase: make it shorter than "
                "duration and idle"
            )
        return self

    def starts(self) -> list[float]:
        """When each loaded phase starts, in seconds since the probe started."""
        return [self.idle + k * (self.duration + self.gap) for k in range(len(self.phases))]

    def measured_seconds(self) -> float:
        return self.idle + len(self.phases) * (self.duration + self.gap)

    def summary(self) -> str:
        return f"idle {self.idle:g} s + {'/'.join(self.phases)} × {self.duration:g} s"


def choose(probe: str, client: EngineInfo, server: EngineInfo) -> str | None:
    """The probe both hosts can run (irtt needs both ends, ping only the client)."""

    def has(info: EngineInfo, tool: str) -> bool:
        return isinstance(info, ToolsInfo) and tool in info.tools

    for tool in PROBES if probe == "auto" else (probe,):
        if has(client, tool) and (tool == "ping" or has(server, tool)):
            return tool
    return None


async def _irtt_version(host: Host) -> tuple[int, ...] | None:
    try:
        res = await host.run(["irtt", "version"], timeout=10)
    except HostError:
        return None
    m = re.search(r"irtt version: (\d+)\.(\d+)(?:\.(\d+))?", res.stdout)
    return tuple(int(x) for x in m.groups() if x is not None) if m else None


async def _has_ping(host: Host) -> bool:
    try:
        res = await host.run(["ping", "-V"], timeout=10)
    except HostError:
        return False
    return res.returncode == 0


#: host labels that give the path's rate when ``link_rate`` is not set (the smaller end wins)
RATE_LABELS = ("link_rate", "advertised")


def link_rate(params: LoadedLatencyParams, client: Host, server: Host) -> tuple[float | None, str]:
    """The rate the load must reach, and where it came from: ``link_rate``, else the smaller
    of the hosts' ``link_rate``/``advertised`` labels (rates like ``10gbit``), else unknown."""
    if params.link_rate is not None:
        return params.link_rate, "params"
    found: list[tuple[float, str]] = []
    for host in (client, server):
        for key in RATE_LABELS:
            value = host.labels.get(key)
            if value is None:
                continue
            try:
                found.append((parse_rate(value), f"label {key} of {host.name}"))
            except ValueError:
                continue  # not a rate: the label means something else to its author
            break
    if not found:
        return None, "unknown"
    return min(found)


def summarize(result: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
    """The stored summary: per-phase statistics (see :mod:`loaded_phases`)."""
    phases = loaded_phases.phase_stats(
        result,
        float(params.get("interval") or 0.01),
        float(params.get("settle") or 0.0),
        float(params.get("reach") or 0.85),
    )
    return {"probe": result.get("probe"), "phases": phases}


def table_rows(
    run_id: str,
    result: Mapping[str, Any],
    params: Mapping[str, Any],
    outputs: Mapping[str, Any] | None = None,
) -> dict[str, list[dict[str, Any]]]:
    """``latency_phases``: one row per phase; ``latency_samples``: one row per probe packet."""
    interval = float(params.get("interval") or 0.01)
    summary = summarize(result, params)
    probe = result.get("probe")
    phases = [{"run_id": run_id, "probe": probe, **p} for p in summary["phases"]]
    windows = [(p["phase"], p["start_s"], p["end_s"]) for p in summary["phases"]]

    def phase_of(t: float) -> str | None:
        return next((name for name, lo, hi in windows if lo <= t < hi), None)

    samples = [
        {
            "run_id": run_id,
            "t": s.t,
            "phase": phase_of(s.t),
            "rtt_us": s.rtt_us,
            "send_us": s.send_us,
            "receive_us": s.receive_us,
            "lost": s.lost,
        }
        for s in loaded_phases.samples(result, interval)
    ]
    return {"latency_phases": phases, "latency_samples": samples}


class LoadedLatency:
    name = "latency-under-load"
    title: ClassVar[str] = (
        "Latency under load: an irtt (or ping) probe idle, then while iperf3 loads the path up, "
        "down and both ways; per phase RTT percentiles, inflation over idle, loss, throughput."
    )
    params_model: ClassVar[type[LoadedLatencyParams]] = LoadedLatencyParams
    measures: ClassVar[Measure] = "latency"
    needs_server = True
    #: the load needs iperf3 everywhere; the probe is chosen per run (irtt, else ping)
    tools: tuple[str, ...] = ("iperf3",)
    packages: ClassVar[dict[str, dict[str, str]]] = {
        **Iperf3.packages,
        **Irtt.packages,
        **Ping.packages,
    }

    table_rows = staticmethod(table_rows)

    @staticmethod
    def summary(result: Mapping[str, Any]) -> Summary:
        summary = result.get("summary")
        phases = summary.get("phases") if isinstance(summary, dict) else None
        return Summary(None, loaded_phases.one_line(phases if isinstance(phases, list) else []))

    async def probe(self, host: Host) -> EngineInfo:
        iperf3 = await tool_version(host, "iperf3")
        if iperf3 is None:
            raise EngineError(
                f"host {host.name}: iperf3 is not installed (it generates the load)",
                hint="install iperf3 (Debian: apt-get install iperf3)",
            )
        tools: dict[str, tuple[int, ...]] = {"iperf3": iperf3}
        irtt = await _irtt_version(host)
        if irtt is not None:
            tools["irtt"] = irtt
        if await _has_ping(host):
            tools["ping"] = ()
        text = ", ".join(f"{t} {version_text(v)}".strip() for t, v in tools.items())
        return ToolsInfo(
            self.name, text, iperf3, tools=tools, cpus=await cpu_count(host),
            boot_id=await boot_id(host),
        )  # fmt: skip

    def unsupported(self, params: LoadedLatencyParams, info: EngineInfo) -> list[str]:
        problems = []
        if "both" in params.phases and info.version_tuple < MIN_BIDIR:
            problems.append(
                f"phase 'both' needs iperf3 ≥ 3.7 (--bidir), this host has {info.version}"
            )
        if params.probe == "irtt" and not (isinstance(info, ToolsInfo) and "irtt" in info.tools):
            problems.append("probe irtt: irtt is not installed (apt-get install irtt)")
        return problems

    def load_argv(
        self, params: LoadedLatencyParams, phase: Phase, address: str, port: int
    ) -> list[str]:
        argv = ["iperf3", "-c", address, "-p", str(port), "-J", "-t", str(int(params.duration)),
                "-P", str(params.parallel)]  # fmt: skip
        return argv + {"up": [], "down": ["-R"], "both": ["--bidir"]}[phase]

    def probe_argv(
        self, tool: str, params: LoadedLatencyParams, address: str, port: int | None
    ) -> list[str]:
        total = f"{params.measured_seconds():g}"
        if tool == "irtt":
            interval = f"{params.interval * 1000:g}ms"
            return ["irtt", "client", "-Q", "-o", "-", "-i", interval, "-d", f"{total}s",
                    f"{address}:{port}"]  # fmt: skip
        return ["ping", "-n", "-D", "-i", f"{params.interval:g}", "-w", total, address]

    async def execute(self, session: RunSession, params: LoadedLatencyParams) -> Outcome:
        check_params(params, LoadedLatencyParams)
        tool = choose(params.probe, session.client_info, session.server_info)
        if tool is None:
            raise EngineError(
                f"no probe for latency under load: {params.probe} is not on both hosts",
                hint="install irtt on both hosts (apt-get install irtt), or use probe: ping",
            )
        address = session.server.address
        load_server = await session.start_server(
            lambda port: ["iperf3", "-s", "-B", address, "-p", str(port)]
        )
        probe_port = None
        if tool == "irtt":
            irtt = await session.start_server(
                lambda port: ["irtt", "server", "-b", f"{address}:{port}"], protocol="udp"
            )
            probe_port = irtt.port
        timeline: list[dict[str, Any]] = [{"name": "idle", "start_s": 0.0, "end_s": params.idle}]
        rate, source = link_rate(params, session.client, session.server)
        session.notes["latency_under_load"] = {
            "probe": tool,
            "phases": timeline,
            "link_rate": rate,
            "link_rate_source": source,
        }
        t0 = time.monotonic()
        session.notes["latency_under_load"]["probe_started"] = time.time()
        probe = await session.start_client(self.probe_argv(tool, params, address, probe_port))
        assert load_server.port is not None
        for phase, start in zip(params.phases, params.starts(), strict=True):
            await asyncio.sleep(max(0.0, t0 + start - time.monotonic()))
            began = time.monotonic() - t0
            load = await session.start_client(
                self.load_argv(params, phase, address, load_server.port)
            )
            timeline.append({"name": phase, "start_s": began, "end_s": None})
            await session.follow(load)
            timeline[-1]["end_s"] = min(time.monotonic() - t0, began + params.duration)
        await session.follow(probe)
        return self.salvage(session, params, interrupted=False)

    def salvage(
        self, session: RunSession, params: LoadedLatencyParams, interrupted: bool
    ) -> Outcome:
        clients = session.clients()
        state = session.notes.get("latency_under_load") or {}
        if not clients:
            why = "stopped before the probe started"
            return Outcome("interrupted" if interrupted else "failed", why, None)
        probe: Started = clients[0]
        tool = state.get("probe")
        output: Any = probe.process.stdout
        if tool == "irtt":
            try:
                output = json.loads(output)
            except ValueError:
                output = None
        phases = [dict(p) for p in state.get("phases") or []]
        loads = clients[1:]
        for phase, load in zip(phases[1:], loads, strict=False):
            try:
                doc = json.loads(load.process.stdout)
            except ValueError:
                doc = None
            phase["load"] = doc if isinstance(doc, dict) else None
            error = doc.get("error") if isinstance(doc, dict) else "iperf3 printed no JSON"
            phase["load_error"] = f"load failed: {error}" if error else None
            if phase.get("end_s") is None:  # stopped mid-phase
                phase["end_s"] = phase["start_s"] + params.duration
        result: dict[str, Any] = {
            "tool": self.name, "probe": tool, "probe_output": output, "phases": phases,
            "link_rate": state.get("link_rate", params.link_rate),
            "link_rate_source": state.get("link_rate_source"),
            "probe_started": state.get("probe_started"),
        }  # fmt: skip
        if output is None or (tool == "irtt" and not isinstance(output, dict)):
            status: Literal["ok", "failed", "interrupted"] = (
                "interrupted" if interrupted else "failed"
            )
            text = (probe.process.stderr or probe.process.stdout).strip()[-300:]
            result["probe_output"] = probe.process.stdout
            return Outcome(status, f"the {tool} probe printed no result: {text}", result)
        result["summary"] = summarize(result, params.model_dump())
        if interrupted:
            return Outcome("interrupted", "interrupted by the user", result)
        phases_done = result["summary"]["phases"]
        if not phases_done or phases_done[0]["p50_us"] is None:
            return Outcome("failed", "no reply to the probe while idle", result)
        failed = [p["phase"] for p in phases[1:] if p.get("load_error")]
        if failed:
            return Outcome("failed", f"the load failed in phase {', '.join(failed)}", result)
        return Outcome("ok", None, result)
