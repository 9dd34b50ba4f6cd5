"""latency-under-load: phase statistics on captured real output, the spec and registry line, and
a real lab run where a tbf with a deep queue inflates the round trip by ≈ queue / rate and a
shallow one by little — the expectation comes from the shapers' own parameters."""

from __future__ import annotations

import gzip
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from netfleet import api
from netfleet.advice import advise
from netfleet.catalog import ingest, query
from netfleet.engines import ENGINES
from netfleet.engines.loaded_latency import LoadedLatency, LoadedLatencyParams, choose, link_rate
from netfleet.engines.loaded_phases import one_line, phase_stats, ping_samples, rpm, samples
from netfleet.engines.probes import ToolsInfo
from netfleet.lab import load_lab
from netfleet.lab.models import Shaper
from netfleet.lab.shaping import queue_delay, tbf_args
from netfleet.report.document import Figure, Table
from netfleet.report.loaded_plots import PHASE_COLORS, loaded_latency_plot
from netfleet.report.study_report import build_document
from netfleet.spec import load_spec
from netfleet.spec.models import TEST_KINDS
from tests import pngkit
from tests.labkit import lab_campaign, lab_up, run, write_spec

FIX = Path(__file__).parent / "fixtures" / "loaded_latency"


def _fixture(name: str) -> dict[str, object]:
    doc = json.loads(gzip.decompress((FIX / f"{name}.json.gz").read_bytes()))
    assert isinstance(doc, dict)
    return doc


def test_registry_line_feeds_spec_and_catalog() -> None:
    assert isinstance(ENGINES["latency-under-load"], LoadedLatency)
    model = TEST_KINDS["latency-under-load"].model_fields["params"].annotation
    assert model is LoadedLatencyParams
    p = LoadedLatencyParams(idle=2, duration=3, gap=0.5, phases=("up", "both"), link_rate="1gbit")
    assert p.link_rate == 1e9 and p.starts() == [2, 5.5] and p.measured_seconds() == 9
    argv = LoadedLatency().load_argv(p, "both", "198.18.0.1", 5201)
    assert argv[-1] == "--bidir" and argv[argv.index("-P") + 1] == "8"


def test_documented_example_loads_and_its_queues_are_what_it_says() -> None:
    examples = Path(__file__).parent.parent / "examples"
    spec = load_spec(examples / "latency-under-load.yaml")
    assert {t.engine for t in spec.tests} == {"latency-under-load"}
    hosts = load_lab(examples / "latency-under-load.lab.yaml").hosts
    deep, shallow = hosts["deep"].in_, hosts["shallow"].in_
    assert deep is not None and shallow is not None
    assert queue_delay(deep) == pytest.approx(0.100) and queue_delay(shallow) == pytest.approx(
        0.014
    )


@dataclass
class _Labelled:
    """Just what link_rate reads of a host: its name and labels."""

    name: str
    labels: dict[str, Any]


def test_link_rate_from_params_else_the_smaller_labelled_end() -> None:
    a = _Labelled("a", {"advertised": "10gbit"})
    b = _Labelled("b", {"link_rate": "1gbit", "advertised": "25gbit"})
    odd = _Labelled("c", {"advertised": "fast"})
    given = LoadedLatencyParams(link_rate="40mbit")
    assert link_rate(given, a, b) == (40e6, "params")
    assert link_rate(LoadedLatencyParams(), a, b) == (1e9, "label link_rate of b")
    assert link_rate(LoadedLatencyParams(), odd, odd) == (None, "unknown")


def test_settle_must_leave_part_of_a_phase_and_duration_is_whole_seconds() -> None:
    with pytest.raises(ValueError, match="settle"):
        LoadedLatencyParams(duration=1, settle=1)
    with pytest.raises(ValueError, match="whole seconds"):
        LoadedLatencyParams(duration=2.5)


def test_probe_choice_irtt_needs_both_ends_ping_only_the_client() -> None:
    both = ToolsInfo("x", "", (3, 12), tools={"iperf3": (3, 12), "irtt": (0, 9), "ping": ()})
    no_irtt = ToolsInfo("x", "", (3, 12), tools={"iperf3": (3, 12)})
    assert choose("auto", both, both) == "irtt"
    assert choose("auto", both, no_irtt) == "ping"
    assert choose("irtt", both, no_irtt) is None


