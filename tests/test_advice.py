"""Advice rules on envelopes shaped like stored ones (built from captured iperf3 output)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from netfleet.advice import advise, advise_doctor
from netfleet.doctor.checks import parse_tracepath
from netfleet.hosts.ena import deltas, parse_stats

FIX = Path(__file__).parent / "fixtures" / "iperf3"
DOC = json.loads((FIX / "tcp_1stream.json").read_text())


def env(
    run_id: str, bps: float, parallel: int = 1, direction: str = "out", **kw: Any
) -> dict[str, Any]:
    doc = copy.deepcopy(DOC)
    doc["end"]["sum_received"]["bits_per_second"] = bps
    base: dict[str, Any] = {
        "run_id": run_id,
        "status": "ok",
        "direction": direction,
        "subject": "client",
        "engine": {"name": "iperf3"},
        "params": {"parallel": parallel},
        "client": {"name": "c", "address": "198.18.0.1", "facts": {"mtu": 1500}},
        "server": {"name": "s", "address": "198.18.0.2", "facts": {"mtu": 1500}},
        "result": doc,
        "notes": {},
    }
    base.update(kw)
    return base


def codes(items: list[Any]) -> list[str]:
    return [a.code for a in items]


def test_cpu_bound_names_the_host_and_the_number() -> None:
    e = env("r1", 5e9)
    e["result"]["end"]["cpu_utilization_percent"]["host_total"] = 97.5
    [item] = [a for a in advise([e]) if a.code == "cpu-bound"]
    assert item.evidence["client_cpu_percent"] == 97.5 and item.run_ids == ("r1",)


def test_cpu_bound_agrees_with_analyze_on_a_busy_machine() -> None:
    """Issue 36.6: /proc/stat of a busy machine is not the engine's limit. A calm engine gets
    no advice (analyze keeps its ±); one that needed CPU there may have been starved (analyze
    says host-limited by the same rule, netfleet.engines.contract.cpu_limits)."""
    found = {}
    for cpu in (5.0, 40.0):
        e = env(f"r{cpu:g}", 1e9, notes={"host_cpu": {"busy_percent": 97.0}})
        e["result"]["end"]["cpu_utilization_percent"].update(host_total=cpu, remote_total=2.0)
        found[cpu] = [a for a in advise([e]) if a.code == "cpu-bound"]
    assert found[5.0] == []
    [item] = found[40.0]
    assert "may have been starved" in item.message and item.evidence["machine_busy_percent"] == 97


def test_per_flow_cap_and_asymmetry_across_runs() -> None:
    runs = [env("a", 1e9, 1), env("b", 2e9, 2), env("c", 0.5e9, 1, "in")]
    found = advise(runs)
    cap = next(a for a in found if a.code == "per-flow-cap")
    assert cap.evidence["ratio"] == 2.0 and set(cap.run_ids) == {"a", "b"}
    asym = next(a for a in found if a.code == "asymmetry")
    assert asym.evidence["ratio"] > 1.5


def test_asymmetry_of_small_rates_is_said_in_mbit() -> None:
    runs = [env("o", 47.8e6), env("i", 24.5e6, direction="in")]
    [asym] = [a for a in advise(runs) if a.code == "asymmetry"]
    # not "0.05 vs 0.02 Gbit/s, 1.95× apart": the rates the ratio is made of
    assert "out 47.8 Mbit/s vs in 24.5 Mbit/s, 1.95× apart" in asym.message


def test_a_scaled_labs_rates_in_advice_come_with_the_cloud_figures() -> None:
    """Issue 36, Misleading 2: a lab at ×0.05 (label lab_scale, as its hosts put on every run)
    says the cloud figures its rates stand for, beside the lab's, in words and evidence."""
    lab = {"lab_scale": 0.05, "lab_time_scale": 0.05, "instance_type": "lab-asym-8g-3g"}
    runs = [env("o", 382e6, labels=lab), env("i", 143e6, direction="in", labels=lab)]
    [asym] = [a for a in advise(runs) if a.code == "asymmetry"]
    [cap] = [
        a for a in advise([runs[0], env("p", 760e6, 2, labels=lab)]) if a.code == "per-flow-cap"
    ]
    assert (
        "out 382 Mbit/s vs in 143 Mbit/s (lab ×0.05; cloud out 7.64 Gbit/s vs in 2.86 Gbit/s)"
        in (asym.message)
    ), asym.message
    assert asym.evidence["lab_scale"] == 0.05
    assert asym.evidence["cloud_out_bps"] == 382e6 / 0.05
    assert asym.evidence["cloud_in_bps"] == 143e6 / 0.05
    assert "(lab ×0.05; cloud 2 streams 15.20 Gbit/s vs 1 stream 7.64 Gbit/s)" in cap.message
    assert cap.evidence["cloud_1_stream_bps"] == 382e6 / 0.05
    # runs of two scales have no one cloud figure: the lab's alone, said as before
    runs[1]["labels"] = {**lab, "lab_scale": 0.1}
    asym = next(a for a in advise(runs) if a.code == "asymmetry")
    assert "cloud" not in asym.message and "lab_scale" not in asym.evidence


