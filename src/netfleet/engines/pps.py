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
* ``receiver_drops``: datagrams the receiving host dropped because the tool's socket buffer was
  full (its UDP ``RcvbufErrors`` before and after the run, :mod:`.socket_drops`; None where they
  cannot be read), and ``arrived_pps``: what reached the receiving host (delivered + those);
* ``limit``: what held the rate — ``path`` (more than ``loss_ok`` % lost before the receiving
  host: the path or a policer; its ceiling is what arrived), ``receiver`` (the receiving host got
  the datagrams but more than ``loss_ok`` % overflowed the tool's socket buffer: the path's
  ceiling is at least what arrived), ``sender`` (nothing lost to speak of but the sender offered
  less than asked, or offered all it could: the ceiling is at least what arrived) or ``none``
  (the offered rate was delivered). Where the receiver's drops cannot be read, a loss is
  ``path`` and its words say the receiver may have dropped part of it;
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

from netfleet.engines import socket_drops
from netfleet.engines.contract import (
    EngineInfo,
    Host,
    Measure,
    Outcome,
    Summary,
    check_params,
    server_sends,
)
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
#: limits whose figure is a lower bound of the path's ceiling: a host held the rate
LOWER_BOUND = ("sender", "receiver")


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
    sent_pps: float,
    delivered_pps: float,
    offered_pps: float | None,
    loss_ok: float,
    dropped_pps: float | None = None,
) -> tuple[str, str]:
    """What limited the rate, and why in words (see the module's text). ``dropped_pps``: the
    receiving host's socket-buffer drops per second (None: not known)."""
    lost = 100 * (1 - delivered_pps / sent_pps) if sent_pps else 0.0
    if dropped_pps is None:
        if lost > loss_ok:
            return "path", (
                f"{lost:.1f} % of the datagrams sent were lost (> {loss_ok:g} %): the path or a "
                "policer dropped them, or the receiver (its socket-buffer drops could not be "
                "read) — the path's ceiling is what was delivered, or more"
            )
        arrived = delivered_pps
    else:
        arrived = min(sent_pps, delivered_pps + dropped_pps)
        on_path = 100 * (1 - arrived / sent_pps) if sent_pps else 0.0
        at_receiver = 100 * (arrived - delivered_pps) / sent_pps if sent_pps else 0.0
        if on_path > loss_ok:
            also = (
                f"; the receiver's socket buffer dropped {at_receiver:.1f} % more"
                if at_receiver > 0
                else ""
            )
            return "path", (
                f"{on_path:.1f} % of the datagrams sent were lost before the receiving host "
                f"(> {loss_ok:g} %): the path or a policer dropped them — its ceiling is what "
                f"arrived, {arrived:,.0f} pps{also}"
            )
        if at_receiver > loss_ok:
            return "receiver", (
                f"{at_receiver:.1f} % of the datagrams sent reached the receiving host but "
                f"overflowed the tool's socket buffer (> {loss_ok:g} %): the receiver fell "
                f"behind, not the path — its ceiling is at least the {arrived:,.0f} pps that "
                "arrived (a faster or less busy receiver, or more streams, to find it)"
            )
    if offered_pps is None:
        return "sender", (
            "the sender sent all it could and nearly all arrived: the path's ceiling is at "
            f"least the {arrived:,.0f} pps that arrived (more senders, or a faster host, to "
            "find it)"
        )
    if sent_pps < REACHED * offered_pps:
        return "sender", (
            f"the sender offered {sent_pps:,.0f} of the {offered_pps:,.0f} pps asked: the "
            f"path's ceiling is at least the {arrived:,.0f} pps that arrived"
        )
    return "none", f"the {offered_pps:,.0f} pps offered were delivered"


