"""iperf 2 (2.1+) throughput: ``-y C`` CSV from both ends, one thread per stream.

Facts (FIELD-NOTES, checked on 2.1.8): CSV lines are
``time,src,sport,dst,dport,id,interval,bytes,bps`` (+ ``jitter,lost,total,pct,ooo`` for UDP);
enhanced (``-e``) fields are not in the CSV; ``-P n`` prints no sum line in CSV (netfleet sums);
the client's final UDP line has total −1, so loss comes from the server's lines; a refused
connection exits 0 with "connect failed" on stdout; the server runs until stopped and a UDP
server may ignore the first SIGTERM (Process.stop escalates to SIGKILL).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from netfleet.engines import iperf2_rows
from netfleet.engines.contract import (
    Claim,
    EngineInfo,
    Host,
    ImportFormat,
    Measure,
    Outcome,
    Summary,
    check_params,
    server_sends,
)
from netfleet.engines.iperf2_csv import parse_csv, split_finals
from netfleet.engines.params.iperf2 import Iperf2Params
from netfleet.engines.probes import tool_version, version_text
from netfleet.engines.summaries import rate_summary
from netfleet.errors import EngineError
from netfleet.units import parse_rate, parse_size

if TYPE_CHECKING:
    from netfleet.engines.contract import RunSession, Started

#: how long to wait after the client for the server's final CSV lines
SERVER_DRAIN_S = 3.0


def summarize(client: str, server: str, params: Iperf2Params, subject: str) -> dict[str, Any]:
    """Totals from both ends: bytes and rate of the receiver (the truthful side), UDP loss from
    the server's lines."""
    reverse = server_sends(params.direction, subject)
    c_int, c_fin = split_finals(parse_csv(client), params.interval)
    s_int, s_fin = split_finals(parse_csv(server), params.interval)
    receiver, sender = (c_fin, s_fin) if reverse else (s_fin, c_fin)
    out: dict[str, Any] = {
        "streams": len({x.stream for x in c_fin}),
        "client_finals": len(c_fin),
        "server_finals": len(s_fin),
        "sender_bytes": sum(x.bytes for x in sender) if sender else None,
        "receiver_bytes": sum(x.bytes for x in receiver) if receiver else None,
        "receiver_bps": sum(x.bps for x in receiver) if receiver else None,
        "sender_bps": sum(x.bps for x in sender) if sender else None,
        "seconds": max((x.end for x in receiver or sender), default=None),
        "reverse": reverse,
        "interval_lines": {"client": len(c_int), "server": len(s_int)},
    }
    if params.protocol == "udp":
        udp = [x for x in s_fin if x.total is not None and x.total >= 0]
        if udp:
            lost, total = sum(x.lost or 0 for x in udp), sum(x.total or 0 for x in udp)
            out["udp"] = {
                "lost_packets": lost,
                "packets": total,
                "lost_percent": 100.0 * lost / total if total else None,
                "jitter_ms": max(x.jitter_ms or 0.0 for x in udp),
            }
    return out


def receiver_bps(result: Mapping[str, Any]) -> float | None:
    """The received rate (goodput, bit/s) of one stored iperf2 result."""
    summary = result.get("summary")
    value = summary.get("receiver_bps") if isinstance(summary, Mapping) else None
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def claim_text(plain: bytes) -> Claim:
    """iperf 2 writes CSV or text: the catch-all of non-JSON files (its reader says when there
    are no iperf 2 lines)."""
    stripped = plain.lstrip()
    return 1 if stripped and stripped[:1] != b"{" else 0