def test_shaper_queue_sets_tbf_limit_and_delay() -> None:
    deep = Shaper(rate="100mbit", queue="1250kb")
    assert tbf_args(deep)[-2:] == ["limit", "1250000"]
    assert queue_delay(deep) == pytest.approx(0.1)
    default = Shaper(rate="100mbit")
    assert "latency" in tbf_args(default)
    assert queue_delay(default) == pytest.approx(0.1 + 0.020)  # latency + a 20 ms burst
    with pytest.raises(ValueError, match="64 KiB"):
        Shaper(rate="100mbit", queue=1000)


@pytest.mark.parametrize("name", ["irtt_deep", "ping_deep"])
def test_phases_from_captured_runs(name: str) -> None:
    """Captured by scripts/capture_loaded_latency_fixtures.py: a 20 Mbit/s tbf whose queue holds
    250 kB (100 ms) on the path up; up loads it, down does not."""
    doc = _fixture(name)
    result, params = doc["result"], doc["params"]
    assert isinstance(result, dict) and isinstance(params, dict)
    stats = phase_stats(result, params["interval"], params["settle"], params["reach"])
    by = {p["phase"]: p for p in stats}
    assert list(by) == ["idle", *params["phases"]]
    expected = doc["queue_delay_s"] * 1e6
    assert 0.5 * expected < by["up"]["inflation_p50_us"] < 1.3 * expected
    assert by["down"]["inflation_p50_us"] < 0.1 * expected
    assert by["up"]["p50_us"] <= by["up"]["p90_us"] <= by["up"]["p99_us"] <= by["up"]["max_us"]
    assert by["up"]["up_bps"] > 0 and by["down"]["down_bps"] > 0
    n = len(samples(result, params["interval"]))
    assert sum(p["samples"] for p in stats) < n
    if result["probe"] == "irtt":  # one-way delays: the queue is on the way up only
        assert by["up"]["inflation_send_us"] > 0.5 * expected
        assert abs(by["up"]["inflation_receive_us"]) < 0.1 * expected
    assert "up +" in one_line(stats)


def test_warning_when_the_load_falls_short_of_the_link() -> None:
    doc = _fixture("irtt_deep")
    result = dict(doc["result"])
    params = doc["params"]
    assert isinstance(params, dict)
    fast = {**result, "link_rate": 1e9}  # claims a 1 Gbit/s link the 20 Mbit/s load never filled
    by = {p["phase"]: p for p in phase_stats(fast, params["interval"], 0.5, 0.85)}
    assert by["up"]["reached"] is False and "too good" in by["up"]["warning"]
    right = {**result, "link_rate": 20e6}
    by = {p["phase"]: p for p in phase_stats(right, params["interval"], 0.5, 0.85)}
    assert by["up"]["reached"] is True and by["up"]["warning"] is None
    assert by["idle"]["reached"] is None


def test_ping_lines_with_a_gap_are_a_loss() -> None:
    text = (
        "[1764100000.000100] 64 bytes from 198.18.0.2: icmp_seq=1 ttl=64 time=0.050 ms\n"
        "[1764100000.020100] 64 bytes from 198.18.0.2: icmp_seq=3 ttl=64 time=0.070 ms\n"
        "3 packets transmitted, 2 received, 33% packet loss, time 20ms\n"
    )
    got = ping_samples(text, 0.01)
    assert [s.lost for s in got] == [False, True, False]
    assert got[1].t == pytest.approx(0.01, abs=1e-4) and got[2].t == pytest.approx(0.02, abs=1e-4)
    assert got[2].rtt_us == pytest.approx(70)


def test_plot_shades_each_phase() -> None:
    doc = _fixture("irtt_deep")
    result, params = doc["result"], doc["params"]
    assert isinstance(result, dict) and isinstance(params, dict)
    stats = phase_stats(result, params["interval"], params["settle"], params["reach"])
    points = [(s.t, s.rtt_us) for s in samples(result, params["interval"])]
    windows = [(p["phase"], p["start_s"], p["end_s"], p["inflation_p50_us"]) for p in stats]
    svg = loaded_latency_plot(points, windows, "a → b", fmt="svg").decode()
    for name in ("idle", "up", "down"):  # one shaded span per phase, labelled
        assert svg.count(f"fill: {PHASE_COLORS[name]}") == 1, name
    assert PHASE_COLORS["both"] not in svg  # no such phase in this run
    assert svg.count("<use ") > 0.9 * len(points)  # one marker per probe packet (lost: ticks)


