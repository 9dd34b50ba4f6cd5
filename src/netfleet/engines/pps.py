"""``pps``: a path's small-packet ceiling — UDP datagrams of ``size`` bytes sent as fast as the
sender can (or at ``offered_pps``), counted where they were sent and where they arrived.

Cloud instances are limited in packets per second as well as in bits (AWS: an allowance per
instance, counted by the ENA driver's ``pps_allowance_exceeded``); small packets reach that
limit long before the bandwidth one. The tool is iperf 2 where both hosts have it — one thread
per stream, it offered the most packets per second here (``bench/pps_tools.py``,
docs/engines.md) — else iperf3 (one thread in 3.12). The chosen engine's own result is kept
untouched (``result``); netfleet adds:

* ``sent_pps`` and ``delivered_pps``: datagrams per second the sender sent and the receiver got
  (iperf 2: the sender's bytes ÷ ``size``, the receiver's count less its losses; iperf3: its
  ``end.sum`` packets and lost packets), with ``loss_percent``;
* ``limit``: what held the rate — ``path`` (more than ``loss_ok`` % lost: the path, a policer or
  the receiver dropped; the ceiling is what was delivered), ``sender`` (nothing lost to speak
  of but the sender offered less than asked, or offered all it could: the path's ceiling is at
  least what was delivered) or ``none`` (the offered rate was delivered);
* the run's ENA allowance deltas (``pps_allowance_exceeded``, ``conntrack_allowance_exceeded``,
  ``linklocal_allowance_exceeded``) are recorded by the runner around every run on hosts that
  have the counters (``notes.ena_allowance_deltas``); ``netfleet report pps`` shows them.

No catalog rows beyond the run's own: the cheat sheet and the topology table never read small
datagrams as throughput (``measures = "packets"``). ``netfleet report pps`` reads the raw
results.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from netfleet.engines.contract import EngineInfo, Host, Measure, Outcome, Summary, check_params
from netfleet.engines.iperf2 import Iperf2
from netfleet.engines.iperf3 import Iperf3
from netfleet.engines.params.iperf2 import Iperf2Params
from netfleet.engines.params.iperf3 import Iperf3Params
from netfleet.engines.params.pps import PpsParams
from netfleet.engines.probes import ToolsInfo, probe_tools
from netfleet.engines.summaries import no_rows
from netfleet.errors import EngineError

if TYPE_CHECKING:
    from netfleet.engines.contract import RunSession

TOOLS = ["iperf2", "iperf3"]
#: what "as fast as the sender can" offers (a pacing rate no host reaches)
UNLIMITED = "100gbit"
#: an offered rate reached within this share counts as reached
REACHED = 0.95


def _tools(info: EngineInfo) -> dict[str, tuple[int, ...]]:
    return dict(info.tools) if isinstance(info, ToolsInfo) else {}


def choose(params: PpsParams, client: EngineInfo, server: EngineInfo) -> str | None:
    """The tool for one run: the one asked for, else iperf 2 where both hosts have it (a thread
    per stream), else iperf3; None when the hosts share neither."""
    both = [t for t in TOOLS if t in _tools(client) and t in _tools(server)]
    if params.tool != "auto":
        return params.tool if params.tool in both else None
    return both[0] if both else None


def _bitrate(params: PpsParams) -> str:
    """The pacing rate of one stream: ``offered_pps`` shared by the streams, in bits (the
    tools pace the payload bits), else :data:`UNLIMITED`."""
    if params.offered_pps is None:
        return UNLIMITED
    per_stream = params.offered_pps / params.parallel
    return f"{max(1.0, per_stream * params.size * 8):.0f}bit"


def inner_params(params: PpsParams, tool: str) -> Iperf2Params | Iperf3Params:
    """The chosen tool's own parameters: UDP, ``size``-byte datagrams, the streams, the rate."""
    values: dict[str, Any] = {
        "duration": params.duration,
        "parallel": params.parallel,
        "direction": params.direction,
        "protocol": "udp",
        "length": params.size,
        "bitrate": _bitrate(params),
        "interval": 1,
    }
    model = Iperf2Params if tool == "iperf2" else Iperf3Params
    return model.model_validate(values)


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def counts(chosen: str, inner: Mapping[str, Any], size: int) -> dict[str, float] | None:
    """Packets sent and lost, and the seconds they took, from the chosen tool's result; None
    when it holds no count (a failed run)."""
    if chosen == "iperf2":
        summary = inner.get("summary")
        summary = summary if isinstance(summary, Mapping) else {}
        udp = summary.get("udp")
        udp = udp if isinstance(udp, Mapping) else {}
        seconds = _num(summary.get("seconds"))
        arrived, lost = _num(udp.get("packets")), _num(udp.get("lost_packets"))
        sent_bytes = _num(summary.get("sender_bytes"))
        if not seconds or arrived is None or lost is None:
            return None
        # the receiver counts by sequence number (arrived + lost); the sender by its bytes
        sent = sent_bytes / size if sent_bytes else arrived
        return {"sent": max(sent, arrived), "delivered": arrived - lost, "seconds": seconds}
    end = inner.get("end")
    total = end.get("sum") if isinstance(end, Mapping) else None
    if not isinstance(total, Mapping):
        return None
    seconds, packets = _num(total.get("seconds")), _num(total.get("packets"))
    lost = _num(total.get("lost_packets"))
    if not seconds or packets is None or lost is None:
        return None
    return {"sent": packets, "delivered": packets - lost, "seconds": seconds}


