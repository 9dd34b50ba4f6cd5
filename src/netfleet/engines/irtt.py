"""irtt: isochronous round-trip time over UDP — RTT, one-way delays, IPDV (jitter) and loss split
into upstream and downstream.

The server host runs ``irtt server -b ADDR:PORT``; the client sends one packet every ``interval``
for ``duration`` and prints irtt's JSON (``-o -``, ``-Q``: nothing else on stdout). irtt's
durations are nanoseconds; netfleet's summary and rows are µs. One-way delays are only as good as
the two hosts' clock agreement (exact in the lab: one kernel clock).

Everything netfleet knows about irtt is in this module: params model, tools, packages, how it
runs, its one-line summary and its catalog rows (the ``latency`` table: one row per run, kind
``isochronous``; one-way delays and IPDV stay in the raw result, the table has no column for them).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field

from netfleet.engines.contract import EngineInfo, Host, Measure, Outcome, Summary, check_params
from netfleet.engines.params.base import EngineParams
from netfleet.errors import EngineError, HostError

if TYPE_CHECKING:
    from netfleet.engines.contract import RunSession

NS_PER_US = 1000.0


class IrttParams(EngineParams):
    """``irtt client -i INTERVAL -d DURATION -l LENGTH`` towards the server host."""

    duration: float = Field(10, gt=0, le=86400, description="seconds of sending (-d)")
    interval: float = Field(
        0.02,
        ge=0.01,
        le=60,
        description="seconds between packets (-i; the server's minimum is 10 ms)",
    )
    length: int = Field(
        0, ge=0, le=65507, description="packet bytes including irtt's headers (-l; 0: minimum)"
    )

    def measured_seconds(self) -> float:
        return float(self.duration + 1)

    def summary(self) -> str:
        return f"every {self.interval * 1000:g} ms for {self.duration:g} s"


def _us(stats: dict[str, Any], key: str, field: str) -> float | None:
    value = stats.get(key, {}).get(field) if isinstance(stats.get(key), dict) else None
    return float(value) / NS_PER_US if isinstance(value, int | float) else None


def summarize(doc: dict[str, Any]) -> dict[str, Any]:
    """irtt's JSON → netfleet's summary (µs, counts, loss %)."""
    stats = doc.get("stats") or {}
    if not isinstance(stats, dict):
        return {"tool": "irtt"}
    out: dict[str, Any] = {"tool": "irtt", "full_round_trip": True}
    for ours, key in (("rtt", "rtt"), ("send_delay", "send_delay"),
                      ("receive_delay", "receive_delay"), ("ipdv", "ipdv_round_trip")):  # fmt: skip
        for field, name in (("mean", "mean"), ("min", "min"), ("max", "max"),
                            ("median", "p50"), ("stddev", "stdev")):  # fmt: skip
            out[f"{ours}_{name}_us"] = _us(stats, key, field)
    for key in ("packets_sent", "packets_received", "packet_loss_percent",
                "upstream_loss_percent", "downstream_loss_percent"):  # fmt: skip
        out[key] = stats.get(key)
    duration = stats.get("duration")
    out["seconds"] = duration / 1e9 if isinstance(duration, int | float) else None
    return out


def one_line(summary: dict[str, Any]) -> str:
    """A few words for progress lines: median RTT, jitter and loss."""
    p50, ipdv, loss = (
        summary.get(k) for k in ("rtt_p50_us", "ipdv_mean_us", "packet_loss_percent")
    )
    if p50 is None:
        return "no round trips"
    return f"RTT p50 {p50:.0f} µs, IPDV {ipdv or 0:.0f} µs, loss {loss or 0:g} %"


def table_rows(
    run_id: str,
    result: Mapping[str, Any],
    params: Mapping[str, Any],
    outputs: Mapping[str, Any] | None = None,
) -> dict[str, list[dict[str, Any]]]:
    """Catalog rows: one ``latency`` row per run, re-derived from irtt's own JSON."""
    s = summarize(result.get("json") or {})
    received = s.get("packets_received")
    seconds = s.get("seconds")
    row = {
        "run_id": run_id, "tool": "irtt", "kind": "isochronous", "full_round_trip": True,
        "size": params.get("length"), "transactions": received,
        "transactions_per_s": received / seconds if received is not None and seconds else None,
        "seconds": seconds, "sent": s.get("packets_sent"), "received": received,
        "loss_percent": s.get("packet_loss_percent"), "mean_us": s.get("rtt_mean_us"),
        "stdev_us": s.get("rtt_stdev_us"), "min_us": s.get("rtt_min_us"),
        "max_us": s.get("rtt_max_us"), "p50_us": s.get("rtt_p50_us"), "p90_us": None,
        "p99_us": None, "p999_us": None, "percentile_source": "irtt_median",
    }  # fmt: skip
    return {"latency": [row]}


