"""``iperf3-multi``: N iperf3 client/server pairs on N ports, merged into one logical run.

Before 3.16 one iperf3 process is one thread, so a fast link is CPU-bound in one process (seed
003: 34 Gbit/s with -P 20 against 39.7 with multi-threaded iperf2). This engine spreads
``parallel`` streams over ``processes`` pairs started together; each process's JSON is kept
whole (``processes[i].result``) and the merged totals are in ``summary``. The run is ok only when
every process is.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Literal

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
from netfleet.engines.iperf2 import receiver_bps
from netfleet.engines.iperf3 import Iperf3, iperf3_evidence
from netfleet.engines.params import Iperf3Params
from netfleet.engines.params.iperf3_multi import Iperf3MultiParams
from netfleet.engines.summaries import rate_summary

if TYPE_CHECKING:
    from netfleet.engines.contract import RunSession

_IPERF3 = Iperf3()


def process_params(params: Iperf3Params, streams: int) -> Iperf3Params:
    """One process's iperf3 options: the run's, with its share of the streams."""
    values = params.model_dump(exclude_unset=True)
    values.pop("processes", None)
    values["parallel"] = streams
    return Iperf3Params.model_validate(values)


def _end(doc: dict[str, Any] | None) -> dict[str, Any]:
    end = (doc or {}).get("end")
    return end if isinstance(end, dict) else {}


def merge_summary(docs: list[dict[str, Any] | None]) -> dict[str, Any]:
    """Totals over the processes: receiver and sender bytes and rates add up; CPU is the
    busiest process's (each process is one thread: that is the one that limits)."""
    recv = [_end(d).get("sum_received") or {} for d in docs]
    sent = [_end(d).get("sum_sent") or {} for d in docs]
    cpu = [_end(d).get("cpu_utilization_percent") or {} for d in docs]

    def numbers(rows: list[dict[str, Any]], key: str) -> list[float]:
        return [float(r[key]) for r in rows if isinstance(r.get(key), int | float)]

    def total(rows: list[dict[str, Any]], key: str) -> float | None:
        vals = numbers(rows, key)
        return sum(vals) if vals else None

    def peak(key: str) -> float | None:
        vals = numbers(cpu, key)
        return max(vals) if vals else None

    return {
        "processes": len(docs),
        "receiver_bps": total(recv, "bits_per_second"),
        "receiver_bytes": total(recv, "bytes"),
        "sender_bps": total(sent, "bits_per_second"),
        "sender_bytes": total(sent, "bytes"),
        "retransmits": total(sent, "retransmits"),
        "per_process_receiver_bps": [r.get("bits_per_second") for r in recv],
        "cpu_host_total_max": peak("host_total"),
        "cpu_remote_total_max": peak("remote_total"),
    }


def multi_evidence(result: Mapping[str, Any]) -> Evidence:
    """The merged summary's CPU maxima, bytes sent and retransmits; the path MTUs and stream
    counts of every process's iperf3 JSON."""

    def num(v: Any) -> float | None:
        return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None

    s = result.get("summary")
    s = s if isinstance(s, Mapping) else {}
    cpu = {
        role: v
        for role, v in (
            ("client", num(s.get("cpu_host_total_max"))),
            ("server", num(s.get("cpu_remote_total_max"))),
        )
        if v is not None
    }
    docs = [p.get("result") for p in result.get("processes") or [] if isinstance(p, Mapping)]
    each = [iperf3_evidence(d) for d in docs if isinstance(d, Mapping)]
    streams = sum(e.streams or 0 for e in each)
    return Evidence(
        cpu=cpu,
        sent_bytes=num(s.get("sender_bytes")),
        retransmits=num(s.get("retransmits")),
        path_mtus=tuple(m for e in each for m in e.path_mtus),
        streams=streams or None,
    )


class Iperf3Multi:
    name = "iperf3-multi"
    title: ClassVar[str] = (
        "A throughput test with several iperf3 processes on several ports, merged."
    )
    params_model: ClassVar[type[Iperf3MultiParams]] = Iperf3MultiParams
    measures: ClassVar[Measure] = "throughput"
    #: commands the preflight checks
    tools: tuple[str, ...] = ("iperf3",)
    #: tool → package, per package manager: iperf3's
    packages: ClassVar[dict[str, dict[str, str]]] = Iperf3.packages
    needs_server = True

    table_rows = staticmethod(multi_rows.multi_rows)

    @staticmethod
    def summary(result: Mapping[str, Any]) -> Summary:
        return rate_summary(receiver_bps(result))  # the merged ``summary`` has iperf2's shape

    @staticmethod
    def evidence(result: Mapping[str, Any]) -> Evidence:
        return multi_evidence(result)

    async def probe(self, host: Host) -> EngineInfo:
        info = await _IPERF3.probe(host)
        return EngineInfo(self.name, info.version, info.version_tuple)

    def unsupported(self, params: Iperf3MultiParams, info: EngineInfo) -> list[str]:
        return _IPERF3.unsupported(params, info)

    async def execute(self, session: RunSession, params: Iperf3MultiParams) -> Outcome:
        check_params(params, Iperf3MultiParams)
        return await run_processes(session, params, params.streams_per_process())

    def salvage(self, session: RunSession, params: Iperf3MultiParams, interrupted: bool) -> Outcome:
        return interpret(session, interrupted)


async def run_processes(session: RunSession, params: Iperf3Params, shares: list[int]) -> Outcome:
    """Start one server per share, then all clients together; follow them to the end."""
    address = session.server.address
    servers = []
    for _ in shares:
        servers.append(await session.start_server(lambda p: _IPERF3.server_argv(p, address)))
    argvs = []
    for server, streams in zip(servers, shares, strict=True):
        assert server.port is not None
        argvs.append(
            _IPERF3.client_argv(
                process_params(params, streams), address, server.port, session.run.subject
            )
        )
    clients = await asyncio.gather(*(session.start_client(a) for a in argvs))
    session.notes["iperf3_processes"] = [
        {"port": s.port, "parallel": n} for s, n in zip(servers, shares, strict=True)
    ]
    await session.follow(*clients)
    return interpret(session, interrupted=False)


def interpret(session: RunSession, interrupted: bool) -> Outcome:
    clients = session.clients()
    if not clients:
        why = "stopped before the clients started"
        return Outcome("interrupted" if interrupted else "failed", why, None)
    shares = session.notes.get("iperf3_processes", [])
    processes = []
    docs = []
    problems = []
    for i, c in enumerate(clients):
        p = c.process
        o = _IPERF3.interpret(p.stdout, p.stderr, p.returncode or 0, interrupted=interrupted)
        share = shares[i] if i < len(shares) else {}
        processes.append({**share, "status": o.status, "reason": o.reason, "result": o.result})
        docs.append(o.result)
        if o.status != "ok":
            problems.append(f"process {i} (port {share.get('port')}): {o.reason}")
    result = {"tool": "iperf3-multi", "processes": processes, "summary": merge_summary(docs)}
    status: Literal["ok", "failed", "interrupted"] = "ok"
    reason = None
    if interrupted:
        status, reason = "interrupted", "; ".join(problems) or "interrupted by the user"
    elif problems:
        status, reason = "failed", "; ".join(problems)
    return Outcome(status, reason, result)