LAB = """\
subnet: 198.18.64.0/24
hosts:
  a: {}
  deep: {in: {rate: 40mbit, queue: 500kb}}
  shallow: {in: {rate: 40mbit, queue: 70kb}}
"""


@pytest.mark.netns
@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")
def test_deep_queue_inflates_by_queue_over_rate_shallow_little(tmp_path: Path) -> None:
    deep, shallow = Shaper(rate="40mbit", queue="500kb"), Shaper(rate="40mbit", queue="70kb")
    params = (
        "{idle: 1.5, duration: 3, gap: 0.5, settle: 1, phases: [up], parallel: 16, "
        "link_rate: 40mbit}"
    )
    with lab_up(tmp_path, LAB, "ll") as (name, state):
        tests = f"""\
            tests:
              - {{name: deep, engine: latency-under-load, client: a, server: deep,
                  params: {params}}}
              - {{name: shallow, engine: latency-under-load, client: a, server: shallow,
                  params: {params}}}
            """
        hosts = {"a": "a", "deep": "deep", "shallow": "shallow"}
        spec = write_spec(tmp_path, lab_campaign(name, "loaded", hosts, tests))
        result = run(spec, tmp_path / "results", state)
    assert result.ok == result.total == 2, [(e.test, e.reason) for e in result.failed]
    catalog = tmp_path / "catalog"
    ingest(tmp_path / "results", catalog)
    rows = query(
        catalog,
        "SELECT r.test, p.inflation_p50_us, p.inflation_send_us, p.inflation_receive_us, "
        "p.up_bps, p.reached FROM runs r JOIN latency_phases p USING (run_id) "
        "WHERE p.phase = 'up' ORDER BY r.test",
    ).rows
    got = {r[0]: r[1:] for r in rows}
    d_expected, s_expected = queue_delay(deep) * 1e6, queue_delay(shallow) * 1e6
    d_inf, d_send, d_recv, d_bps, d_reached = got["deep"]
    s_inf = got["shallow"][0]
    assert 0.7 * d_expected < d_inf < 1.1 * d_expected, (d_inf, d_expected)
    assert 0.7 * d_expected < d_send and abs(d_recv) < 0.1 * d_expected
    assert s_inf < 1.5 * s_expected and s_inf < 0.25 * d_inf, (s_inf, s_expected)
    assert d_reached is True and d_bps > 0.85 * 40e6
    # responsiveness: a minute over the phase's round trips (idle, then idle + the queue)
    rpms = dict(
        query(
            catalog,
            "SELECT r.test || ' ' || p.phase, p.rpm FROM runs r JOIN latency_phases p "
            "USING (run_id)",
        ).rows
    )
    idle_ms = 60e3 / rpms["deep idle"]
    assert idle_ms < 5, idle_ms  # a lab link: well under a millisecond, noise aside
    up_ms = 60e3 / rpms["deep up"]
    assert 0.7 * d_expected / 1e3 < up_ms - idle_ms < 1.2 * d_expected / 1e3, (up_ms, idle_ms)
    table = api.report_loaded(catalog=catalog)
    assert "rpm" in table.columns and len(table.rows) == 4
    assert any("round trips per minute" in n for n in table.notes)
    rpm_at = table.columns.index("rpm")
    assert sorted(r[rpm_at] for r in table.rows) == sorted(rpms.values())
    n = query(catalog, "SELECT count(*) FROM latency_samples WHERE phase = 'up'").rows[0][0]
    assert n > 2 * 150  # two runs × ≥ (3 − 1) s at 10 ms
    section = build_document(catalog).section("loaded")
    assert section is not None
    figures = [b for b in section.blocks if isinstance(b, Figure)]
    tables = [b for b in section.blocks if isinstance(b, Table)]
    assert len(figures) == 2 and all(pngkit.variance(f.png) > 100 for f in figures)
    assert len(tables) == 1 and len(tables[0].data.rows) == 4  # idle + up, two runs


