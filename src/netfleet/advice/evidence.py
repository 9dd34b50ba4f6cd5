"""Numbers the rules need, read from any throughput engine's raw result."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from netfleet.engines import measuring, summary

THROUGHPUT = measuring("throughput")


def _obj(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def inner(env: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    """(tool, its own result): the throughput wrapper is unwrapped."""
    engine = str(_obj(env.get("engine")).get("name"))
    result = _obj(env.get("result"))
    if engine == "throughput":
        return str(result.get("chosen")), _obj(result.get("result"))
    return engine, result


def receiver_bps(env: Mapping[str, Any]) -> float | None:
    """The received rate of a complete run, from its engine's own summary."""
    engine = str(_obj(env.get("engine")).get("name"))
    found = summary(engine, env.get("result"))
    return found.received_bps if found is not None else None


def cpu(env: Mapping[str, Any]) -> dict[str, float]:
    """Client ("host") and server ("remote") CPU %, where the tool reports it (iperf3)."""
    tool, r = inner(env)
    if tool == "iperf3":
        c = _obj(_obj(r.get("end")).get("cpu_utilization_percent"))
        host, remote = _num(c.get("host_total")), _num(c.get("remote_total"))
    elif tool == "iperf3-multi":
        s = _obj(r.get("summary"))
        host, remote = _num(s.get("cpu_host_total_max")), _num(s.get("cpu_remote_total_max"))
    else:
        return {}
    return {k: v for k, v in (("client", host), ("server", remote)) if v is not None}


def sent(env: Mapping[str, Any]) -> tuple[float | None, float | None]:
    """(bytes sent, TCP retransmits) where reported."""
    tool, r = inner(env)
    if tool == "iperf3":
        s = _obj(_obj(r.get("end")).get("sum_sent"))
        return _num(s.get("bytes")), _num(s.get("retransmits"))
    if tool == "iperf3-multi":
        s = _obj(r.get("summary"))
        return _num(s.get("sender_bytes")), _num(s.get("retransmits"))
    return None, None


def path_mtus(env: Mapping[str, Any]) -> list[int]:
    """``pmtu`` values the sending iperf3 streams reported (client's and server's JSON)."""
    tool, r = inner(env)
    docs: list[Mapping[str, Any]] = []
    if tool == "iperf3":
        docs = [r]
    elif tool == "iperf3-multi":
        docs = [_obj(_obj(p).get("result")) for p in r.get("processes") or []]
    found: list[int] = []
    for doc in docs:
        for d in (doc, _obj(doc.get("server_output_json"))):
            for interval in d.get("intervals") or []:
                for stream in _obj(interval).get("streams") or []:
                    v = _num(_obj(stream).get("pmtu"))
                    if v:
                        found.append(int(v))
    return found


def interface_mtu(env: Mapping[str, Any]) -> int | None:
    mtus = [
        _num(_obj(_obj(env.get(role)).get("facts")).get("mtu")) for role in ("client", "server")
    ]
    known = [int(m) for m in mtus if m]
    return min(known) if known else None


def parallel(env: Mapping[str, Any]) -> int | None:
    r = _obj(env.get("result"))
    if _obj(env.get("engine")).get("name") == "throughput":
        return int(r["parallel"]) if _num(r.get("parallel")) else None
    p = _num(_obj(env.get("params")).get("parallel"))
    return int(p) if p else None
