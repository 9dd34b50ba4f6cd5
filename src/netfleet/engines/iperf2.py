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
import math
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from netfleet.engines.contract import EngineInfo, Host, Outcome, check_params
from netfleet.engines.params.iperf2 import Iperf2Params
from netfleet.engines.probes import tool_version, version_text
from netfleet.errors import EngineError
from netfleet.units import parse_rate, parse_size

if TYPE_CHECKING:
    from netfleet.engines.contract import RunSession, Started

#: how long to wait after the client for the server's final CSV lines
SERVER_DRAIN_S = 3.0


@dataclass(frozen=True)
class CsvLine:
    """One ``-y C`` line."""

    src: str
    sport: int
    dst: str
    dport: int
    stream: int
    start: float
    end: float
    bytes: int
    bps: float
    jitter_ms: float | None = None
    lost: int | None = None
    total: int | None = None
    lost_percent: float | None = None
    out_of_order: int | None = None


def parse_csv(text: str) -> list[CsvLine]:
    """Every well-formed CSV line of iperf2 output; anything else is skipped."""
    out = []
    for raw in text.splitlines():
        f = raw.strip().split(",")
        if len(f) not in (9, 14) or "-" not in f[6]:
            continue
        try:
            start, end = (float(x) for x in f[6].split("-", 1))
            udp: dict[str, Any] = {}
            if len(f) == 14:
                udp = {
                    "jitter_ms": float(f[9]),
                    "lost": int(f[10]),
                    "total": int(f[11]),
                    "lost_percent": float(f[12]),
                    "out_of_order": int(f[13]),
                }
            line = CsvLine(
                f[1], int(f[2]), f[3], int(f[4]), int(f[5]), start, end, int(f[7]), float(f[8]),
                **udp,
            )  # fmt: skip
        except ValueError:
            continue
        if not all(math.isfinite(x) for x in (start, end, line.bps)):
            continue  # "nan"/"inf" from a misbehaving (or hostile) host is not a measurement
        out.append(line)
    return out


#: an interval line of iperf2's text output (``-e`` or plain): ``[  1] 0.0000-1.0000 sec  547 MBytes
#: 4.59 Gbits/sec ...`` (``[ *1]`` on a ``-R`` client); UDP server lines add ``0.001 ms 0/893 (0%)``
TEXT_LINE = re.compile(
    r"^\[\s*\*?(?P<id>\d+)\]\s+(?P<start>[\d.]+)\s*-\s*(?P<end>[\d.]+)\s+sec\s+"
    r"(?P<xfer>[\d.]+)\s+(?P<xunit>[KMGT]?Bytes)\s+(?P<rate>[\d.]+)\s+(?P<runit>[KMGT]?(?:bits|Bytes))/sec"
    r"(?:\s+(?P<jitter>[\d.]+)\s+ms\s+(?P<lost>-?\d+)/\s*(?P<total>\d+)\s+\((?P<pct>[\d.eE+-]+)%\))?"
)
_SCALE = {"": 1, "K": 1, "M": 2, "G": 3, "T": 4}


def parse_text(text: str) -> list[CsvLine]:
    """The per-stream interval and final lines of iperf2's human-readable output (``-e`` or
    plain), as :class:`CsvLine` values. Transfer units are binary (KBytes = 1024 bytes), rate
    units decimal (Mbits = 10^6 bits); both are rounded to 3 significant digits by iperf2, so
    ``bytes`` here is approximate. ``[SUM]`` lines and the server report a UDP client echoes are
    skipped (netfleet sums the streams; the server's own output has that report)."""
    out: list[CsvLine] = []
    for raw in text.splitlines():
        if "Server Report:" in raw:
            break  # what follows on a UDP client is the server's final, not the client's
        m = TEXT_LINE.match(raw.strip())
        if m is None:
            continue
        runit = m["runit"]
        nbytes = float(m["xfer"]) * 1024 ** _SCALE[m["xunit"].removesuffix("Bytes")]
        if runit.endswith("bits"):
            rate = float(m["rate"]) * 1000 ** _SCALE[runit.removesuffix("bits")]
        else:  # -f K/M/G: bytes per second, binary units
            rate = float(m["rate"]) * 8 * 1024 ** _SCALE[runit.removesuffix("Bytes")]
        udp: dict[str, Any] = {}
        if m["jitter"] is not None:
            udp = {
                "jitter_ms": float(m["jitter"]),
                "lost": int(m["lost"]),
                "total": int(m["total"]),
                "lost_percent": float(m["pct"]),
                "out_of_order": None,
            }
        start, end = float(m["start"]), float(m["end"])
        if not all(math.isfinite(x) for x in (start, end, rate, nbytes)):
            continue
        out.append(CsvLine("", 0, "", 0, int(m["id"]), start, end, round(nbytes), rate, **udp))
    return out


def parse_output(text: str) -> list[CsvLine]:
    """CSV lines when the output is ``-y C``, else the text lines."""
    return parse_csv(text) or parse_text(text)


def split_finals(lines: list[CsvLine], interval: float) -> tuple[list[CsvLine], list[CsvLine]]:
    """(interval lines, final summary lines). A stream's final line starts at 0 and spans more
    than one interval, or repeats the span of its first interval (a run of one interval)."""
    intervals: list[CsvLine] = []
    finals: list[CsvLine] = []
    seen: dict[tuple[int, float, float], int] = {}
    for line in lines:
        if line.stream < 0:
            continue  # a sum line: netfleet sums the streams itself
        key = (line.stream, round(line.start, 3), round(line.end, 3))
        long_span = line.start == 0 and line.end - line.start > interval * 1.5
        if long_span or key in seen:
            finals.append(line)
        else:
            seen[key] = 1
            intervals.append(line)
    return intervals, finals


def summarize(client: str, server: str, params: Iperf2Params, subject: str) -> dict[str, Any]:
    """Totals from both ends: bytes and rate of the receiver (the truthful side), UDP loss from
    the server's lines."""
    reverse = (params.direction == "in") == (subject == "client")
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


class Iperf2:
    name = "iperf2"
    #: commands the preflight checks
    tools: tuple[str, ...] = ("iperf",)
    #: tool → package, per package manager
    packages: ClassVar[dict[str, dict[str, str]]] = {
        "iperf": {"apt-get": "iperf", "dnf": "iperf", "yum": "iperf", "apk": "iperf"}
    }
    needs_server = True

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
        if (params.direction == "in") == (subject == "client"):
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
