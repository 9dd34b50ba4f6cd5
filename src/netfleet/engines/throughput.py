"""``throughput``: saturate the link with the tool that does it best on these hosts.

``tool: auto`` decides per run from both hosts' CPU counts and engine versions:

1. iperf3 ≥ 3.16 on both hosts (one thread per stream): iperf3 with ``parallel`` streams;
2. else several CPUs and iperf3 on both: ``iperf3-multi``, one process per CPU, so no single
   iperf3 thread is the bottleneck;
3. else iperf3 on both: one process with ``parallel`` streams (one CPU per end);
4. else iperf2 on both (one thread per stream).

``parallel`` defaults to :data:`STREAMS_PER_CPU` streams per CPU of the smaller host (at least
2); ``processes`` to the smaller CPU count — halved when client and server run on one machine
(same kernel boot id: lab namespaces), since both ends' processes then share those CPUs (on 2
CPUs, two iperf3 pairs measured 27 Gbit/s where one pair with 4 streams gave 44). The choice
and why are kept in the result (``chosen``, ``why``) and in ``notes``; the chosen engine's own
result is ``result``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

from netfleet.engines import multi_rows
from netfleet.engines.contract import (
    EngineInfo,
    Evidence,
    Host,
    Measure,
    Outcome,
    Summary,
    check_params,
)
from netfleet.engines.iperf2 import Iperf2, receiver_bps
from netfleet.engines.iperf3 import Iperf3, iperf3_evidence, received_bps
from netfleet.engines.iperf3_multi import interpret as multi_interpret
from netfleet.engines.iperf3_multi import multi_evidence, run_processes
from netfleet.engines.params import Iperf3Params
from netfleet.engines.params.iperf2 import Iperf2Params
from netfleet.engines.params.throughput import ThroughputParams
from netfleet.engines.probes import ToolsInfo, probe_tools, version_text
from netfleet.engines.summaries import rate_summary
from netfleet.errors import EngineError

if TYPE_CHECKING:
    from netfleet.engines.contract import RunSession

TOOLS = ["iperf3", "iperf2"]
THREADED_IPERF3 = (3, 16)
STREAMS_PER_CPU = 2


@dataclass(frozen=True)
class Choice:
    tool: str
    parallel: int
    processes: int
    why: str


def _tools(info: EngineInfo) -> dict[str, tuple[int, ...]]:
    return dict(info.tools) if isinstance(info, ToolsInfo) else {}


def _cpus(info: EngineInfo) -> int:
    return info.cpus if isinstance(info, ToolsInfo) else 1


def _shares_cpus(client: EngineInfo, server: EngineInfo) -> bool:
    a = client.boot_id if isinstance(client, ToolsInfo) else ""
    b = server.boot_id if isinstance(server, ToolsInfo) else ""
    return bool(a) and a == b


def choose(params: ThroughputParams, client: EngineInfo, server: EngineInfo) -> Choice | None:
    """The tool, streams and processes for one run; None when the hosts share no tool."""
    ct, st = _tools(client), _tools(server)
    cpus = max(1, min(_cpus(client), _cpus(server)))
    shared = _shares_cpus(client, server)
    per_end = max(1, cpus // 2) if shared else cpus
    parallel = params.parallel or max(2, STREAMS_PER_CPU * cpus)
    processes = min(params.processes or per_end, parallel)
    both = {t for t in TOOLS if t in ct and t in st}
    where = ", one machine: both ends share them" if shared else ""
    versions = f"client {client.version}; server {server.version}; {cpus} CPUs{where}"
    if params.tool != "auto":
        base = "iperf3" if params.tool == "iperf3-multi" else params.tool
        if base not in both:
            return None
        return Choice(params.tool, parallel, processes, f"asked for {params.tool} ({versions})")
    if "iperf3" in both and min(ct["iperf3"], st["iperf3"]) >= THREADED_IPERF3:
        why = f"iperf3 ≥ 3.16 on both hosts runs one thread per stream ({versions})"
        return Choice("iperf3", parallel, 1, why)
    if "iperf3" in both and processes > 1:
        why = (
            f"iperf3 < 3.16 is one thread per process: {processes} processes for {cpus} CPUs "
            f"({versions})"
        )
        return Choice("iperf3-multi", parallel, processes, why)
    if "iperf3" in both:
        why = f"one CPU per end: one iperf3 process with {parallel} streams ({versions})"
        return Choice("iperf3", parallel, 1, why)
    if "iperf2" in both:
        return Choice("iperf2", parallel, 1, f"iperf2 runs one thread per stream ({versions})")
    return None


def _common(params: ThroughputParams, parallel: int) -> dict[str, Any]:
    values: dict[str, Any] = {
        "duration": params.duration,
        "omit": params.omit,
        "interval": params.interval,
        "parallel": parallel,
        "direction": params.direction,
    }
    if params.window is not None:
        values["window"] = params.window
    if params.length is not None:
        values["length"] = params.length
    return values


class Throughput:
    name = "throughput"
    title: ClassVar[str] = "A throughput test whose tool is chosen per run (``tool: auto``)."
    params_model: ClassVar[type[ThroughputParams]] = ThroughputParams
    measures: ClassVar[Measure] = "throughput"
    #: commands the preflight checks (the tool is chosen per host at run time)
    tools: tuple[str, ...] = ()
    #: tool → package, per package manager
    packages: ClassVar[dict[str, dict[str, str]]] = {**Iperf3.packages, **Iperf2.packages}
    needs_server = True

    table_rows = staticmethod(multi_rows.throughput_rows)

    @staticmethod
    def evidence(result: Mapping[str, Any]) -> Evidence:
        """The chosen tool's evidence; the streams are the ones the run chose."""
        inner = result.get("result")
        inner = inner if isinstance(inner, Mapping) else {}
        chosen = result.get("chosen")
        found = Evidence()
        if chosen == "iperf3":
            found = iperf3_evidence(inner)
        elif chosen == "iperf3-multi":
            found = multi_evidence(inner)
        streams = result.get("parallel")
        if isinstance(streams, int) and not isinstance(streams, bool) and streams > 0:
            found = replace(found, streams=streams)
        return found

    @staticmethod
    def summary(result: Mapping[str, Any]) -> Summary:
        inner = result.get("result")
        inner = inner if isinstance(inner, Mapping) else {}
        bps = received_bps(inner) if result.get("chosen") == "iperf3" else receiver_bps(inner)
        return rate_summary(bps)

    async def probe(self, host: Host) -> EngineInfo:
        info = await probe_tools(host, self.name, TOOLS)
        if not info.tools:
            raise EngineError(
                f"host {host.name}: neither iperf3 nor iperf is installed",
                hint="install them (Debian: apt-get install iperf3 iperf)",
            )
        return info

    def unsupported(self, params: ThroughputParams, info: EngineInfo) -> list[str]:
        tools = _tools(info)
        base = "iperf3" if params.tool == "iperf3-multi" else params.tool
        if params.tool != "auto" and base not in tools:
            return [f"tool {base} is not installed (this host has {info.version})"]
        return []

    async def execute(self, session: RunSession, params: ThroughputParams) -> Outcome:
        check_params(params, ThroughputParams)
        choice = choose(params, session.client_info, session.server_info)
        if choice is None:
            return Outcome(
                "failed",
                f"no throughput tool on both hosts (client: {session.client_info.version}; "
                f"server: {session.server_info.version})",
                None,
            )
        session.notes["throughput_choice"] = choice.__dict__
        values = _common(params, choice.parallel)
        if choice.tool == "iperf2":
            inner = await Iperf2().execute(session, Iperf2Params.model_validate(values))
        elif choice.tool == "iperf3-multi":
            base = Iperf3Params.model_validate(values)
            share, extra = divmod(choice.parallel, choice.processes)
            shares = [share + (1 if i < extra else 0) for i in range(choice.processes)]
            inner = await run_processes(session, base, shares)
        else:
            inner = await Iperf3().execute(session, Iperf3Params.model_validate(values))
        return wrap(choice, inner)

    def salvage(self, session: RunSession, params: ThroughputParams, interrupted: bool) -> Outcome:
        raw = session.notes.get("throughput_choice")
        if not raw:
            why = "stopped before the tool was chosen"
            return Outcome("interrupted" if interrupted else "failed", why, None)
        choice = Choice(**raw)
        values = _common(params, choice.parallel)
        if choice.tool == "iperf2":
            p2 = Iperf2Params.model_validate(values)
            inner = Iperf2().salvage(session, p2, interrupted)
        elif choice.tool == "iperf3-multi":
            inner = multi_interpret(session, interrupted)
        else:
            inner = Iperf3().salvage(session, Iperf3Params.model_validate(values), interrupted)
        return wrap(choice, inner)


def wrap(choice: Choice, inner: Outcome) -> Outcome:
    result = {
        "tool": "throughput",
        "chosen": choice.tool,
        "why": choice.why,
        "parallel": choice.parallel,
        "processes": choice.processes,
        "result": inner.result,
    }
    return Outcome(inner.status, inner.reason, result)


__all__ = ["Choice", "Throughput", "choose", "version_text"]
