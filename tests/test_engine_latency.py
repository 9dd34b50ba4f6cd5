"""Request/response latency and ping: parsers on captured real output, tool choice."""

from __future__ import annotations

from pathlib import Path

import pytest

from netfleet.engines import bounceback, sockperf
from netfleet.engines.latency import choose
from netfleet.engines.latency_rows import latency_rows
from netfleet.engines.ping import ping_rows
from netfleet.engines.ping import summarize as ping_summary
from netfleet.engines.probes import ToolsInfo

FIX = Path(__file__).parent / "fixtures"


def test_sockperf_full_rtt_own_percentiles_agree_with_sockperf() -> None:
    text = (FIX / "sockperf" / "pingpong_full_rtt.txt").read_text()
    assert "\x1b[" in text  # real output has ANSI colours
    report, s = sockperf.summarize(text)
    assert "\x1b[" not in report and "packet, txTime" in report
    assert s["full_round_trip"] is True and s["percentile_source"] == "samples"
    own = s["sockperf"]
    assert s["samples"]["count"] == own["received"]
    assert s["p50_us"] == pytest.approx(own["percentiles_us"]["50"], rel=0.05)
    assert s["min_us"] == pytest.approx(own["min_us"]) and s["max_us"] == pytest.approx(
        own["max_us"]
    )
    assert s["min_us"] <= s["p50_us"] <= s["p90_us"] <= s["p99_us"] <= s["p999_us"] <= s["max_us"]
    assert len(s["samples"]["quantiles_us"]) == 1001
    assert s["transactions_per_s"] == pytest.approx(own["received"] / own["valid_seconds"])


def test_sockperf_without_full_rtt_is_flagged_half() -> None:
    _, s = sockperf.summarize((FIX / "sockperf" / "pingpong_half.txt").read_text())
    assert s["full_round_trip"] is False


def test_bounceback_summary_and_histogram_percentiles() -> None:
    s = bounceback.summarize((FIX / "iperf2" / "bounceback.txt").read_text())
    assert s["full_round_trip"] and s["transactions"] > 100 and s["transactions_per_s"] > 0
    assert s["min_us"] <= s["mean_us"] <= s["max_us"]
    assert s["p50_us"] % 100 == 0  # bin upper bounds: 100 µs resolution
    row = latency_rows(
        "r",
        {"tool": "iperf2", "client_output": (FIX / "iperf2" / "bounceback.txt").read_text()},
        {"size": 90},
    )["latency"][0]
    assert row["transactions"] == s["transactions"] and row["size"] == 90


def test_histogram_percentiles_are_bin_upper_bounds() -> None:
    got = bounceback.histogram_percentiles({1: 90, 3: 9, 10: 1}, 100)
    assert got == {"p50_us": 100, "p90_us": 100, "p99_us": 300, "p999_us": 1000}


def test_ping_summary_matches_its_own_statistics() -> None:
    text = (FIX / "ping" / "loopback_1400.txt").read_text()
    s = ping_summary(text)
    assert s["transmitted"] == 20 and s["received"] == 20 and s["loss_percent"] == 0
    assert s["min_us"] <= s["p50_us"] <= s["max_us"]
    row = ping_rows("r", {"output": text}, {"size": 1400})["latency"][0]
    assert row["kind"] == "icmp" and row["sent"] == 20 and row["size"] == 1400


def info(**tools: tuple[int, ...]) -> ToolsInfo:
    return ToolsInfo("latency", "x", (), tools=dict(tools), cpus=2)


def test_auto_prefers_sockperf_on_both_hosts_else_iperf2() -> None:
    both = info(sockperf=(3, 7), iperf2=(2, 1, 8))
    only2 = info(iperf2=(2, 1, 8))
    assert choose("auto", both, both) == "sockperf"
    assert choose("auto", both, only2) == "iperf2"
    assert choose("sockperf", both, only2) is None
    assert choose("auto", info(iperf2=(2, 0, 13)), both) is None  # no --bounceback before 2.1
