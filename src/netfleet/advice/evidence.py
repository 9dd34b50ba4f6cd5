"""Numbers the rules need, read from any throughput engine's raw result through the engine
registry (each engine's ``summary`` and ``evidence``): no rule knows a tool by name."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from netfleet.engines import Evidence, measuring, summary
from netfleet.engines import evidence as engine_evidence
from netfleet.engines.params import spec_params

#: labels that are about one run, not about the hosts (left out of an imported host's identity)
RUN_LABELS = frozenset({"date", "epoch", "run", "repeat", "sequence", "file"})


def _obj(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def engine(env: Mapping[str, Any]) -> str:
    return str(_obj(env.get("engine")).get("name"))


def is_throughput(env: Mapping[str, Any]) -> bool:
    """The run's engine measures throughput (asked of the registry when called: an engine
    registered at run time counts)."""
    return engine(env) in measuring("throughput")


def receiver_bps(env: Mapping[str, Any]) -> float | None:
    """The received rate of a complete run, from its engine's own summary."""
    found = summary(engine(env), env.get("result"))
    return found.received_bps if found is not None else None


def of(env: Mapping[str, Any]) -> Evidence:
    """What the run's engine reports of CPU, bytes sent, retransmits, path MTUs and streams."""
    return engine_evidence(engine(env), env.get("result"))


def cpu(env: Mapping[str, Any]) -> dict[str, float]:
    """Client and server CPU %, where the tool reports it."""
    return dict(of(env).cpu)


def sent(env: Mapping[str, Any]) -> tuple[float | None, float | None]:
    """(bytes sent, TCP retransmits) where reported."""
    found = of(env)
    return found.sent_bytes, found.retransmits


def path_mtus(env: Mapping[str, Any]) -> list[int]:
    """``pmtu`` values the sending streams reported."""
    return list(of(env).path_mtus)


def interface_mtu(env: Mapping[str, Any]) -> int | None:
    mtus = [
        _num(_obj(_obj(env.get(role)).get("facts")).get("mtu")) for role in ("client", "server")
    ]
    known = [int(m) for m in mtus if m]
    return min(known) if known else None


def params(env: Mapping[str, Any]) -> dict[str, Any]:
    """The run's parameters in the spec's vocabulary (``parallel``, also for a result that
    stored another name)."""
    return spec_params(env.get("params"))


def parallel(env: Mapping[str, Any]) -> int | None:
    """Streams: the run's ``parallel`` parameter (in the spec's vocabulary, so also an imported
    file's), else what the tool reports it ran (a wrapper's choice, e.g. ``throughput``'s)."""
    p = params(env).get("parallel")
    if isinstance(p, int) and not isinstance(p, bool) and p > 0:
        return p
    return of(env).streams


def host(env: Mapping[str, Any], role: str) -> str:
    """What identifies the run's ``role`` host across runs: its name for netfleet's own runs;
    for an imported file (whose hosts are just "client" and "server") the labels that describe
    the hosts (instance type, region, ...) and the address the file recorded."""
    record = _obj(env.get(role))
    name = str(record.get("name"))
    if record.get("kind") != "imported":
        return name
    labels = _obj(env.get("labels"))
    described = [f"{k}={v}" for k, v in sorted(labels.items()) if k not in RUN_LABELS]
    address = str(record.get("address") or "")
    parts = [*described, *([address] if address else [])]
    return f"{role} " + (" ".join(parts) if parts else "(imported)")
