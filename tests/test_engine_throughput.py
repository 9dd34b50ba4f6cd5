"""The throughput engine's auto choice and the multi-process merge (no processes needed)."""

from __future__ import annotations

import json
from pathlib import Path

from netfleet.engines.iperf3_multi import merge_summary
from netfleet.engines.multi_rows import multi_rows
from netfleet.engines.params.iperf3_multi import Iperf3MultiParams
from netfleet.engines.params.throughput import ThroughputParams
from netfleet.engines.probes import ToolsInfo
from netfleet.engines.throughput import choose

FIX = Path(__file__).parent / "fixtures" / "iperf3"


def host(cpus: int, boot: str = "", **tools: tuple[int, ...]) -> ToolsInfo:
    return ToolsInfo("throughput", ", ".join(tools), (), tools=dict(tools), cpus=cpus, boot_id=boot)


def test_one_machine_halves_the_processes_per_end() -> None:
    # two lab namespaces on one 2-CPU kernel: both ends share the CPUs -> one process, 4 streams
    a = host(2, "boot-1", iperf3=(3, 12), iperf2=(2, 1, 8))
    c = choose(ThroughputParams(), a, a)
    assert c is not None and (c.tool, c.processes, c.parallel) == ("iperf3", 1, 4)
    assert "one machine" in c.why
    # the same hosts on two machines: one process per CPU
    b = host(2, "boot-2", iperf3=(3, 12), iperf2=(2, 1, 8))
    c = choose(ThroughputParams(), a, b)
    assert c is not None and (c.tool, c.processes) == ("iperf3-multi", 2)
    # an 8-CPU machine shared by both ends: 4 processes each
    big = host(8, "boot-3", iperf3=(3, 12))
    c = choose(ThroughputParams(), big, big)
    assert c is not None and (c.tool, c.processes) == ("iperf3-multi", 4)


def test_auto_uses_threads_only_when_both_have_iperf3_316() -> None:
    new, old = host(8, iperf3=(3, 18)), host(8, iperf3=(3, 12), iperf2=(2, 1, 8))
    c = choose(ThroughputParams(), new, new)
    assert c is not None and c.tool == "iperf3" and c.parallel == 16
    c = choose(ThroughputParams(), old, new)  # mixed fleet: the 3.12 side is single-threaded
    assert c is not None and c.tool == "iperf3-multi" and c.processes == 8
    c = choose(ThroughputParams(), host(1, iperf2=(2, 1)), host(4, iperf2=(2, 1)))
    assert c is not None and c.tool == "iperf2" and c.parallel == 2
    assert choose(ThroughputParams(tool="iperf2"), new, new) is None
    c = choose(ThroughputParams(parallel=3, processes=5), old, old)
    assert c is not None and (c.parallel, c.processes) == (3, 3)


def test_streams_are_spread_over_processes() -> None:
    assert Iperf3MultiParams(parallel=5, processes=2).streams_per_process() == [3, 2]


def test_merge_adds_rates_and_keeps_the_busiest_cpu() -> None:
    doc = json.loads((FIX / "tcp_p2.json").read_text())
    s = merge_summary([doc, doc])
    one = doc["end"]["sum_received"]["bits_per_second"]
    assert s["receiver_bps"] == 2 * one and s["processes"] == 2
    assert s["cpu_host_total_max"] == doc["end"]["cpu_utilization_percent"]["host_total"]


def test_multi_rows_merge_sums_and_keep_processes_apart() -> None:
    doc = json.loads((FIX / "tcp_p2.json").read_text())
    result = {"processes": [{"result": doc}, {"result": doc}]}
    rows = multi_rows("r", result, {})
    sums = [r for r in rows["intervals"] if r["kind"] == "sum" and r["side"] == "client"]
    procs = [r for r in rows["intervals"] if r["kind"] == "process" and r["side"] == "client"]
    assert len(procs) == 2 * len(sums)
    assert sums[0]["bytes"] == 2 * procs[0]["bytes"]
    streams = {r["stream_id"] for r in rows["intervals"] if r["kind"] == "stream"}
    assert any(s >= 1000 for s in streams) and any(s < 1000 for s in streams)
    client_end = next(e for e in rows["ends"] if e["side"] == "client")
    assert client_end["sum_received_bps"] == 2 * doc["end"]["sum_received"]["bits_per_second"]
