"""The planned bitrate of a run: what it may put on the network, for a campaign's budget.

A run's planned rate is its target bitrate × streams (× 2 for ``bidir``): iperf3 and iperf 2
apply ``-b`` to each stream. A TCP run without a bitrate has no planned rate — it takes what the
network gives — so a campaign with a ``bandwidth_budget`` must set one (seed 003: fleets of load
generators look like a DDoS; a budget keeps a campaign within what was announced).
"""

from __future__ import annotations

from typing import Any

from netfleet.units import parse_rate

#: iperf3's UDP default when no bitrate is given
UDP_DEFAULT = "1mbit"


def planned_bitrate(params: Any) -> float | None:
    """Bits per second a run may send at most, or None when it does not say (unlimited TCP).

    An engine's params may define ``planned_bits_per_second()``; otherwise ``bitrate``,
    ``parallel``/``streams``, ``protocol`` and ``direction`` are read when present. Params with
    none of these (ping, latency) plan no meaningful load: 0."""
    own = getattr(params, "planned_bits_per_second", None)
    if callable(own):
        value = own()
        return None if value is None else float(value)
    fields = getattr(type(params), "model_fields", {})
    if "bitrate" not in fields:
        return 0.0
    rate = getattr(params, "bitrate", None)
    if rate is None:
        if getattr(params, "protocol", "tcp") != "udp":
            return None
        rate = UDP_DEFAULT
    streams = int(getattr(params, "parallel", None) or getattr(params, "streams", None) or 1)
    both_ways = 2 if getattr(params, "direction", None) == "bidir" else 1
    return parse_rate(str(rate)) * streams * both_ways


def budget_problem(params: Any, budget: str) -> str | None:
    """Why a run with ``params`` cannot be scheduled under ``budget``, or None when it can."""
    planned = planned_bitrate(params)
    if planned is None:
        return (
            "bandwidth_budget is set, but this test has no bitrate: set params.bitrate (per "
            "stream) so concurrent runs can be added up"
        )
    if planned > parse_rate(budget):
        return (
            f"a run plans {planned / 1e6:g} Mbit/s, more than the whole bandwidth_budget "
            f"({budget}): lower its bitrate or streams, or raise the budget"
        )
    return None
