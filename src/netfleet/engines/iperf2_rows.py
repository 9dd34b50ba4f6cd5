"""iperf2 ``-y C`` output (or, for imported runs, its ``-e``/plain text) → ``intervals`` and
``ends`` rows (re-parsed from the raw texts).

Per host (``side``): one ``stream`` row per CSV interval line and a ``sum`` row per interval
(netfleet adds the streams: 2.1.8 prints no CSV sum line). Roles: the client sends unless
``-R``. Intervals ending at or before ``omit`` seconds are flagged ``omitted`` (iperf2 has no
``-O``). ``ends``: one row per side from the final lines; UDP loss and jitter from the server's.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from netfleet.engines.iperf2_csv import CsvLine, parse_output, split_finals
from netfleet.values import as_bool, as_float, obj

Row = dict[str, Any]


def _interval_row(run_id: str, side: str, sender: bool, kind: str, idx: int, **v: Any) -> Row:
    return {
        "run_id": run_id,
        "side": side,
        "role": "sender" if sender else "receiver",
        "flow": "client_to_server" if (side == "client") == sender else "server_to_client",
        "kind": kind,
        "idx": idx,
        **v,
    }


def side_rows(
    run_id: str, side: str, text: str, sender: bool, interval: float, omit: float
) -> tuple[list[Row], Row | None]:
    lines, finals = split_finals(parse_output(text), interval)
    spans = sorted({_span(x, interval) for x in lines})
    index = {span: i for i, span in enumerate(spans)}
    rows: list[Row] = []
    groups: dict[tuple[float, float], list[CsvLine]] = defaultdict(list)
    for x in lines:
        span = _span(x, interval)
        groups[span].append(x)
        rows.append(_values(run_id, side, sender, "stream", index[span], x, omit))
    for span, members in sorted(groups.items()):
        total = CsvLine(
            "", 0, "", 0, -1, span[0], span[1],
            sum(m.bytes for m in members), sum(m.bps for m in members),
            **_udp_sum(members),
        )  # fmt: skip
        rows.append(_values(run_id, side, sender, "sum", index[span], total, omit))
    end: Row | None = None
    if finals:
        end = {
            "bytes": sum(f.bytes for f in finals),
            "bps": sum(f.bps for f in finals),
            "seconds": max(f.end for f in finals),
            **_udp_sum(finals),
        }
    return rows, end


def _span(x: CsvLine, interval: float) -> tuple[float, float]:
    """The report interval a line belongs to, on the interval grid: streams of one interval
    end a few ms apart in the text output (``1.0000-1.9988``, ``1.0000-2.0000``)."""
    return (
        round(round(x.start / interval) * interval, 3),
        round(round(x.end / interval) * interval, 3),
    )


def _udp_sum(lines: list[CsvLine]) -> dict[str, Any]:
    udp = [x for x in lines if x.total is not None and x.total >= 0]
    if not udp:
        return {}
    lost, total = sum(x.lost or 0 for x in udp), sum(x.total or 0 for x in udp)
    return {
        "jitter_ms": max(x.jitter_ms or 0.0 for x in udp),
        "lost": lost,
        "total": total,
        "lost_percent": 100.0 * lost / total if total else None,
    }


def _values(
    run_id: str, side: str, sender: bool, kind: str, idx: int, x: CsvLine, omit: float
) -> Row:
    return _interval_row(
        run_id, side, sender, kind, idx,
        stream_id=x.stream if kind == "stream" else None,
        start=x.start, end=x.end, seconds=x.end - x.start, bytes=x.bytes,
        bits_per_second=x.bps, packets=x.total if x.total is not None and x.total >= 0 else None,
        lost_packets=x.lost if not sender else None,
        lost_percent=x.lost_percent if not sender else None,
        jitter_ms=x.jitter_ms if not sender else None,
        omitted=x.end <= omit + 1e-9 if omit else False,
    )  # fmt: skip


def result_rows(
    run_id: str,
    result: Mapping[str, Any],
    params: Mapping[str, Any],
    outputs: Mapping[str, Any] | None = None,
) -> dict[str, list[Row]]:
    summary = obj(result.get("summary"))
    reverse = bool(as_bool(summary.get("reverse")))
    interval = as_float(params.get("interval")) or 1.0
    omit = as_float(params.get("omit")) or 0.0
    intervals: list[Row] = []
    ends: list[Row] = []
    totals: dict[str, Row | None] = {}
    for side, key in (("client", "client_output"), ("server", "server_output")):
        text = result.get(key)
        if not isinstance(text, str):
            continue
        sender = (side == "client") != reverse
        rows, end = side_rows(run_id, side, text, sender, interval, omit)
        intervals.extend(rows)
        totals[side] = end
    receiver_side, sender_side = ("client", "server") if reverse else ("server", "client")
    recv, sent = totals.get(receiver_side), totals.get(sender_side)
    for side, end in totals.items():
        if end is None:
            continue
        ends.append(
            {
                "run_id": run_id,
                "side": side,
                "sum_sent_bytes": sent["bytes"] if sent else None,
                "sum_sent_bps": sent["bps"] if sent else None,
                "sum_sent_seconds": sent["seconds"] if sent else None,
                "sum_received_bytes": recv["bytes"] if recv else None,
                "sum_received_bps": recv["bps"] if recv else None,
                "sum_received_seconds": recv["seconds"] if recv else None,
                "jitter_ms": recv.get("jitter_ms") if recv else None,
                "lost_packets": recv.get("lost") if recv else None,
                "packets": recv.get("total") if recv else None,
                "lost_percent": recv.get("lost_percent") if recv else None,
            }
        )
    return {"intervals": intervals, "ends": ends}
