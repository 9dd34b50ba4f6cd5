"""The ``pps`` engine (issue 38): small UDP datagrams through a real lab link whose shaper sets a
packet ceiling, the expectation derived from the shaper (its L2 rate ÷ the datagram's L2 size);
the verdict (sender-, receiver- or path-limited) checked against the lab's own counters (the
shaper's drops, the receiver's socket-buffer drops); the spec, registry and report lines."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from netfleet import api
from netfleet.engines import ENGINES, measuring, socket_drops
from netfleet.engines.params.pps import PpsParams
from netfleet.engines.pps import choose, inner_params, one_line, verdict
from netfleet.engines.probes import ToolsInfo
from netfleet.lab.state import host_namespace, port_name, switch_namespace
from netfleet.report.pps import pps_table
from netfleet.spec.models import TEST_KINDS
from netfleet.store import ResultsRoot
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


def test_a_loss_in_the_receivers_socket_buffer_is_not_the_path() -> None:
    """The lab failure of issue 38's test: the sender held at the shaper's ceiling (19.3 kpps
    sent), the shaper dropped nothing, the busy receiver's socket buffer overflowed — once 3.6 %,
    once down to 13.8 kpps read. Not 'path' (a ceiling of 13.8 kpps would be a confident wrong
    figure): 'receiver', the path's ceiling at least what arrived."""
    for delivered, dropped in ((18_600, 700), (13_800, 5_500)):
        limit, why = verdict(19_300, delivered, None, 1.0, dropped)
        assert limit == "receiver", why
        assert "at least the 19,300 pps that arrived" in why
    # a loss before the receiving host is the path's; its ceiling is what arrived
    limit, why = verdict(30_000, 18_000, None, 1.0, 900)
    assert limit == "path" and "what arrived, 18,900 pps" in why and "3.0 % more" in why
    # a starved sender below the ceiling, nearly all arrived: never 'path'
    assert verdict(14_000, 13_900, None, 1.0, 90)[0] == "sender"
    assert verdict(2_900, 2_900, 3_000, 1.0, 0)[0] == "none"
    # the receiver's drops unknown: a loss stays 'path' but says the receiver may be in it
    assert "could not be read" in verdict(100_000, 60_000, None, 1.0)[1]
    line = one_line({"delivered_pps": 18_600, "arrived_pps": 19_300, "sent_pps": 19_300,
                     "loss_percent": 3.6, "size_bytes": 64, "limit": "receiver"})  # fmt: skip
    assert line == (
        "≥ 19.3 kpps arrived (18.6 read) of 19.3 kpps sent (3.6 % lost: 3.6 % in the receiver's "
        "socket buffer, 64 B): receiver-limited"
    )


LAB = """\
subnet: 198.18.83.0/24
hosts:
  a: {}
  b:
    in: {rate: 16mbit}
"""


def test_the_receivers_socket_drops_are_read_from_its_udp_counters() -> None:
    """RcvbufErrors of ``Udp:`` (IPv4) plus ``Udp6RcvbufErrors`` (IPv6), from this machine's
    own files; a host without IPv6 (no snmp6) keeps its IPv4 count; other text: None."""
    snmp = Path("/proc/net/snmp").read_text()
    head, values = (line.split() for line in snmp.splitlines() if line.startswith("Udp:"))
    v4 = int(values[head.index("RcvbufErrors")])
    assert socket_drops.parse(snmp) == v4
    snmp6 = Path("/proc/net/snmp6")
    if snmp6.exists():
        v6 = next(int(w[1]) for w in map(str.split, snmp6.read_text().splitlines())
                  if w[:1] == ["Udp6RcvbufErrors"])  # fmt: skip
        assert socket_drops.parse(snmp + snmp6.read_text()) == v4 + v6
    assert socket_drops.parse("cat: /proc/net/snmp: No such file or directory") is None
    assert socket_drops.grown(10, 25) == 15
    assert socket_drops.grown(None, 25) is None and socket_drops.grown(30, 25) is None


