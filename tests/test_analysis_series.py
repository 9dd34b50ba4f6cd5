"""Series extraction: the receiver's sum series of real runs (captured envelopes and raw iperf3
output), omitted lead, trailing stub, sender fallback, --bidir flows, failures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from netfleet.analysis import RunInfo, SeriesUnavailable, run_from_envelope, series_from_rows
from netfleet.engines.iperf3_rows import result_rows
from netfleet.store import ResultsRoot

SERIES = Path(__file__).parent / "fixtures" / "series"
IPERF3 = Path(__file__).parent / "fixtures" / "iperf3"


def envelope(name: str) -> dict[str, Any]:
    return ResultsRoot.read(SERIES / f"{name}.json.gz")


def iperf3_rows(name: str) -> list[dict[str, Any]]:
    params = json.loads((IPERF3 / "MANIFEST.json").read_text())["fixtures"][name]["params"]
    result = json.loads((IPERF3 / f"{name}.json").read_text())
    return result_rows("r", result, params)[0].rows()


def test_a_normal_test_uses_the_servers_series() -> None:
    doc = envelope("credit_out")
    run, rows = run_from_envelope(doc)
    s = series_from_rows(run, rows)
    assert (s.side, s.flow) == ("receiver", "client_to_server")
    server = doc["result"]["server_output_json"]["intervals"]
    assert s.n == len(server) == 30
    assert s.bits[0] == 8 * server[0]["sum"]["bytes"]
    assert s.cumulative()[-1] == pytest.approx(8 * sum(i["sum"]["bytes"] for i in server))
    assert run.mtu == 1500 and run.protocol == "tcp" and run.labels["instance_type"] == "lab-credit"


def test_the_receivers_trailing_stub_is_dropped() -> None:
    doc = envelope("steady_out")
    server = doc["result"]["server_output_json"]["intervals"]
    assert len(server) == 21 and server[-1]["sum"]["seconds"] < 0.01
    s = series_from_rows(*run_from_envelope(doc))
    assert s.n == 20 and s.stubs == 1


def test_a_reverse_test_uses_the_clients_series_summed_over_streams() -> None:
    doc = envelope("credit_in_p2")
    assert "--reverse" in doc["engine"]["argv"]
    run, rows = run_from_envelope(doc)
    s = series_from_rows(run, rows)
    assert (s.side, s.flow) == ("receiver", "server_to_client")
    client = doc["result"]["intervals"]
    assert len(client[0]["streams"]) == 2
    assert s.bits[3] == 8 * sum(st["bytes"] for st in client[3]["streams"])


def test_omitted_intervals_become_a_lead_counted_in_a_of_t() -> None:
    run, rows = run_from_envelope(envelope("credit_omit2"))
    s = series_from_rows(run, rows)
    assert s.omitted == 2 and s.n == 26
    assert s.lead_seconds == pytest.approx(2.0, abs=0.01)
    assert s.lead_bits > 0 and s.start[0] == pytest.approx(0.0, abs=0.01)
    assert s.times()[0] == pytest.approx(3.0, abs=0.02)
    assert s.cumulative()[0] == pytest.approx(s.lead_bits + s.bits[0])
    assert any("omitted" in n for n in s.notes)


def test_without_a_receiver_series_the_senders_is_used_with_a_warning() -> None:
    run = RunInfo("r", subject="client")
    client_only = [r for r in iperf3_rows("tcp_1stream") if r["side"] == "client"]
    s = series_from_rows(run, client_only)
    assert s.side == "sender"
    assert "2–6 % high" in s.notes[0]


def test_bidir_picks_the_subjects_sending_flow_unless_told() -> None:
    rows = iperf3_rows("tcp_bidir")
    run = RunInfo("r", subject="client", bidir=True, direction="bidir")
    assert series_from_rows(run, rows).flow == "client_to_server"
    assert series_from_rows(run, rows, flow="server_to_client").flow == "server_to_client"
    with pytest.raises(SeriesUnavailable, match="no sideways series"):
        series_from_rows(run, rows, flow="sideways")


def test_a_failed_run_has_no_series_and_says_why() -> None:
    run = RunInfo("r", status="failed", reason="connection refused")
    with pytest.raises(SeriesUnavailable, match="connection refused"):
        series_from_rows(run, iperf3_rows("err_refused"))


def test_a_partial_last_interval_after_sigint_is_not_a_measurement() -> None:
    run = RunInfo("r", status="interrupted")
    s = series_from_rows(run, iperf3_rows("err_client_sigint"))
    assert np.all(s.seconds >= 0.5)


def test_run_keys_are_columns_then_labels() -> None:
    run, _ = run_from_envelope(envelope("steady_out"))
    assert run.key("direction") == "out"
    assert run.key("instance_type") == "lab-steady"
    assert run.key("label:cloud") == "lab"
    assert run.key("nope") is None
