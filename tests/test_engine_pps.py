"""The ``pps`` engine (issue 38): small UDP datagrams through a real lab link whose shaper sets a
packet ceiling, the expectation derived from the shaper (its L2 rate ÷ the datagram's L2 size);
the verdict (sender- or path-limited); the spec, registry and report lines."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from netfleet import api
from netfleet.engines import ENGINES, measuring
from netfleet.engines.params.pps import PpsParams
from netfleet.engines.pps import choose, inner_params, one_line, verdict
from netfleet.engines.probes import ToolsInfo
from netfleet.report.pps import pps_table
from netfleet.spec.models import TEST_KINDS
from netfleet.units import L2_HEADER, parse_rate
from tests.labkit import lab_campaign, lab_up, run, write_spec

#: a UDP datagram's bytes on the wire beside its payload: IPv4 + UDP + Ethernet (as tbf counts)
UDP_OVERHEAD = 20 + 8 + L2_HEADER


def _info(*tools: str) -> ToolsInfo:
    return ToolsInfo("pps", "x", (), tuple((t, (3, 12)) for t in tools), 2, "boot")


def test_registry_line_feeds_the_spec_and_no_throughput_report() -> None:
    assert "pps" in ENGINES and "pps" in TEST_KINDS
    assert "pps" in measuring("packets") and "pps" not in measuring("throughput")
    with pytest.raises(ValueError, match="size"):
        PpsParams(size=8)


def test_the_tool_is_iperf2_where_both_hosts_have_it_else_iperf3() -> None:
    p = PpsParams()
    assert choose(p, _info("iperf2", "iperf3"), _info("iperf2", "iperf3")) == "iperf2"
    assert choose(p, _info("iperf3"), _info("iperf2", "iperf3")) == "iperf3"
    assert choose(PpsParams(tool="iperf2"), _info("iperf3"), _info("iperf3")) is None
    inner = inner_params(PpsParams(offered_pps=10_000, parallel=2, size=100), "iperf3")
    assert inner.protocol == "udp" and str(inner.length) == "100"
    assert parse_rate(str(inner.bitrate)) == pytest.approx(5_000 * 100 * 8)  # per stream


def test_the_verdict_says_who_limited_the_rate() -> None:
    assert verdict(100_000, 60_000, None, 1.0)[0] == "path"
    assert verdict(100_000, 99_900, None, 1.0)[0] == "sender"  # all it could, all arrived
    assert verdict(40_000, 40_000, 80_000, 1.0)[0] == "sender"  # could not offer what was asked
    assert verdict(10_000, 10_000, 10_000, 1.0)[0] == "none"
    line = one_line({"delivered_pps": 5e4, "sent_pps": 1e5, "loss_percent": 50.0,
                     "size_bytes": 64, "limit": "path"})  # fmt: skip
    assert line == "50.0 kpps delivered of 100.0 kpps sent (50.0 % lost, 64 B): path-limited"


LAB = """\
subnet: 198.18.83.0/24
hosts:
  a: {}
  b:
    in: {rate: 16mbit}