class Irtt:
    name = "irtt"
    title: ClassVar[str] = (
        "Isochronous UDP round trips with irtt: RTT, one-way delays, IPDV, loss up/down."
    )
    params_model: ClassVar[type[IrttParams]] = IrttParams
    measures: ClassVar[Measure] = "latency"
    needs_server = True
    tools: tuple[str, ...] = ("irtt",)
    #: package per package manager (irtt is packaged in Debian/Ubuntu and Alpine)
    packages: ClassVar[dict[str, dict[str, str]]] = {"irtt": {"apt-get": "irtt", "apk": "irtt"}}

    async def probe(self, host: Host) -> EngineInfo:
        try:
            res = await host.run(["irtt", "version"], timeout=10)
        except HostError as exc:
            raise EngineError(
                f"host {host.name}: irtt is not installed", hint="install it (apt-get install irtt)"
            ) from exc
        m = re.search(r"irtt version: (\S+)", res.stdout)
        if res.returncode != 0 or m is None:
            raise EngineError(
                f"host {host.name}: cannot run irtt ({(res.stderr or res.stdout).strip()[:200]})",
                hint="install irtt",
            )
        digits = tuple(int(x) for x in re.findall(r"\d+", m.group(1))[:3])
        return EngineInfo(self.name, m.group(1), digits)

    table_rows = staticmethod(table_rows)

    @staticmethod
    def summary(result: Mapping[str, Any]) -> Summary:
        summary = result.get("summary")
        return Summary(None, one_line(summary if isinstance(summary, dict) else {}))

    def unsupported(self, params: IrttParams, info: EngineInfo) -> list[str]:
        return []

    def client_argv(self, params: IrttParams, address: str, port: int) -> list[str]:
        return [
            "irtt", "client", "-Q", "-o", "-", "-i", f"{params.interval * 1000:g}ms",
            "-d", f"{params.duration:g}s", "-l", str(params.length), f"{address}:{port}",
        ]  # fmt: skip

    async def execute(self, session: RunSession, params: IrttParams) -> Outcome:
        check_params(params, IrttParams)
        address = session.server.address
        server = await session.start_server(
            lambda port: ["irtt", "server", "-b", f"{address}:{port}"], protocol="udp"
        )
        assert server.port is not None
        client = await session.start_client(self.client_argv(params, address, server.port))
        await session.follow(client)
        return self.salvage(session, params, interrupted=False)

    def salvage(self, session: RunSession, params: IrttParams, interrupted: bool) -> Outcome:
        clients = session.clients()
        if not clients:
            why = "stopped before irtt started"
            return Outcome("interrupted" if interrupted else "failed", why, None)
        p = clients[-1].process
        try:
            doc = json.loads(p.stdout)
        except ValueError:
            doc = None
        if not isinstance(doc, dict):
            status: Literal["ok", "failed", "interrupted"] = (
                "interrupted" if interrupted else "failed"
            )
            why = f"irtt printed no JSON: {(p.stderr or p.stdout).strip()[-300:]}"
            return Outcome(status, why, {"tool": "irtt", "output": p.stdout, "stderr": p.stderr})
        summary = summarize(doc)
        result = {"tool": "irtt", "json": doc, "summary": summary}
        if interrupted:
            return Outcome("interrupted", "interrupted by the user", result)
        if not summary.get("packets_received"):
            return Outcome("failed", "no reply: 100% packet loss", result)
        return Outcome("ok", None, result)