def _rcvbuf_errors(namespace: str) -> int:
    """The namespace's UDP RcvbufErrors, read here (not with the engine's reader)."""
    text = subprocess.run(
        ["ip", "netns", "exec", namespace, "cat", "/proc/net/snmp"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    head, values = (line.split() for line in text.splitlines() if line.startswith("Udp:"))
    return int(values[head.index("RcvbufErrors")])


def _shaper_drops(namespace: str, device: str) -> int:
    text = subprocess.run(
        ["ip", "netns", "exec", namespace, "tc", "-s", "-j", "qdisc", "show", "dev", device],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return int(json.loads(text)[0]["drops"])


@pytest.mark.netns
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")
def test_a_shaped_link_s_packet_ceiling_is_found_and_an_offer_below_it_delivered(
    tmp_path: Path,
) -> None:
    """b receives through a 16 Mbit/s tbf: 64-byte datagrams (106 bytes on the wire) fit
    16e6 / (106 × 8) ≈ 18.9 kpps. Offered as fast as a sender can, the verdict matches what the
    lab's own counters saw: the shaper's drops (tbf on b's switch port) make it 'path', with what
    arrived near the ceiling; without them it is never 'path' — the receiver's socket-buffer
    drops ('receiver', counted like the namespace's RcvbufErrors) or a sender that could offer no
    more ('sender'), each a lower bound of the ceiling. (A shaper in the same kernel mostly holds
    the sender back at the ceiling: the datagrams it queues still count against the sender's
    socket buffer.) Offered 3,000 pps, all arrive."""
    size = 64
    ceiling = parse_rate("16mbit") / ((size + UDP_OVERHEAD) * 8)
    with lab_up(tmp_path, LAB, "pp") as (name, state):
        receiver, switch = host_namespace(name, "b"), switch_namespace(name)
        seen: dict[str, dict[str, int]] = {}
        for test, params in (
            ("max", f"{{duration: 3, size: {size}, parallel: 2}}"),
            ("offered", f"{{duration: 3, size: {size}, offered_pps: 3000, tool: iperf3}}"),
        ):
            one = f"{{name: {test}, engine: pps, client: a, server: b, params: {params}}}"
            tests = f"tests:\n  - {one}\n"
            spec = write_spec(
                tmp_path,
                lab_campaign(name, "pps", {"a": "a", "b": "b"}, tests),
                name=f"{test}.yaml",
            )
            rcvbuf, shaper = _rcvbuf_errors(receiver), _shaper_drops(switch, port_name("b"))
            result = run(spec, tmp_path / "results", state)
            assert result.ok == result.total == 1, [(e.test, e.reason) for e in result.failed]
            seen[test] = {
                "rcvbuf": _rcvbuf_errors(receiver) - rcvbuf,
                "shaper": _shaper_drops(switch, port_name("b")) - shaper,
            }
    store = ResultsRoot(tmp_path / "results")
    summaries = {e["test"]: e["result"]["summary"] for e in map(store.read, store.files())}
    table = api.report_pps(results=str(tmp_path / "results"))
    rows = {r[0]: dict(zip(table.columns, r, strict=True)) for r in table.rows}
    assert len(rows) == 2 and any("kpps" in n for n in table.notes)
    by_tool = {r["tool"]: r for r in rows.values()}
    for tool, test in (("iperf2", "max"), ("iperf3", "offered")):
        row, lab_saw, summary = by_tool[tool], seen[test], summaries[test]
        sent = row["sent_kpps"] * 1e3
        seconds = summary["seconds"]
        # the engine counted the receiver's drops as the namespace did (its window is in ours)
        assert 0 <= lab_saw["rcvbuf"] - summary["receiver_drops"] <= 0.005 * sent * seconds, (
            summary, lab_saw,
        )  # fmt: skip
        shaper_percent = 100 * lab_saw["shaper"] / (sent * seconds)
        receiver_percent = 100 * lab_saw["rcvbuf"] / (sent * seconds)
        if row["limit"] == "path":  # the path's figure: what arrived, near the shaper's ceiling
            assert shaper_percent > 0.5, (row, lab_saw)
            assert 0.8 * ceiling < row["arrived_kpps"] * 1e3 < 1.1 * ceiling, (row, ceiling)
            assert row["sent_kpps"] > row["arrived_kpps"] >= row["delivered_kpps"]
        else:  # a lower bound: never above the ceiling, never a shaper that dropped much
            assert shaper_percent < 2, (row, lab_saw)
            assert row["arrived_kpps"] * 1e3 < 1.1 * ceiling, (row, ceiling)
        if sent < 0.95 * ceiling:  # nothing for the shaper to drop
            assert row["limit"] != "path", (row, ceiling)
        if row["limit"] == "receiver":
            assert receiver_percent > 0.5 and row["delivered_kpps"] < row["arrived_kpps"]
    most, offered = by_tool["iperf2"], by_tool["iperf3"]
    assert most["limit"] in ("path", "receiver", "sender"), most
    assert offered["limit"] in ("none", "receiver"), offered
    assert offered["arrived_kpps"] * 1e3 == pytest.approx(3000, rel=0.05)
    if offered["limit"] == "none":
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
    receiver = {**path, "run_id": "r", "test": "rcv", "result": {"chosen": "iperf2", "summary": {
        **path["result"]["summary"], "limit": "receiver", "arrived_pps": 1.95e4}}}  # fmt: skip
    unscaled = {**path, "run_id": "u", "labels": {}}
    for scale in ("lab", "cloud"):
        table = pps_table([path, sender, receiver, unscaled], scale=scale)
        rows = {r[0]: dict(zip(table.columns, r, strict=True)) for r in table.rows}
        factor = 20 if scale == "cloud" else 1
        assert rows["p"]["delivered_kpps"] == pytest.approx(15.0 * factor)
        assert rows["p"]["sent_kpps"] == pytest.approx(20.0 * factor)
        assert rows["p"]["flag"] == ("cloud; lab ×0.05" if scale == "cloud" else "lab ×0.05")
        assert rows["s"]["delivered_kpps"] == pytest.approx(19.0)
        assert rows["s"]["flag"] == "lab ×0.05; sender-limited: no cloud figure"
        # the receiver's socket buffer is the lab machine's too: what arrived stays the lab's
        assert rows["r"]["arrived_kpps"] == pytest.approx(19.5)
        assert rows["r"]["flag"] == "lab ×0.05; receiver-limited: no cloud figure"
        assert rows["u"]["delivered_kpps"] == pytest.approx(15.0) and rows["u"]["flag"] == ""
        said = " ".join(table.notes)
        assert "max: lab at ×0.05 of the cloud figures" in said
        assert ("shown as the cloud figures" in said) == (scale == "cloud")
    # no scaled lab's run: the table as before (no flag column)
    assert "flag" not in pps_table([unscaled]).columns