def test_rpm_is_a_minute_over_the_single_sided_trimmed_mean() -> None:
    """The draft's responsiveness: the slowest 5 % of round trips are left out, the rest
    averaged; a minute over that mean. A heavy tail moves the mean, not the RPM."""
    tail = [10_000.0] * 95 + [1_000_000.0] * 5  # 10 ms, and 5 % at 1 s
    assert rpm(tail) == pytest.approx(6000.0)
    kept_one = 60_000 / ((94 * 10 + 1000) / 95)  # 6 % slow: one of them is kept
    assert rpm([10_000.0] * 94 + [1_000_000.0] * 6) == pytest.approx(kept_one)
    assert rpm([250.0]) == pytest.approx(240_000.0)
    assert rpm([]) is None and rpm([0.0]) is None


@pytest.mark.parametrize("name", ["irtt_deep", "ping_deep"])
def test_each_phase_s_rpm_comes_from_its_own_round_trips(name: str) -> None:
    """On captured runs (a 20 Mbit/s tbf holding 100 ms on the way up): the loaded phase's RPM
    is a minute over idle + the queue's delay, within the capture's spread; the run line says
    it."""
    doc = _fixture(name)
    result, params = doc["result"], doc["params"]
    assert isinstance(result, dict) and isinstance(params, dict)
    by = {p["phase"]: p for p in phase_stats(result, params["interval"], params["settle"], 0.85)}
    expected_up = 60e6 / (by["idle"]["p50_us"] + doc["queue_delay_s"] * 1e6)
    assert 0.7 * expected_up < by["up"]["rpm"] < 1.5 * expected_up, (by["up"]["rpm"], expected_up)
    assert by["idle"]["rpm"] > 20 * by["up"]["rpm"]
    assert by["down"]["rpm"] > 10 * by["up"]["rpm"]  # the queue is on the way up only
    line = one_line(list(by.values()))
    assert f"({by['up']['rpm']:,.0f} RPM)" in line and f"({by['idle']['rpm']:,.0f} RPM)" in line


@pytest.mark.parametrize("name", ["irtt_deep", "ping_deep"])
def test_bufferbloat_advice_estimates_the_queue_from_delay_and_rate(name: str) -> None:
    """The captured shaper's queue held 250 kB (100 ms at 20 Mbit/s) on the way up: the advice
    names the up phase, not down, and its queue estimate (added delay × goodput) lands near
    it; with irtt the one-way delay up is used."""
    doc = _fixture(name)
    env = {
        "run_id": "r1", "status": "ok", "engine": {"name": "latency-under-load"},
        "params": doc["params"], "result": doc["result"],
        "client": {"name": "a"}, "server": {"name": "deep"},
    }  # fmt: skip
    found = [a for a in advise([env]) if a.code == "bufferbloat"]
    assert [a.evidence["phase"] for a in found] == ["up"]
    queue = found[0].evidence["queues"]["up"]["bytes"]
    assert 0.5 * 250e3 < queue < 1.3 * 250e3, queue
    assert "RPM" in found[0].message and "kB" in found[0].message
    quiet = {**env, "result": {**doc["result"], "phases": doc["result"]["phases"][:1]}}
    assert [a for a in advise([quiet]) if a.code == "bufferbloat"] == []


def _ping_text(rtts_ms: list[float], interval: float, t0: float) -> str:
    lines = [
        f"[{t0 + i * interval + ms / 1000:.6f}] 64 bytes from 198.18.0.2: icmp_seq={i + 1} "
        f"ttl=64 time={ms:.3f} ms"
        for i, ms in enumerate(rtts_ms)
    ]
    return "\n".join([*lines, f"{len(rtts_ms)} packets transmitted, {len(rtts_ms)} received"])