def test_gateway_mtu_from_the_streams_pmtu() -> None:
    e = env("g", 1e9)
    e["client"]["facts"]["mtu"] = e["server"]["facts"]["mtu"] = 9000
    for interval in e["result"]["intervals"]:
        for s in interval["streams"]:
            s["pmtu"] = 1500
    [item] = [a for a in advise([e]) if a.code == "path-mtu"]
    assert "gateway" in item.message and item.evidence["path_mtu"] == 1500


def test_ena_deltas_become_advice() -> None:
    text = (
        "NIC statistics:\n     bw_in_allowance_exceeded: 10\n"
        "     pps_allowance_exceeded: 0\n     tx_timeout: 3\n"
    )
    before = {"c": parse_stats(text)}
    after = {"c": {"bw_in_allowance_exceeded": 25, "pps_allowance_exceeded": 0}}
    d = deltas(before, after)
    assert d == {"c": {"bw_in_allowance_exceeded": 15, "pps_allowance_exceeded": 0}}
    e = env("e", 1e9, notes={"ena_allowance_deltas": d})
    [item] = [a for a in advise([e]) if a.code == "ena-allowance"]
    assert "instance" in item.message and item.evidence["bw_in_allowance_exceeded"] == 15


def test_quiet_runs_give_no_advice() -> None:
    e = env("q", 1e9)
    e["result"]["end"]["cpu_utilization_percent"].update(host_total=20.0, remote_total=30.0)
    assert codes(advise([e])) == []


def test_doctor_advice_and_tracepath_parsing() -> None:
    text = (
        " 1?: [LOCALHOST]   pmtu 9000\n 2:  198.18.50.254  0.069ms pmtu 1500\n"
        "     Resume: pmtu 1500 hops 2 back 2 \n"
    )
    assert parse_tracepath(text) == 1500
    items = advise_doctor(
        [{"host": "a", "cpus": 2, "tools": {"iperf3": "3.12"}, "capabilities": {}}],
        [
            {
                "client": "a",
                "server": "b",
                "address": "x",
                "ping": True,
                "path_mtu": 1500,
                "interface_mtu": 9000,
                "port": True,
            }
        ],
    )
    assert {"path-mtu", "single-threaded-iperf3", "missing-tools"} <= set(codes(items))


def test_impossible_received_rates_are_left_out_and_counted() -> None:
    good = [env("a", 1e9, 1), env("b", 2e9, 2), env("c", 0.5e9, 1, "in")]
    bad = [env("x", 1e308, 1), env("y", -1e9, 2), env("z", float("nan"), 1, "in")]
    want = {a.code: a.evidence for a in advise(good)}
    found = advise(good + bad)
    assert {a.code: a.evidence for a in found if a.code != "impossible-rate"} == want
    (item,) = [a for a in found if a.code == "impossible-rate"]
    assert set(item.run_ids) == {"x", "y", "z"} and "3 run(s)" in item.message
