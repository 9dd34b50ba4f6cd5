"""``latency``: request/response latency like seed 001's uperf profile, with sockperf or iperf2.

One TCP connection, a ``size``-byte request and a ``size``-byte response back to back for
``duration`` seconds; the result says transactions/s, mean, p50/p90/p99/p99.9, min, max and
whether the numbers are the full round trip. ``tool: auto`` uses sockperf when both hosts have
it (percentiles from every sample), else iperf2 ``--bounceback`` (100 µs histogram bins).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from netfleet.engines import bounceback, latency_rows, sockperf
from netfleet.engines.contract import (
    EngineInfo,
    Host,
    Measure,
    Outcome,
    Summary,
    check_params,
)
from netfleet.engines.iperf2 import Iperf2
from netfleet.engines.params.latency import LatencyParams
from netfleet.engines.probes import ToolsInfo, probe_tools
from netfleet.engines.summaries import latency_summary
from netfleet.errors import EngineError

if TYPE_CHECKING:
    from netfleet.engines.contract import RunSession

TOOLS = ["sockperf", "iperf2"]
#: iperf 2 gained --bounceback in 2.1
MIN_IPERF2 = (2, 1)


def usable(info: EngineInfo) -> set[str]:
    if not isinstance(info, ToolsInfo):
        return set()
    found = {t for t in TOOLS if t in info.tools}
    if "iperf2" in found and info.tools["iperf2"] < MIN_IPERF2:
        found.discard("iperf2")
    return found


def choose(tool: str, client: EngineInfo, server: EngineInfo) -> str | None:
    """The tool both hosts can run: the asked one, or for auto sockperf before iperf2."""
    both = usable(client) & usable(server)
    wanted = TOOLS if tool == "auto" else [tool]
    return next((t for t in wanted if t in both), None)


class Latency:
    name = "latency"
    title: ClassVar[str] = "Request/response latency: sockperf ping-pong or iperf2 --bounceback."
    params_model: ClassVar[type[LatencyParams]] = LatencyParams
    measures: ClassVar[Measure] = "latency"
    #: commands the preflight checks (the tool is chosen per host at run time)
    tools: tuple[str, ...] = ()
    #: tool → package, per package manager
    packages: ClassVar[dict[str, dict[str, str]]] = {
        **{"sockperf": {"apt-get": "sockperf", "dnf": "sockperf", "yum": "sockperf"}},
        **Iperf2.packages,
    }
    needs_server = True

    table_rows = staticmethod(latency_rows.latency_rows)

    @staticmethod
    def summary(result: Mapping[str, Any]) -> Summary:
        summary = result.get("summary")
        return latency_summary(summary if isinstance(summary, Mapping) else {})

    async def probe(self, host: Host) -> EngineInfo:
        info = await probe_tools(host, self.name, TOOLS)
        if not usable(info):
            raise EngineError(
                f"host {host.name}: neither sockperf nor iperf ≥ 2.1 is installed",
                hint="install one (Debian: apt-get install sockperf iperf)",
            )
        return info

    def unsupported(self, params: LatencyParams, info: EngineInfo) -> list[str]:
        if params.tool != "auto" and params.tool not in usable(info):
            return [f"tool {params.tool} is not installed (this host has {info.version})"]
        if params.tool == "iperf2" and not params.full_rtt:
            return ["iperf2 --bounceback reports the full round trip only: set full_rtt: true"]
        return []

    async def execute(self, session: RunSession, params: LatencyParams) -> Outcome:
        check_params(params, LatencyParams)
        tool = choose(params.tool, session.client_info, session.server_info)
        if tool is None:
            return Outcome(
                "failed",
                f"no latency tool on both hosts (client: {session.client_info.version}; "
                f"server: {session.server_info.version})",
                None,
            )
        session.notes["latency_tool"] = tool
        address = session.server.address
        if tool == "sockperf":
            server = await session.start_server(lambda port: sockperf.server_argv(port, address))
            assert server.port is not None
            argv = sockperf.client_argv(
                address, server.port, params.duration, params.size, params.full_rtt
            )
        else:
            server = await session.start_server(lambda port: bounceback.server_argv(port, address))
            assert server.port is not None
            argv = bounceback.client_argv(address, server.port, params.duration, params.size)
        client = await session.start_client(argv)
        await session.follow(client)
        return self.salvage(session, params, interrupted=False)

    def salvage(self, session: RunSession, params: LatencyParams, interrupted: bool) -> Outcome:
        tool = session.notes.get("latency_tool")
        clients = session.clients()
        if not clients or tool is None:
            why = "stopped before the client started"
            return Outcome("interrupted" if interrupted else "failed", why, None)
        p = clients[-1].process
        if tool == "sockperf":
            report, summary = sockperf.summarize(p.stdout)
            result = {"tool": tool, "client_output": report, "summary": summary}
        else:
            summary = bounceback.summarize(p.stdout)
            result = {"tool": tool, "client_output": p.stdout, "summary": summary}
        summary["size"] = params.size
        status: Literal["ok", "failed", "interrupted"] = "ok"
        reason = None
        if interrupted:
            status, reason = "interrupted", "interrupted by the user"
        elif not summary.get("transactions"):
            status = "failed"
            reason = f"{tool} reported no transactions: {(p.stderr or p.stdout).strip()[-300:]}"
        return Outcome(status, reason, result)