def test_issue_36_inflation_is_over_a_robust_idle_baseline_and_a_busy_idle_is_flagged() -> None:
    """Issue 36.7: idle p90 2.4 ms, p99 11.0 ms (something else used the path) made the loaded
    phase's p99 inflation 3.37 ms for a 14.4 ms p99, and a phase below the idle median came out
    as "down −6.99 ms". Now inflation is over the idle p50, never negative, and the idle phase
    that was not idle says so."""
    interval, t0 = 0.01, 1764100000.0
    idle = [0.3 + 0.01 * (i % 5) for i in range(1000)]
    for i in range(0, 1000, 7):  # ~14 % of the idle probes queue behind other traffic
        idle[i] = 2.4 + 8.6 * (i % 3) / 2
    down = [0.35 + 0.01 * (i % 5) for i in range(1000)]
    for i in range(0, 1000, 50):
        down[i] = 14.4
    result = {
        "probe": "ping",
        "probe_started": t0,
        "probe_output": _ping_text(idle + down, interval, t0),
        "phases": [
            {"name": "idle", "start_s": 0.0, "end_s": 10.0},
            {"name": "down", "start_s": 10.0, "end_s": 20.0},
        ],
    }
    by = {p["phase"]: p for p in phase_stats(result, interval, 0.0, 0.85)}
    assert by["idle"]["p99_us"] > 10_000  # the noisy idle tail
    assert by["idle"]["warning"].startswith("the idle phase was not idle: p90")
    # the loaded tail over the idle median: ~14 ms, not 14.4 − 11.0
    assert by["down"]["inflation_p99_us"] == pytest.approx(14_400 - by["idle"]["p50_us"], rel=0.02)
    assert 0 <= by["down"]["inflation_p50_us"] < 100
    assert "idle p50" in one_line(list(by.values())) and "(not idle)" in one_line(list(by.values()))
    # a loaded phase below the idle median: 0, not negative, and the idle phase is flagged
    slow_idle = [3.0] * 1000
    result["probe_output"] = _ping_text(slow_idle + down, interval, t0)
    by = {p["phase"]: p for p in phase_stats(result, interval, 0.0, 0.85)}
    assert by["down"]["inflation_p50_us"] == 0.0
    assert "not idle: its p50 (3 ms) is above this loaded phase's" in by["idle"]["warning"]


def test_a_scaled_labs_load_goodput_in_cloud_figures_latency_as_measured(tmp_path: Path) -> None:
    """Issue 36, Misleading 2: a captured latency-under-load run stored as a lab at ×0.05
    (label lab_scale, as its hosts put on every run): `report loaded --scale cloud` gives the
    load's goodput as the cloud figure (÷ 0.05) and keeps the latency the lab's; each row says
    which."""
    from netfleet.catalog import ingest

    series = Path(__file__).parent / "fixtures" / "series"
    file = json.loads((series / "MANIFEST.json").read_text())["fixtures"]["steady_out"]["file"]
    env = json.loads(gzip.decompress((series / file).read_bytes()))
    captured = _fixture("irtt_deep")
    env["engine"]["name"] = "latency-under-load"
    env["params"], env["result"] = captured["params"], captured["result"]
    env["labels"].update(lab_scale=0.05, lab_time_scale=0.05)
    part = tmp_path / "results" / "d=2026-11-22" / f"campaign={env['campaign']}"
    part.mkdir(parents=True)
    (part / file).write_bytes(gzip.compress(json.dumps(env).encode()))
    assert ingest(tmp_path / "results", tmp_path / "catalog").rows["latency_phases"] == 3
    lab, cloud = (
        api.report_loaded(catalog=tmp_path / "catalog", scale=scale) for scale in ("lab", "cloud")
    )
    lab_rows = [dict(zip(lab.columns, r, strict=True)) for r in lab.rows]
    cloud_rows = [dict(zip(cloud.columns, r, strict=True)) for r in cloud.rows]
    up = next(n for n, r in enumerate(lab_rows) if r["phase"] == "up")
    assert lab_rows[up]["up_mbps"] > 10
    assert cloud_rows[up]["up_mbps"] == pytest.approx(lab_rows[up]["up_mbps"] / 0.05)
    for a, b in zip(lab_rows, cloud_rows, strict=True):
        assert a["p99_ms"] == b["p99_ms"] and a["rpm"] == b["rpm"]  # latency is not scaled
        assert a["flag"] == "lab ×0.05" and b["flag"] == "cloud; lab ×0.05"
    assert any("latency (ms, rpm) is the lab's own" in n for n in cloud.notes)
    assert any("shown as the cloud figures they stand for" in n for n in cloud.notes)
    assert not any("shown as the cloud figures" in n for n in lab.notes)
