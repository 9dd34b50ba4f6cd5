"""iperf3 JSON → rows, over every fixture captured by scripts/capture_fixtures.py (real iperf3)."""

from __future__ import annotations

import json
import math
import re
from collections import Counter, defaultdict
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from netfleet.catalog.build import RowError, envelope_rows, run_row
from netfleet.catalog.cheatsheet import STUB_FRACTION
from netfleet.catalog.schemas import SCHEMAS
from netfleet.engines.iperf3_rows import result_rows
from netfleet.values import as_bool, as_float, as_int

FIXTURES = Path(__file__).parent / "fixtures" / "iperf3"
MANIFEST: dict[str, Any] = json.loads((FIXTURES / "MANIFEST.json").read_text())["fixtures"]
NAMES = sorted(MANIFEST)
OK = [n for n in NAMES if MANIFEST[n]["status"] == "ok"]
# a killed server shows up in either socket, depending on timing (both seen in recaptures)
KILLED_ERROR = re.compile(r"control socket has closed unexpectedly|connection reset by peer", re.I)
ERRORS = [n for n in NAMES if MANIFEST[n]["status"] != "ok"]


def raw(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.json").read_text())


def rows(name: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    intervals, ends = result_rows("run-1", raw(name), MANIFEST[name]["params"])
    return intervals.rows(), ends


def sums(intervals: list[dict[str, Any]], **match: Any) -> list[dict[str, Any]]:
    return [r for r in intervals if r["kind"] == "sum" and all(r[k] == v for k, v in match.items())]


def end_of(ends: list[dict[str, Any]], side: str) -> dict[str, Any]:
    (row,) = [e for e in ends if e["side"] == side]
    return row


def test_every_fixture_is_in_the_manifest_and_every_shape_is_captured() -> None:
    files = {p.stem for p in FIXTURES.glob("*.json")} - {"MANIFEST"}
    assert files == set(MANIFEST)
    assert {"err_refused", "err_busy", "err_server_killed", "err_client_sigint"} <= files
    assert any((MANIFEST[n]["params"]["direction"] == "in") for n in NAMES)
    assert any((MANIFEST[n]["params"]["direction"] == "bidir") for n in NAMES)
    assert any((MANIFEST[n]["params"]["protocol"] == "udp") for n in NAMES)
    assert any(MANIFEST[n]["params"]["omit"] for n in NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_rows_match_the_table_schemas(name: str) -> None:
    intervals, ends = rows(name)
    for table, produced in (("intervals", intervals), ("ends", ends)):
        for row in produced:
            assert set(row) == set(SCHEMAS[table].names), (
                table,
                set(row) ^ set(SCHEMAS[table].names),
            )
    # the client's end row always exists and carries iperf3's error verbatim (or None)
    assert end_of(ends, "client")["error"] == raw(name).get("error")


@pytest.mark.parametrize("name", NAMES)
def test_roles_and_flows(name: str) -> None:
    intervals, _ = rows(name)
    params = MANIFEST[name]["params"]
    for r in intervals:
        assert r["role"] in ("sender", "receiver")
        # data from the client to the server: sent by the client, received by the server
        assert (r["flow"] == "client_to_server") == (
            (r["side"] == "client") == (r["role"] == "sender")
        )
    by_side = defaultdict(set)
    for r in intervals:
        by_side[r["side"]].add(r["role"])
    if params["direction"] == "bidir":
        assert by_side == {"client": {"sender", "receiver"}, "server": {"sender", "receiver"}}
    elif params["direction"] == "in":
        assert by_side == {"client": {"receiver"}, "server": {"sender"}}
    else:
        assert by_side.get("client", {"sender"}) == {"sender"}
        assert by_side.get("server", {"receiver"}) == {"receiver"}


@pytest.mark.parametrize("name", OK)
def test_interval_counts_follow_duration(name: str) -> None:
    intervals, _ = rows(name)
    params = MANIFEST[name]["params"]
    expected = math.ceil(params["duration"] / params["interval"]) + params["omit"]
    main_flow = "server_to_client" if (params["direction"] == "in") else "client_to_server"
    for side in ("client", "server"):
        series = sums(intervals, side=side, flow=main_flow)
        # full intervals, and at most one trailing stub (the receiver's, ≈0.5 ms on loopback)
        full = [r for r in series if r["seconds"] >= STUB_FRACTION * params["interval"]]
        assert len(full) == expected
        assert len(series) - len(full) <= 1
        if len(series) > len(full):
            assert series[-1] not in full and series[-1]["role"] == "receiver"
    for r in sums(intervals):
        assert r["seconds"] > 0 and r["end"] > r["start"] >= 0
        assert r["bits_per_second"] == pytest.approx(r["bytes"] * 8 / r["seconds"], rel=1e-3)


@pytest.mark.parametrize("name", [n for n in NAMES if raw(n)["intervals"]])
def test_streams_add_up_to_their_sum(name: str) -> None:
    intervals, _ = rows(name)
    params = MANIFEST[name]["params"]
    streams: dict[tuple[str, int, str], list[int]] = defaultdict(list)
    for r in intervals:
        if r["kind"] == "stream":
            assert r["stream_id"] is not None
            streams[(r["side"], r["idx"], r["role"])].append(r["bytes"])
    totals = {
        (r["side"], r["idx"], r["role"]): r["bytes"]
        for r in sums(intervals)
        # a text server's lines are read as sums only
        if not (name == "tcp_server_text" and r["side"] == "server")
    }
    assert set(streams) == set(totals)
    for key, values in streams.items():
        assert len(values) == params["parallel"]
        assert sum(values) == totals[key]
    assert all(r["stream_id"] is None for r in sums(intervals))


@pytest.mark.parametrize("name", [n for n in OK if n != "tcp_server_text"])
def test_interval_bytes_add_up_to_end_totals(name: str) -> None:
    intervals, ends = rows(name)
    params = MANIFEST[name]["params"]
    flows = (
        ["client_to_server", "server_to_client"]
        if (params["direction"] == "bidir")
        else (["server_to_client"] if (params["direction"] == "in") else ["client_to_server"])
    )
    for flow in flows:
        receiver = sums(intervals, flow=flow, role="receiver", omitted=False)
        sender = sums(intervals, flow=flow, role="sender", omitted=False)
        recv_side = receiver[0]["side"]
        send_side = sender[0]["side"]
        key = (
            "_bidir_reverse"
            if flow == "server_to_client" and (params["direction"] == "bidir")
            else ""
        )
        got_recv = end_of(ends, recv_side)[f"sum_received{key}_bytes"]
        got_sent = end_of(ends, send_side)[f"sum_sent{key}_bytes"]
        assert got_recv and got_sent
        assert sum(r["bytes"] for r in receiver) == pytest.approx(got_recv, rel=1e-3)
        assert sum(r["bytes"] for r in sender) == pytest.approx(got_sent, rel=1e-3)
        if not params["omit"]:
            # nothing received that was not sent (with -O each side cuts the omitted period at
            # its own moment: the receiver's total came out ~0.01 % above the sender's)
            assert got_recv <= got_sent


@pytest.mark.parametrize("name", NAMES)
def test_omitted_intervals(name: str) -> None:
    intervals, _ = rows(name)
    omit = MANIFEST[name]["params"]["omit"]
    for side in ("client", "server"):
        series = sums(intervals, side=side)
        flagged = [r for r in series if r["omitted"]]
        if not omit or not series:
            assert flagged == []
            continue
        assert [r["idx"] for r in flagged] == list(range(omit))
        after = series[omit]
        assert not after["omitted"]
        assert after["start"] < 0.01  # times restart near 0 after the omitted intervals


@pytest.mark.parametrize("name", NAMES)
def test_no_interval_twice(name: str) -> None:
    intervals, _ = rows(name)
    keys = Counter(
        (r["side"], r["kind"], r["role"], r["stream_id"], r["start"], r["end"]) for r in intervals
    )
    assert max(keys.values(), default=1) == 1


def test_server_killed_repeats_an_interval_that_is_dropped() -> None:
    doc = raw("err_server_killed")
    entries = [e["sum"] for e in doc["intervals"]]
    repeats = sum(1 for a, b in pairwise(entries) if a == b)
    assert repeats >= 1  # iperf3 3.12's quirk (seen in every recapture)
    intervals, ends = rows("err_server_killed")
    assert len(sums(intervals)) == len(entries) - repeats
    assert [e["side"] for e in ends] == ["client"]  # the server died: no server output
    assert KILLED_ERROR.search(ends[0]["error"])
    assert ends[0]["sum_sent_bytes"] is None  # end is {}


@pytest.mark.parametrize("name", ["err_refused", "err_busy"])
def test_failures_before_the_test_have_no_intervals(name: str) -> None:
    intervals, ends = rows(name)
    assert intervals == []
    (end,) = ends
    assert end["error"]
    assert all(v is None for k, v in end.items() if k not in ("run_id", "side", "error"))


def test_error_strings() -> None:
    expected = {
        "err_refused": "unable to connect to server",
        "err_busy": "server is busy",
        "err_client_sigint": "interrupt - the client has terminated",
    }
    for name, text in expected.items():
        assert text in end_of(rows(name)[1], "client")["error"]
    assert KILLED_ERROR.search(end_of(rows("err_server_killed")[1], "client")["error"])
    for name in OK:
        assert all(e["error"] is None for e in rows(name)[1])


def test_sigint_keeps_the_partial_interval() -> None:
    assert MANIFEST["err_client_sigint"]["exit_code"] == 1
    assert all(MANIFEST[n]["exit_code"] == 0 for n in NAMES if n != "err_client_sigint")
    intervals, ends = rows("err_client_sigint")
    series = sums(intervals, side="client")
    assert 0 < series[-1]["seconds"] < 0.99
    end = end_of(ends, "client")
    assert end["sum_received_bytes"] == 0
    assert end["sum_sent_bytes"] == pytest.approx(sum(r["bytes"] for r in series), rel=1e-3)


def test_reverse_client_lacks_tcp_info_and_the_sending_server_has_it() -> None:
    intervals, ends = rows("tcp_reverse")
    client = [r for r in intervals if r["side"] == "client" and r["kind"] == "stream"]
    server = [r for r in intervals if r["side"] == "server" and r["kind"] == "stream"]
    assert client and all(r["rtt"] is None and r["snd_cwnd"] is None for r in client)
    assert server and all(r["rtt"] and r["snd_cwnd"] for r in server)
    # RTT summaries only from streams the host itself sent (the reverse client reports 0s)
    assert end_of(ends, "client")["mean_rtt"] is None
    assert end_of(ends, "server")["mean_rtt"] > 0


def test_udp_fields() -> None:
    intervals, ends = rows("udp_50m")
    assert all(r["packets"] and r["retransmits"] is None for r in sums(intervals))
    assert all(
        r["jitter_ms"] is not None and r["lost_percent"] is not None
        for r in sums(intervals, side="server")
    )
    for end in ends:
        assert end["jitter_ms"] is not None and end["lost_packets"] is not None
        assert end["packets"] and end["lost_percent"] is not None and end["out_of_order"] == 0
    for r in sums(intervals, side="client"):
        assert r["bits_per_second"] == pytest.approx(50e6, rel=0.05)
    tcp_intervals, tcp_ends = rows("tcp_1stream")
    assert all(r["packets"] is None for r in tcp_intervals)
    assert all(e["jitter_ms"] is None for e in tcp_ends)


def test_bidir_end_columns() -> None:
    _, ends = rows("tcp_bidir")
    for end in ends:
        assert end["sum_sent_bidir_reverse_bytes"] and end["sum_sent_bidir_reverse_bps"]
    assert end_of(ends, "client")["sum_received_bidir_reverse_bytes"] > 0
    _, plain = rows("tcp_1stream")
    assert all(e["sum_sent_bidir_reverse_bytes"] is None for e in plain)


def test_text_server_output_gives_server_sum_rows() -> None:
    doc = raw("tcp_server_text")
    assert "server_output_text" in doc and "server_output_json" not in doc
    intervals, ends = rows("tcp_server_text")
    server = [r for r in intervals if r["side"] == "server"]
    assert server and {(r["kind"], r["role"]) for r in server} == {("sum", "receiver")}
    client = {r["idx"]: r for r in sums(intervals, side="client")}
    for r in server:
        if r["seconds"] >= 0.5 and r["idx"] in client:
            # the text line's whole-Kbit/s bitrate matches the client's JSON within 5 %
            assert r["bits_per_second"] == pytest.approx(
                client[r["idx"]]["bits_per_second"], rel=0.05
            )
    assert [e["side"] for e in ends] == ["client"]  # a text server has no end summary here
    assert ends[0]["sum_received_bytes"] > 0


@pytest.mark.parametrize(
    "name", [n for n in NAMES if MANIFEST[n]["params"]["direction"] != "bidir"]
)
def test_role_falls_back_to_reverse_when_flags_are_absent(name: str) -> None:
    """Older iperf3 versions have no ``sender`` flag (it came with --bidir): the role is
    derived from -R."""
    doc = raw(name)

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k != "sender"}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    flagged, _ = rows(name)
    derived, _ = result_rows("run-1", strip(doc), MANIFEST[name]["params"])
    assert derived.column("role") == [r["role"] for r in flagged]


def _envelope(result: Any, **over: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "netfleet_format": 1,
        "run_id": "r1",
        "run_key": "k",
        "campaign": "c",
        "test": "t",
        "repeat": 0,
        "sequence": 0,
        "status": "ok",
        "direction": "out",
        "subject": "client",
        "params": {"parallel": 2},
        "labels": {"instance_type": "m5.large"},
        "client": {
            "name": "a",
            "kind": "local",
            "address": "127.0.0.1",
            "facts": {"mtu": 9001, "cpus": 2},
        },
        "server": {"name": "b", "kind": "local", "address": "127.0.0.2", "facts": {}},
        "engine": {"name": "iperf3", "version": "3.12", "argv": []},
        "started_at": "2026-01-02T23:30:00+02:00",
        "ended_at": "2026-01-02T21:30:05Z",
        "duration_s": 5.0,
        "result": result,
    }
    doc.update(over)
    return doc


def test_run_row() -> None:
    row = run_row(_envelope(raw("udp_50m")), "/x.json.gz")
    assert set(row) == set(SCHEMAS["runs"].names)
    assert row["started_at"].isoformat() == "2026-01-02T21:30:00"  # stored as UTC
    assert str(row["d"]) == "2026-01-02"
    # params win (parallel 2 over the engine's num_streams 1); what params lack, such as udp,
    # comes from the engine's own start.test_start
    assert row["parallel"] == 2 and row["protocol"] == "udp"
    assert row["client_mtu"] == 9001 and row["server_mtu"] is None
    assert json.loads(row["labels"]) == {"instance_type": "m5.large"}
    row = run_row(_envelope(raw("udp_50m"), params={}), "")
    assert row["protocol"] == "udp" and row["parallel"] == 1 and row["duration"] == 3


def test_envelope_rows_without_result_or_parser() -> None:
    assert envelope_rows(_envelope(None)).intervals.rows() == []
    unknown = envelope_rows(
        _envelope(raw("tcp_1stream"), engine={"name": "sockperf", "version": "3.7", "argv": []})
    )
    assert not len(unknown.intervals) and unknown.ends == [] and unknown.run["engine"] == "sockperf"


@pytest.mark.parametrize("over", [{"run_id": ""}, {"started_at": "yesterday"}, {"ended_at": 5}])
def test_unusable_envelopes_raise_row_error(over: dict[str, Any]) -> None:
    with pytest.raises(RowError):
        envelope_rows(_envelope(None, **over))


@pytest.mark.parametrize(
    "result",
    [
        {"intervals": "nope", "end": []},
        {"intervals": [None, 3, {"sum": "x", "streams": [1, None]}], "end": {"streams": [None]}},
        {"server_output_json": {"intervals": [{}], "end": None}},
        {},
    ],
)
def test_hostile_results_do_not_crash(result: dict[str, Any]) -> None:
    intervals, ends = result_rows("r", result, {})
    assert intervals.rows() == []
    assert ends[0]["error"] is None


def test_value_coercion() -> None:
    assert as_int(True) is None and as_int(2.0) == 2 and as_int(2.5) is None
    assert as_int(2**64) is None and as_int(" 7 ") == 7 and as_int("x") is None
    assert as_float(float("nan")) is None and as_float("1.5") == 1.5 and as_float(False) is None
    assert as_bool(1) is True and as_bool(0) is False and as_bool(2) is None