def summarize(
    chosen: str, inner: Mapping[str, Any], params: PpsParams, dropped: int | None = None
) -> dict[str, Any] | None:
    """Sent, arrived and delivered packets per second, loss and the limit, from the chosen
    result and the receiving host's socket-buffer drops during the run (``dropped``)."""
    found = counts(chosen, inner, params.size)
    if found is None:
        return None
    sent_pps = found["sent"] / found["seconds"]
    delivered_pps = found["delivered"] / found["seconds"]
    dropped_pps = None if dropped is None else dropped / found["seconds"]
    arrived_pps = None if dropped_pps is None else min(sent_pps, delivered_pps + dropped_pps)
    limit, why = verdict(sent_pps, delivered_pps, params.offered_pps, params.loss_ok, dropped_pps)
    return {
        "size_bytes": params.size,
        "streams": params.parallel,
        "offered_pps": params.offered_pps,
        "sent_pps": sent_pps,
        "arrived_pps": arrived_pps,
        "delivered_pps": delivered_pps,
        "receiver_drops": dropped,
        "loss_percent": 100 * (1 - delivered_pps / sent_pps) if sent_pps else None,
        "delivered_payload_bps": delivered_pps * params.size * 8,
        "seconds": found["seconds"],
        "limit": limit,
        "why": why,
    }


def one_line(summary: Mapping[str, Any] | None) -> str:
    """``412 kpps delivered of 520 kpps sent (20.8 % lost, 64 B): path-limited``; where the
    receiving host dropped some in its socket buffer, what arrived and what the tool read:
    ``≥ 18.9 kpps arrived (18.4 read) of 19.1 kpps sent (3.4 % lost: 2.9 % in the receiver's
    socket buffer, 64 B): receiver-limited``."""
    if not isinstance(summary, Mapping) or _num(summary.get("delivered_pps")) is None:
        return "no packet counts in the result"
    delivered, sent = float(summary["delivered_pps"]), float(summary["sent_pps"])
    loss = _num(summary.get("loss_percent")) or 0.0
    limit = summary.get("limit")
    at_least = "≥ " if limit in LOWER_BOUND else ""
    size = summary.get("size_bytes")
    arrived = _num(summary.get("arrived_pps"))
    if arrived is None or arrived <= delivered or not sent:
        return (
            f"{at_least}{delivered / 1e3:,.1f} kpps delivered of {sent / 1e3:,.1f} kpps sent "
            f"({loss:.1f} % lost, {size} B): {limit}-limited"
        )
    at_receiver = 100 * (arrived - delivered) / sent
    return (
        f"{at_least}{arrived / 1e3:,.1f} kpps arrived ({delivered / 1e3:,.1f} read) of "
        f"{sent / 1e3:,.1f} kpps sent ({loss:.1f} % lost: {at_receiver:.1f} % in the receiver's "
        f"socket buffer, {size} B): {limit}-limited"
    )


class Pps:
    name = "pps"
    title: ClassVar[str] = (
        "Packets per second: small UDP datagrams as fast as the sender can (or at offered_pps); "
        "sent, arrived and delivered pps, loss, sender-, receiver- or path-limited, ENA pps "
        "allowance deltas."
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
        receiver = receiving_host(session, params)
        before = await socket_drops.read(receiver)
        if isinstance(inner, Iperf2Params):
            outcome = await Iperf2().execute(session, inner)
        else:
            outcome = await Iperf3().execute(session, inner)
        dropped = socket_drops.grown(before, await socket_drops.read(receiver))
        return wrap(chosen, outcome, params, dropped)

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


def receiving_host(session: RunSession, params: PpsParams) -> Host:
    """The host the datagrams go to: the client where the server sends, else the server."""
    return session.client if server_sends(params.direction, session.run.subject) else session.server


def wrap(chosen: str, inner: Outcome, params: PpsParams, dropped: int | None = None) -> Outcome:
    """The chosen tool's outcome with netfleet's packet counts beside its untouched result
    (``dropped``: the receiving host's socket-buffer drops during the run, None if unknown)."""
    result = inner.result if isinstance(inner.result, Mapping) else {}
    summary = summarize(chosen, result, params, dropped) if inner.result else None
    status, reason = inner.status, inner.reason
    if status == "ok" and summary is None:
        status, reason = "failed", f"{chosen} reported no packet counts"
    wrapped = {"tool": "pps", "chosen": chosen, "summary": summary, "result": inner.result}
    return Outcome(status, reason, wrapped)
