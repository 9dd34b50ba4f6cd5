"""Hooks of the engine contract shared by several engines: one-line summaries (``summary``) and
the empty catalog parser (``table_rows`` of an engine whose rows the catalog does not index)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from netfleet.engines.contract import Summary, TableRows
from netfleet.units import fmt_rate


def rate_summary(bps: float | None) -> Summary:
    """A throughput engine's summary: the received goodput, or why there is none."""
    if bps is None:
        return Summary(None, "no received rate in the result")
    return Summary(bps, fmt_rate(bps))


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def latency_summary(summary: Mapping[str, Any]) -> Summary:
    """A latency engine's summary: median and tail round trip (µs) and, for request/response,
    the operations (transactions) per second next to them, from its own summary."""
    p50, p99 = _num(summary.get("p50_us")), _num(summary.get("p99_us"))
    if p50 is None:
        return Summary(None, "no round trips in the result")
    tail = f", p99 {p99:.0f} µs" if p99 is not None else ""
    ops = _num(summary.get("transactions_per_s"))
    rate = f", {ops:,.0f} ops/s" if ops is not None else ""
    return Summary(None, f"RTT p50 {p50:.0f} µs{tail}{rate}")


def no_rows(
    run_id: str,
    result: Mapping[str, Any],
    params: Mapping[str, Any],
    outputs: Mapping[str, Any] | None = None,
) -> TableRows:
    """No catalog rows beyond the run's own ``runs`` row."""
    return {}
