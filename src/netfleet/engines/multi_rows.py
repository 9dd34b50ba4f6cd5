"""Rows of the multi-process engines: ``iperf3-multi`` and the ``throughput`` wrapper.

``iperf3-multi``: each process's iperf3 JSON gives its own rows (``iperf3_rows``); its ``sum``
rows become ``kind = 'process'`` (``stream_id`` = the process index), streams keep their rows
(``stream_id`` = index × 1000 + socket, so sockets of different processes stay apart), and new
``sum`` rows add the processes up per interval index — so the cheat sheet sees one logical run.
``ends``: per side, bytes and rates add up, CPU is the busiest process's.
``throughput``: the chosen tool's rows, found under ``result``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from netfleet.engines import iperf2_rows, iperf3_rows
from netfleet.engines.contract import TableRows
from netfleet.values import as_str, obj

Row = dict[str, Any]

_ADD = ("bytes", "bits_per_second", "retransmits", "packets", "lost_packets")
_END_ADD = (
    "sum_sent_bytes", "sum_sent_bps", "sum_sent_retransmits", "sum_received_bytes",
    "sum_received_bps", "sum_sent_bidir_reverse_bytes", "sum_sent_bidir_reverse_bps",
    "sum_received_bidir_reverse_bytes", "sum_received_bidir_reverse_bps", "lost_packets",
    "packets",
)  # fmt: skip
_END_MAX = (
    "sum_sent_seconds", "sum_received_seconds", "host_total", "host_user", "host_system",
    "remote_total", "remote_user", "remote_system", "max_rtt", "max_snd_cwnd", "jitter_ms",
)  # fmt: skip


def _add(a: Any, b: Any) -> Any:
    if a is None:
        return b
    return a if b is None else a + b


def multi_rows(
    run_id: str,
    result: Mapping[str, Any],
    params: Mapping[str, Any],
    outputs: Mapping[str, Any] | None = None,
) -> TableRows:
    intervals: list[Row] = []
    merged: dict[tuple[Any, ...], Row] = {}
    ends_by_side: dict[str, list[Row]] = defaultdict(list)
    for i, proc in enumerate(result.get("processes") or []):
        doc = obj(obj(proc).get("result"))
        if not doc:
            continue
        columns, ends = iperf3_rows.result_rows(run_id, doc, params)
        for row in columns.rows():  # (a few processes' rows: merged a row at a time)
            if row["kind"] == "sum":
                key = (row["side"], row["role"], row["flow"], row["idx"])
                if key not in merged:
                    merged[key] = {**row, "retransmits": row.get("retransmits")}
                    for k in ("snd_cwnd", "snd_wnd", "rtt", "rttvar", "pmtu"):
                        merged[key][k] = None
                else:
                    for k in _ADD:
                        merged[key][k] = _add(merged[key].get(k), row.get(k))
                row = {**row, "kind": "process", "stream_id": i}
            elif row.get("stream_id") is not None:
                row = {**row, "stream_id": i * 1000 + row["stream_id"]}
            intervals.append(row)
        for end in ends:
            ends_by_side[end["side"]].append(end)
    intervals.extend(merged.values())
    ends = []
    for side, rows in ends_by_side.items():
        out: Row = {"run_id": run_id, "side": side}
        errors = [r["error"] for r in rows if r.get("error")]
        out["error"] = "; ".join(errors) if errors else None
        for k in _END_ADD:
            for r in rows:
                out[k] = _add(out.get(k), r.get(k))
        for k in _END_MAX:
            vals = [r[k] for r in rows if r.get(k) is not None]
            out[k] = max(vals) if vals else None
        mins = [r["min_rtt"] for r in rows if r.get("min_rtt") is not None]
        out["min_rtt"] = min(mins) if mins else None
        for k in ("sender_tcp_congestion", "receiver_tcp_congestion"):
            out[k] = next((r[k] for r in rows if r.get(k)), None)
        ends.append(out)
    return {"intervals": intervals, "ends": ends}


def throughput_rows(
    run_id: str,
    result: Mapping[str, Any],
    params: Mapping[str, Any],
    outputs: Mapping[str, Any] | None = None,
) -> TableRows:
    inner = obj(result.get("result"))
    chosen = as_str(result.get("chosen"))
    p = {**params, "parallel": result.get("parallel")}
    if chosen == "iperf3":
        intervals, ends = iperf3_rows.result_rows(run_id, inner, p)
        rows: TableRows = {"intervals": intervals, "ends": ends}
    elif chosen == "iperf3-multi":
        rows = multi_rows(run_id, inner, p)
    elif chosen == "iperf2":
        rows = iperf2_rows.result_rows(run_id, inner, p)
    else:
        rows = {}
    return {**rows, "runs": [{"parallel": result.get("parallel"), "protocol": "tcp"}]}