def verdict(
    sent_pps: float, delivered_pps: float, offered_pps: float | None, loss_ok: float
) -> tuple[str, str]:
    """What limited the rate, and why in words (see the module's text)."""
    lost = 100 * (1 - delivered_pps / sent_pps) if sent_pps else 0.0
    if lost > loss_ok:
        return "path", (
            f"{lost:.1f} % of the datagrams sent were lost (> {loss_ok:g} %): the path, a "
            f"policer or the receiver dropped them — its ceiling is what was delivered"
        )
    if offered_pps is None:
        return "sender", (
            "the sender sent all it could and nearly all arrived: the path's ceiling is at "
            "least what was delivered (more senders, or a faster host, to find it)"
        )
    if sent_pps < REACHED * offered_pps:
        return "sender", (
            f"the sender offered {sent_pps:,.0f} of the {offered_pps:,.0f} pps asked: the "
            "path's ceiling is at least what was delivered"
        )
    return "none", f"the {offered_pps:,.0f} pps offered were delivered"


def summarize(chosen: str, inner: Mapping[str, Any], params: PpsParams) -> dict[str, Any] | None:
    """Sent and delivered packets per second, loss and the limit, from the chosen result."""
    found = counts(chosen, inner, params.size)
    if found is None:
        return None
    sent_pps = found["sent"] / found["seconds"]
    delivered_pps = found["delivered"] / found["seconds"]
    limit, why = verdict(sent_pps, delivered_pps, params.offered_pps, params.loss_ok)
    return {
        "size_bytes": params.size,
        "streams": params.parallel,
        "offered_pps": params.offered_pps,
        "sent_pps": sent_pps,
        "delivered_pps": delivered_pps,
        "loss_percent": 100 * (1 - delivered_pps / sent_pps) if sent_pps else None,
        "delivered_payload_bps": delivered_pps * params.size * 8,
        "seconds": found["seconds"],
        "limit": limit,
        "why": why,
    }


def one_line(summary: Mapping[str, Any] | None) -> str:
    """``412 kpps delivered of 520 kpps sent (20.8 % lost, 64 B): path``."""
    if not isinstance(summary, Mapping) or _num(summary.get("delivered_pps")) is None:
        return "no packet counts in the result"
    delivered, sent = float(summary["delivered_pps"]), float(summary["sent_pps"])
    loss = _num(summary.get("loss_percent")) or 0.0
    at_least = "≥ " if summary.get("limit") == "sender" else ""
    return (
        f"{at_least}{delivered / 1e3:,.1f} kpps delivered of {sent / 1e3:,.1f} kpps sent "
        f"({loss:.1f} % lost, {summary.get('size_bytes')} B): {summary.get('limit')}-limited"
    )


class Pps:
    name = "pps"
    title: ClassVar[str] = (
        "Packets per second: small UDP datagrams as fast as the sender can (or at offered_pps); "
        "sent and delivered pps, loss, sender- or path-limited, ENA pps allowance deltas."
    )
    params_model: ClassVar[type[PpsParams]] = PpsParams
    measures: ClassVar[Measure] = "packets"
    needs_server = True
    #: the tool is chosen per run from what both hosts have
    tools: tuple[str, ...] = ()
    packages: ClassVar[dict[str, dict[str, str]]] = {**Iperf2.packages, **Iperf3.packages}

    table_rows = staticmethod(no_rows)

    @staticmethod
    def summary(result: Mapping[str, Any]) -> Summary:
        found = result.get("summary")
        return Summary(None, one_line(found if isinstance(found, Mapping) else None))

    async def probe(self, host: Host) -> EngineInfo:
        info = await probe_tools(host, self.name, TOOLS)
        if not info.tools:
            raise EngineError(
                f"host {host.name}: neither iperf (2) nor iperf3 is installed",
                hint="install them (Debian: apt-get install iperf iperf3)",
            )
        return info

    def unsupported(self, params: PpsParams, info: EngineInfo) -> list[str]:
        if params.tool != "auto" and params.tool not in _tools(info):
            return [f"tool {params.tool} is not installed (this host has {info.version})"]
        return []

    async def execute(self, session: RunSession, params: PpsParams) -> Outcome:
        check_params(params, PpsParams)
        chosen = choose(params, session.client_info, session.server_info)
        if chosen is None:
            return Outcome(
                "failed",
                f"no pps tool on both hosts (client: {session.client_info.version}; "
                f"server: {session.server_info.version})",
                None,
            )
        session.notes["pps_tool"] = chosen
        inner = inner_params(params, chosen)
        if isinstance(inner, Iperf2Params):
            outcome = await Iperf2().execute(session, inner)
        else:
            outcome = await Iperf3().execute(session, inner)
        return wrap(chosen, outcome, params)

    def salvage(self, session: RunSession, params: PpsParams, interrupted: bool) -> Outcome:
        chosen = session.notes.get("pps_tool")
        if chosen not in TOOLS:
            why = "stopped before the tool was chosen"
            return Outcome("interrupted" if interrupted else "failed", why, None)
        inner = inner_params(params, str(chosen))
        if isinstance(inner, Iperf2Params):
            outcome = Iperf2().salvage(session, inner, interrupted)
        else:
            outcome = Iperf3().salvage(session, inner, interrupted)
        return wrap(str(chosen), outcome, params)


def wrap(chosen: str, inner: Outcome, params: PpsParams) -> Outcome:
    """The chosen tool's outcome with netfleet's packet counts beside its untouched result."""
    result = inner.result if isinstance(inner.result, Mapping) else {}
    summary = summarize(chosen, result, params) if inner.result else None
    status, reason = inner.status, inner.reason
    if status == "ok" and summary is None:
        status, reason = "failed", f"{chosen} reported no packet counts"
    wrapped = {"tool": "pps", "chosen": chosen, "summary": summary, "result": inner.result}
    return Outcome(status, reason, wrapped)