"""


@pytest.mark.netns
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")
def test_a_shaped_link_s_packet_ceiling_is_found_and_an_offer_below_it_delivered(
    tmp_path: Path,
) -> None:
    """b receives through a 16 Mbit/s tbf: 64-byte datagrams (106 bytes on the wire) fit
    16e6 / (106 × 8) ≈ 18.9 kpps. Offered as fast as a sender can, the path drops the rest
    (path-limited, delivered near the ceiling); offered 3,000 pps, all arrive (none)."""
    size = 64
    ceiling = parse_rate("16mbit") / ((size + UDP_OVERHEAD) * 8)
    with lab_up(tmp_path, LAB, "pp") as (name, state):
        tests = f"""\
            tests:
              - {{name: max, engine: pps, client: a, server: b,
                  params: {{duration: 3, size: {size}, parallel: 2}}}}
              - {{name: offered, engine: pps, client: a, server: b,
                  params: {{duration: 3, size: {size}, offered_pps: 3000, tool: iperf3}}}}
            """
        spec = write_spec(tmp_path, lab_campaign(name, "pps", {"a": "a", "b": "b"}, tests))
        result = run(spec, tmp_path / "results", state)
    assert result.ok == result.total == 2, [(e.test, e.reason) for e in result.failed]
    table = api.report_pps(results=str(tmp_path / "results"))
    rows = {r[0]: dict(zip(table.columns, r, strict=True)) for r in table.rows}
    assert len(rows) == 2 and any("kpps" in n for n in table.notes)
    by_tool = {r["tool"]: r for r in rows.values()}
    most, offered = by_tool["iperf2"], by_tool["iperf3"]
    assert most["limit"] == "path", most
    assert 0.8 * ceiling < most["delivered_kpps"] * 1e3 < 1.1 * ceiling, (most, ceiling)
    assert most["sent_kpps"] > most["delivered_kpps"] and most["loss_percent"] > 1
    assert offered["limit"] == "none", offered
    assert offered["delivered_kpps"] * 1e3 == pytest.approx(3000, rel=0.05)
    assert offered["loss_percent"] < 1


def test_the_report_shows_the_packet_allowances_the_runner_recorded() -> None:
    """The runner records the ENA counters' deltas around every run (notes); the pps report
    shows the packet ones per host, not the bandwidth ones."""
    env = {
        "run_id": "r", "engine": {"name": "pps"}, "status": "ok", "direction": "out",
        "client": {"name": "a"}, "server": {"name": "b"},
        "result": {"chosen": "iperf2", "summary": {"sent_pps": 2e5, "delivered_pps": 1.5e5,
                   "loss_percent": 25.0, "limit": "path", "size_bytes": 64, "streams": 2}},
        "notes": {"ena_allowance_deltas": {"a": {"pps_allowance_exceeded": 1200,
                  "bw_out_allowance_exceeded": 5}, "b": {"pps_allowance_exceeded": 0}}},
    }  # fmt: skip
    table = pps_table([env, {**env, "engine": {"name": "iperf3"}}])
    assert len(table.rows) == 1
    row = dict(zip(table.columns, table.rows[0], strict=True))
    assert row["ena_deltas"] == "a: pps_allowance_exceeded +1200; b: pps_allowance_exceeded +0"
    assert row["delivered_kpps"] == 150.0 and row["limit"] == "path"


def test_a_scaled_labs_packet_rates_in_cloud_figures_beside_the_labs() -> None:
    """Issue 36, Misleading 2: a lab at ×0.05 (label lab_scale) says so on each row; with
    --scale cloud its packet rates are the cloud figures they stand for (÷ 0.05) — but a
    sender-limited run measured the lab machine, not the scaled network: it keeps the lab's."""
    lab = {"lab_scale": 0.05, "lab_time_scale": 0.05}
    path = {
        "run_id": "p", "test": "max", "engine": {"name": "pps"}, "status": "ok",
        "direction": "out", "client": {"name": "a"}, "server": {"name": "b"}, "labels": lab,
        "result": {"chosen": "iperf2", "summary": {"offered_pps": None, "sent_pps": 2e4,
                   "delivered_pps": 1.5e4, "loss_percent": 25.0, "limit": "path",
                   "size_bytes": 64, "streams": 2}},
    }  # fmt: skip
    sender = {**path, "run_id": "s", "test": "cpu", "result": {"chosen": "iperf2", "summary": {
        **path["result"]["summary"], "limit": "sender", "delivered_pps": 1.9e4}}}  # fmt: skip
    unscaled = {**path, "run_id": "u", "labels": {}}
    for scale in ("lab", "cloud"):
        table = pps_table([path, sender, unscaled], scale=scale)
        rows = {r[0]: dict(zip(table.columns, r, strict=True)) for r in table.rows}
        factor = 20 if scale == "cloud" else 1
        assert rows["p"]["delivered_kpps"] == pytest.approx(15.0 * factor)
        assert rows["p"]["sent_kpps"] == pytest.approx(20.0 * factor)
        assert rows["p"]["flag"] == ("cloud; lab ×0.05" if scale == "cloud" else "lab ×0.05")
        assert rows["s"]["delivered_kpps"] == pytest.approx(19.0)
        assert rows["s"]["flag"] == "lab ×0.05; sender-limited: no cloud figure"
        assert rows["u"]["delivered_kpps"] == pytest.approx(15.0) and rows["u"]["flag"] == ""
        said = " ".join(table.notes)
        assert "max: lab at ×0.05 of the cloud figures" in said
        assert ("shown as the cloud figures" in said) == (scale == "cloud")
    # no scaled lab's run: the table as before (no flag column)
    assert "flag" not in pps_table([unscaled]).columns
