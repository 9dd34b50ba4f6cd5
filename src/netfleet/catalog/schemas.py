"""The catalog's table schemas (Arrow): what a process that reads or writes catalog tables needs,
without the row code of :mod:`netfleet.catalog.rows` (which loads the engine registry, and
with it pydantic: 0.2-0.45 s of start-up). Column meanings are documented in docs/catalog.md.
"""

from __future__ import annotations

import pyarrow as pa

RUNS_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("run_key", pa.string()),
        ("campaign", pa.string()),
        ("test", pa.string()),
        ("repeat", pa.int64()),
        ("sequence", pa.int64()),
        ("status", pa.string()),
        ("reason", pa.string()),
        ("error", pa.string()),
        ("direction", pa.string()),
        ("subject", pa.string()),
        ("d", pa.date32()),
        ("started_at", pa.timestamp("us")),
        ("ended_at", pa.timestamp("us")),
        ("duration_s", pa.float64()),
        ("engine", pa.string()),
        ("engine_version", pa.string()),
        ("netfleet_version", pa.string()),
        ("client", pa.string()),
        ("client_kind", pa.string()),
        ("client_address", pa.string()),
        ("server", pa.string()),
        ("server_kind", pa.string()),
        ("server_address", pa.string()),
        ("protocol", pa.string()),
        ("parallel", pa.int64()),
        ("reverse", pa.bool_()),
        ("bidir", pa.bool_()),
        ("duration", pa.float64()),
        ("omit", pa.float64()),
        ("interval", pa.float64()),
        ("client_mtu", pa.int64()),
        ("server_mtu", pa.int64()),
        ("client_cpus", pa.int64()),
        ("server_cpus", pa.int64()),
        ("params", pa.string()),
        ("labels", pa.string()),
        ("notes", pa.string()),
        ("source", pa.string()),
        # configuration state (envelope ``state``; NULL in results written before it)
        ("client_zone_id", pa.string()),
        ("server_zone_id", pa.string()),
        ("client_ena_express", pa.bool_()),
        ("server_ena_express", pa.bool_()),
        ("client_bandwidth_weighting", pa.string()),
        ("server_bandwidth_weighting", pa.string()),
        ("rules_as_of", pa.date32()),
        ("state", pa.string()),
    ]
)

INTERVALS_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("side", pa.string()),
        ("role", pa.string()),
        ("flow", pa.string()),
        ("kind", pa.string()),
        ("stream_id", pa.int64()),
        ("idx", pa.int64()),
        ("start", pa.float64()),
        ("end", pa.float64()),
        ("seconds", pa.float64()),
        ("bytes", pa.int64()),
        ("bits_per_second", pa.float64()),
        ("retransmits", pa.int64()),
        ("snd_cwnd", pa.int64()),
        ("snd_wnd", pa.int64()),
        ("rtt", pa.int64()),
        ("rttvar", pa.int64()),
        ("pmtu", pa.int64()),
        ("packets", pa.int64()),
        ("lost_packets", pa.int64()),
        ("lost_percent", pa.float64()),
        ("jitter_ms", pa.float64()),
        ("omitted", pa.bool_()),
    ]
)

ENDS_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("side", pa.string()),
        ("error", pa.string()),
        ("sum_sent_bytes", pa.int64()),
        ("sum_sent_bps", pa.float64()),
        ("sum_sent_seconds", pa.float64()),
        ("sum_sent_retransmits", pa.int64()),
        ("sum_received_bytes", pa.int64()),
        ("sum_received_bps", pa.float64()),
        ("sum_received_seconds", pa.float64()),
        ("sum_sent_bidir_reverse_bytes", pa.int64()),
        ("sum_sent_bidir_reverse_bps", pa.float64()),
        ("sum_sent_bidir_reverse_retransmits", pa.int64()),
        ("sum_received_bidir_reverse_bytes", pa.int64()),
        ("sum_received_bidir_reverse_bps", pa.float64()),
        ("host_total", pa.float64()),
        ("host_user", pa.float64()),
        ("host_system", pa.float64()),
        ("remote_total", pa.float64()),
        ("remote_user", pa.float64()),
        ("remote_system", pa.float64()),
        ("sender_tcp_congestion", pa.string()),
        ("receiver_tcp_congestion", pa.string()),
        ("jitter_ms", pa.float64()),
        ("lost_packets", pa.int64()),
        ("packets", pa.int64()),
        ("lost_percent", pa.float64()),
        ("out_of_order", pa.int64()),
        ("min_rtt", pa.int64()),
        ("mean_rtt", pa.int64()),
        ("max_rtt", pa.int64()),
        ("max_snd_cwnd", pa.int64()),
    ]
)

#: ``latency``: one row per request/response (sockperf, iperf2 bounceback), ping or irtt run
LATENCY_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("tool", pa.string()),
        ("kind", pa.string()),
        ("full_round_trip", pa.bool_()),
        ("size", pa.int64()),
        ("transactions", pa.int64()),
        ("transactions_per_s", pa.float64()),
        ("seconds", pa.float64()),
        ("sent", pa.int64()),
        ("received", pa.int64()),
        ("loss_percent", pa.float64()),
        ("mean_us", pa.float64()),
        ("stdev_us", pa.float64()),
        ("min_us", pa.float64()),
        ("max_us", pa.float64()),
        ("p50_us", pa.float64()),
        ("p90_us", pa.float64()),
        ("p99_us", pa.float64()),
        ("p999_us", pa.float64()),
        ("percentile_source", pa.string()),
    ]
)

#: ``latency_phases``: one row per phase of a ``latency-under-load`` run (idle, up, down, both)
LATENCY_PHASES_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("probe", pa.string()),
        ("phase", pa.string()),
        ("start_s", pa.float64()),
        ("end_s", pa.float64()),
        ("samples", pa.int64()),
        ("lost", pa.int64()),
        ("loss_percent", pa.float64()),
        ("p50_us", pa.float64()),
        ("p90_us", pa.float64()),
        ("p99_us", pa.float64()),
        ("max_us", pa.float64()),
        ("mean_us", pa.float64()),
        ("rpm", pa.float64()),
        ("send_p50_us", pa.float64()),
        ("receive_p50_us", pa.float64()),
        ("inflation_p50_us", pa.float64()),
        ("inflation_p99_us", pa.float64()),
        ("inflation_send_us", pa.float64()),
        ("inflation_receive_us", pa.float64()),
        ("up_bps", pa.float64()),
        ("down_bps", pa.float64()),
        ("link_bps", pa.float64()),
        ("reached", pa.bool_()),
        ("warning", pa.string()),
    ]
)

#: ``latency_samples``: one row per probe packet of a ``latency-under-load`` run
LATENCY_SAMPLES_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("t", pa.float64()),
        ("phase", pa.string()),
        ("rtt_us", pa.float64()),
        ("send_us", pa.float64()),
        ("receive_us", pa.float64()),
        ("lost", pa.bool_()),
    ]
)

#: table name → schema, in the order parts are published (``runs`` last: it commits a batch)
SCHEMAS: dict[str, pa.Schema] = {
    "intervals": INTERVALS_SCHEMA,
    "ends": ENDS_SCHEMA,
    "latency": LATENCY_SCHEMA,
    "latency_phases": LATENCY_PHASES_SCHEMA,
    "latency_samples": LATENCY_SAMPLES_SCHEMA,
    "runs": RUNS_SCHEMA,
}
