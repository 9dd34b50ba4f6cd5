"""``latency`` table rows: one per request/response run (sockperf, iperf2 bounceback); ping's
rows use :func:`latency_row` too.

All times in µs. ``full_round_trip`` says whether they are whole round trips (sockperf without
``--full-rtt`` reports half). ``percentile_source`` says where p50…p99.9 come from: ``samples``
(every sockperf sample, computed by netfleet at run time: the samples are not stored), iperf2's
100 µs histogram (bin upper bounds), or ping's reply lines.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from netfleet.engines import bounceback
from netfleet.values import as_bool, as_float, as_int, as_str, obj

Row = dict[str, Any]


_STATS = ("mean_us", "min_us", "max_us", "p50_us", "p90_us", "p99_us", "p999_us")


def latency_row(run_id: str, tool: str, kind: str, s: Mapping[str, Any]) -> Row:
    row: Row = {
        "run_id": run_id,
        "tool": tool,
        "kind": kind,
        "full_round_trip": as_bool(s.get("full_round_trip")),
        "size": as_int(s.get("size")),
        "transactions": as_int(s.get("transactions")),
        "transactions_per_s": as_float(s.get("transactions_per_s")),
        "seconds": as_float(s.get("seconds")),
        "sent": as_int(s.get("transmitted")),
        "received": as_int(s.get("received")),
        "loss_percent": as_float(s.get("loss_percent")),
        "stdev_us": as_float(s.get("stdev_us", s.get("mdev_us"))),
        "percentile_source": as_str(s.get("percentile_source")),
    }
    for key in _STATS:
        row[key] = as_float(s.get(key))
    return row


def latency_rows(
    run_id: str,
    result: Mapping[str, Any],
    params: Mapping[str, Any],
    outputs: Mapping[str, Any] | None = None,
) -> dict[str, list[Row]]:
    """Rows of a ``latency`` engine result."""
    tool = as_str(result.get("tool")) or ""
    summary = dict(obj(result.get("summary")))
    if tool == "iperf2":
        text = result.get("client_output")
        if isinstance(text, str):
            summary = {**summary, **bounceback.summarize(text)}
    summary.setdefault("size", params.get("size"))
    return {"latency": [latency_row(run_id, tool, "request_response", summary)]}
