"""iperf3 ``--json`` output → ``intervals`` and ``ends`` rows (the JSON-only part lives in
:mod:`netfleet.iperf3json`, re-exported here; a text server's rows need the live parser)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from netfleet.engines.iperf3_live import parse_text_intervals
from netfleet.iperf3json import INTERVAL_COLUMNS, Row, end_row, interval_columns
from netfleet.values import Columns, as_bool, as_int, obj

__all__ = ["Row", "end_row", "interval_columns", "result_rows", "text_interval_rows"]


def result_rows(
    run_id: str, result: Mapping[str, Any], params: Mapping[str, Any]
) -> tuple[Columns, list[Row]]:
    """``intervals`` (as columns) and ``ends`` rows of one iperf3 client result (with the
    server's JSON in ``server_output_json`` when present)."""
    reverse = as_bool(params.get("reverse"))
    if reverse is None:
        reverse = bool(as_bool(obj(obj(result.get("start")).get("test_start")).get("reverse")))
    intervals = interval_columns(run_id, "client", result, reverse)
    ends = [end_row(run_id, "client", result)]
    server = result.get("server_output_json")
    if isinstance(server, Mapping):
        intervals.extend(interval_columns(run_id, "server", server, reverse))
        ends.append(end_row(run_id, "server", server))
    elif isinstance(result.get("server_output_text"), str):
        streams = as_int(obj(obj(result.get("start")).get("test_start")).get("num_streams")) or 1
        text = text_interval_rows(run_id, result["server_output_text"], streams, reverse)
        intervals.extend(Columns.of_rows(text, INTERVAL_COLUMNS))
    return intervals, ends


def text_interval_rows(run_id: str, text: str, streams: int, reverse: bool) -> Iterator[Row]:
    """Server-side sum rows from a text server's interval lines."""
    sender = reverse  # the server sends only in reverse mode
    for idx, iv in enumerate(parse_text_intervals(text, streams)):
        seconds = iv.end - iv.start
        yield {
            "run_id": run_id,
            "side": "server",
            "role": "sender" if sender else "receiver",
            "flow": "server_to_client" if sender else "client_to_server",
            "kind": "sum",
            "stream_id": None,
            "idx": idx,
            "omitted": iv.omitted,
            "bytes": round(iv.bits_per_second * seconds / 8),
            "start": iv.start,
            "end": iv.end,
            "seconds": seconds,
            "bits_per_second": iv.bits_per_second,
        }
