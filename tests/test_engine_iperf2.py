"""iperf2 throughput: CSV parsing and totals on captured real output.

Fixtures: scripts/capture_fixtures_text.py."""

from __future__ import annotations

from pathlib import Path

from netfleet.engines.iperf2 import Iperf2, summarize
from netfleet.engines.iperf2_csv import parse_csv, split_finals
from netfleet.engines.iperf2_rows import result_rows
from netfleet.engines.params.iperf2 import Iperf2Params

FIX = Path(__file__).parent / "fixtures" / "iperf2"


def texts(name: str) -> tuple[str, str]:
    server = FIX / f"{name}.server.txt"
    return (FIX / f"{name}.txt").read_text(), server.read_text() if server.exists() else ""


def test_two_streams_are_summed_from_the_receiver() -> None:
    client, server = texts("tcp_p2")
    lines = parse_csv(client)
    intervals, finals = split_finals(lines, 1.0)
    assert len(finals) == 2 and len(intervals) == 4
    s = summarize(client, server, Iperf2Params(duration=2, parallel=2), "client")
    assert s["streams"] == 2 and not s["reverse"]
    assert s["receiver_bytes"] == sum(x.bytes for x in split_finals(parse_csv(server), 1)[1])
    assert s["receiver_bps"] > 1e9


def test_a_one_second_run_whose_finals_end_late_has_a_final_per_stream() -> None:
    """A 1 s run on a loaded machine (tests/test_engine_lab.py; the envelope's output through
    scripts/fixture_from_envelope.py): each stream's interval 0.0-1.0, then its final 0.0-1.1 —
    neither a repeat of the first interval nor longer than 1.5 of them. Read as two finals (it
    was read as intervals, and the run failed: "printed no final report for every stream")."""
    client, server = texts("tcp_p2_1s_late")
    intervals, finals = split_finals(parse_csv(client), 1.0)
    assert [(x.stream, x.end) for x in finals] == [(1, 1.1), (2, 1.1)]
    assert [(x.stream, x.end) for x in intervals] == [(1, 1.0), (2, 1.0)]
    s = summarize(client, server, Iperf2Params(duration=1, parallel=2), "client")
    assert s["client_finals"] == 2 and s["server_finals"] == 2


def test_reverse_receiver_is_the_client() -> None:
    client, server = texts("tcp_reverse")
    s = summarize(client, server, Iperf2Params(duration=2, direction="in"), "client")
    assert s["reverse"] and s["client_finals"] == 1


def test_udp_loss_comes_from_the_server() -> None:
    client, server = texts("udp_50m")
    # the client's final line has total -1 (FIELD-NOTES)
    assert split_finals(parse_csv(client), 1)[1][0].total == -1
    s = summarize(client, server, Iperf2Params(duration=2, protocol="udp"), "client")
    assert s["udp"]["packets"] > 0 and s["udp"]["lost_percent"] is not None


def test_refused_connection_has_no_final_lines() -> None:
    client, _ = texts("refused")
    assert parse_csv(client) == []


def test_catalog_rows_have_sum_and_stream_rows_per_side() -> None:
    client, server = texts("tcp_p2")
    result = {"client_output": client, "server_output": server, "summary": {"reverse": False}}
    rows = result_rows("r1", result, {"interval": 1, "parallel": 2})
    sums = [r for r in rows["intervals"] if r["kind"] == "sum" and r["side"] == "server"]
    assert len(sums) == 2 and all(r["role"] == "receiver" for r in sums)
    streams = [r for r in rows["intervals"] if r["kind"] == "stream" and r["side"] == "server"]
    assert sum(r["bytes"] for r in streams) == sum(r["bytes"] for r in sums)
    assert {e["side"] for e in rows["ends"]} == {"client", "server"}


def test_argv_maps_seed_001_knobs() -> None:
    p = Iperf2Params(duration=3, parallel=8, window="500kb", length="8kb", direction="in")
    argv = Iperf2().client_argv(p, "198.18.0.2", 20001, "client")
    s = " ".join(argv)
    for part in ("--parallel 8", "--window 500000", "--len 8000", "--reverse", "--time 3"):
        assert part in s
    assert "--udp" in Iperf2().server_argv(1, "198.18.0.2", Iperf2Params(protocol="udp"))