class Iperf2:
    name = "iperf2"
    title: ClassVar[str] = "A throughput test with iperf 2 (one thread per stream)."
    params_model: ClassVar[type[Iperf2Params]] = Iperf2Params
    measures: ClassVar[Measure] = "throughput"
    #: commands the preflight checks
    tools: tuple[str, ...] = ("iperf",)
    #: tool → package, per package manager
    packages: ClassVar[dict[str, dict[str, str]]] = {
        "iperf": {"apt-get": "iperf", "dnf": "iperf", "yum": "iperf", "apk": "iperf"}
    }
    needs_server = True
    #: ``netfleet import``: iperf 2 ``-y C`` CSV and its text reports (read by the store's
    #: ``import_iperf2``, which checks their intervals)
    imports: ClassVar[ImportFormat] = ImportFormat(
        "iperf 2 -y C CSV or text (-e or plain), client or server side",
        lambda plain: claim_text(plain),
    )

    table_rows = staticmethod(iperf2_rows.result_rows)

    @staticmethod
    def summary(result: Mapping[str, Any]) -> Summary:
        return rate_summary(receiver_bps(result))

    async def probe(self, host: Host) -> EngineInfo:
        v = await tool_version(host, "iperf2")
        if v is None:
            raise EngineError(
                f"host {host.name}: iperf 2 is not installed",
                hint="install it (Debian: apt-get install iperf)",
            )
        return EngineInfo(self.name, version_text(v), v)

    def unsupported(self, params: Iperf2Params, info: EngineInfo) -> list[str]:
        if info.version_tuple < (2, 1):
            return [f"netfleet drives iperf ≥ 2.1, this host has {info.version}"]
        return []

    def server_argv(self, port: int, bind: str, params: Iperf2Params) -> list[str]:
        argv = ["iperf", "--server", "--port", str(port), "--bind", bind, "--reportstyle", "C"]
        argv += ["--interval", _num(params.interval)]
        if params.protocol == "udp":
            argv.append("--udp")
        if params.window is not None:
            argv += ["--window", str(int(parse_size(params.window)))]
        return argv

    def client_argv(
        self, params: Iperf2Params, server_address: str, port: int, subject: str
    ) -> list[str]:
        argv = ["iperf", "--client", server_address, "--port", str(port), "--reportstyle", "C"]
        argv += ["--time", _num(params.duration + params.omit), "--interval", _num(params.interval)]
        argv += ["--parallel", str(params.parallel)]
        if server_sends(params.direction, subject):
            argv.append("--reverse")  # the server sends
        if params.protocol == "udp":
            argv += ["--udp", "--bandwidth", str(int(parse_rate(params.bitrate or "1mbit")))]
        elif params.bitrate:
            argv += ["--bandwidth", str(int(parse_rate(params.bitrate)))]
        if params.window is not None:
            argv += ["--window", str(int(parse_size(params.window)))]
        if params.length is not None:
            argv += ["--len", str(int(parse_size(params.length)))]
        if params.mss is not None:
            argv += ["--mss", str(params.mss)]
        return argv

    async def execute(self, session: RunSession, params: Iperf2Params) -> Outcome:
        check_params(params, Iperf2Params)
        address = session.server.address
        server = await session.start_server(
            lambda port: self.server_argv(port, address, params), protocol=params.protocol
        )
        assert server.port is not None
        client = await session.start_client(
            self.client_argv(params, address, server.port, session.run.subject)
        )
        await session.follow(client)
        await drain_server(server, params.parallel, params.interval)
        return self.interpret(session, params, interrupted=False)

    def salvage(self, session: RunSession, params: Iperf2Params, interrupted: bool) -> Outcome:
        return self.interpret(session, params, interrupted)

    def interpret(self, session: RunSession, params: Iperf2Params, interrupted: bool) -> Outcome:
        clients, servers = session.clients(), session.servers()
        if not clients:
            why = "stopped before the client started"
            return Outcome("interrupted" if interrupted else "failed", why, None)
        client = clients[-1].process
        server_out = servers[-1].process.stdout if servers else ""
        summary = summarize(client.stdout, server_out, params, session.run.subject)
        result = {
            "tool": "iperf2",
            "client_output": client.stdout,
            "server_output": server_out,
            "summary": summary,
        }
        status: Literal["ok", "failed", "interrupted"] = "ok"
        reason = None
        if interrupted:
            status, reason = "interrupted", "interrupted by the user"
        elif summary["client_finals"] < params.parallel:
            tail = (client.stdout.strip() or client.stderr.strip())[-300:] or "no output"
            status, reason = "failed", f"iperf2 printed no final report for every stream: {tail}"
        elif params.protocol == "udp" and "udp" not in summary:
            status, reason = "failed", "the iperf2 server reported no UDP totals"
        return Outcome(status, reason, result)


async def drain_server(server: Started, streams: int, interval: float) -> None:
    """Wait (briefly) until the server has printed a final line per stream, then stop it by
    PID: iperf2 servers never exit on their own."""
    deadline = time.monotonic() + SERVER_DRAIN_S
    while time.monotonic() < deadline and server.process.returncode is None:
        _, finals = split_finals(parse_csv(server.process.stdout), interval)
        if len(finals) >= streams:
            break
        await asyncio.sleep(0.1)
    await server.process.stop(grace=1)


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"
