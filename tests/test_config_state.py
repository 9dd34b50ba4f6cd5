"""Configuration state with every result (issue 28 item 4): the ``ena_srd_*`` reader, the dated
provider rules, the envelope's ``state`` and the catalog columns it fills."""

from __future__ import annotations

import datetime as dt
import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from netfleet import api, providerrules
from netfleet.advice import advise
from netfleet.catalog import ingest
from netfleet.catalog.columns import run_row
from netfleet.catalog.query import query
from netfleet.hosts import ena, srd
from netfleet.store.envelope import ConfigState, Envelope
from tests import labkit
from tests.labkit import lab_campaign, lab_up, write_spec

FIXTURES = Path(__file__).parent / "fixtures" / "ethtool"

#: ENA-shaped ``ethtool -S`` text in the format the AWS EC2 User Guide documents ("Metrics for
#: ENA Express": a "NIC statistics:" header, then one tab-indented ``name: value`` line per
#: counter; ``ena_srd_mode`` 0-3 = ENA Express bit 0, UDP bit 1). Never met a real ENA NIC: this
#: machine has none (the veth capture below is real). The values are ours, not AWS's.
ENA_SHAPED = (
    "NIC statistics:\n"
    "\tbw_in_allowance_exceeded: 4\n"
    "\tpps_allowance_exceeded: 0\n"
    "\tena_srd_mode: {mode}\n"
    "\tena_srd_tx_pkts: {tx}\n"
    "\tena_srd_eligible_tx_pkts: {eligible}\n"
    "\tena_srd_rx_pkts: {rx}\n"
    "\tena_srd_resource_utilization: {util}\n"
)


def shaped(mode: int, tx: int, eligible: int, rx: int, util: int) -> str:
    return ENA_SHAPED.format(mode=mode, tx=tx, eligible=eligible, rx=rx, util=util)


def test_a_real_veth_has_no_ena_counters_of_either_kind() -> None:
    text = (FIXTURES / "veth_stats.txt").read_text()
    assert "NIC statistics:" in text  # the capture is real ethtool -S output
    assert srd.parse_srd(text) == {}
    assert ena.parse_stats(text) == {}
    assert srd.express_on(srd.parse_srd(text)) is None


def test_srd_values_are_read_apart_from_the_allowance_counters() -> None:
    text = shaped(3, 100, 120, 90, 7)
    values = srd.parse_srd(text)
    assert values == {
        "ena_srd_mode": 3,
        "ena_srd_tx_pkts": 100,
        "ena_srd_eligible_tx_pkts": 120,
        "ena_srd_rx_pkts": 90,
        "ena_srd_resource_utilization": 7,
    }
    allowance = ena.parse_stats(text)
    assert not any(k.startswith(srd.PREFIX) for k in allowance)  # no wrong "allowance" advice
    assert allowance["bw_in_allowance_exceeded"] == 4


def test_ena_express_is_bit_0_of_the_mode() -> None:
    for mode, on in ((0, False), (1, True), (2, False), (3, True)):
        assert srd.express_on(srd.parse_srd(shaped(mode, 0, 0, 0, 0))) is on


def test_counters_become_deltas_and_gauges_stay_as_read() -> None:
    before = srd.parse_srd(shaped(1, 100, 120, 90, 7))
    after = srd.parse_srd(shaped(1, 1100, 1150, 590, 12))
    assert srd.over_run(before, after) == {
        "ena_srd_mode": 1,
        "ena_srd_tx_pkts": 1000,
        "ena_srd_eligible_tx_pkts": 1030,
        "ena_srd_rx_pkts": 500,
        "ena_srd_resource_utilization": 12,
    }
    # an interrupted run has no after-read: the gauges as read before, no counter invented
    assert srd.over_run(before, {}) == {"ena_srd_mode": 1, "ena_srd_resource_utilization": 7}


def test_rules_newer_than_a_record_are_named() -> None:
    now = providerrules.recorded()
    assert providerrules.changed_since(now) == []
    rule = providerrules.RULES[1]
    older = {**now, rule.name: (rule.as_of - dt.timedelta(days=1)).isoformat()}
    changed = providerrules.changed_since(older)
    assert [(r.name, seen) for r, seen in changed] == [(rule.name, older[rule.name])]
    missing = {k: v for k, v in now.items() if k != rule.name}
    assert [(r.name, seen) for r, seen in providerrules.changed_since(missing)] == [
        (rule.name, None)
    ]
    assert max(r.as_of for r in providerrules.RULES) == providerrules.AS_OF


def _doc(state: dict[str, object] | None) -> dict[str, object]:
    host = {"name": "h", "kind": "netns", "address": "198.18.0.1", "facts": {"mtu": 1500}}
    doc: dict[str, object] = {
        "netfleet_version": "0",
        "run_id": "r-1",
        "run_key": "r",
        "campaign": "c",
        "test": "t",
        "repeat": 0,
        "sequence": 0,
        "status": "ok",
        "direction": "out",
        "subject": "client",
        "params": {},
        "labels": {},
        "client": host,
        "server": {**host, "name": "s"},
        "engine": {"name": "iperf3", "version": "3.12", "argv": []},
        "started_at": "2026-11-25T10:00:00Z",
        "ended_at": "2026-11-25T10:00:05Z",
        "duration_s": 5.0,
        "netfleet_format": 1,
    }
    if state is not None:
        doc["state"] = state
    return doc


def test_an_envelope_without_state_still_reads_and_its_columns_are_null() -> None:
    old = _doc(None)
    assert Envelope.model_validate(old).state is None
    row = run_row(old, "x")
    for column in ("client_zone_id", "client_ena_express", "rules_as_of", "state"):
        assert row[column] is None
    assert row["client_mtu"] == 1500


def test_state_fills_the_runs_columns() -> None:
    state = {
        "client": {"zone_id": "use1-az1", "ena_express": True, "bandwidth_weighting": "vpc-1"},
        "server": {"zone_id": "use1-az4", "ena_express": False, "mtu": 9001},
        "rules_as_of": "2026-01-02",
        "rules": {"aws-per-flow-limit": "2026-01-02"},
    }
    doc = _doc(state)
    doc["server"] = {"name": "s", "kind": "ssh", "address": "198.18.0.2"}  # no facts
    ConfigState.model_validate(state)
    row = run_row(doc, "x")
    assert (row["client_zone_id"], row["server_zone_id"]) == ("use1-az1", "use1-az4")
    assert (row["client_ena_express"], row["server_ena_express"]) == (True, False)
    assert (row["client_bandwidth_weighting"], row["server_bandwidth_weighting"]) == ("vpc-1", None)
    assert row["rules_as_of"] == dt.date(2026, 1, 2)
    assert row["server_mtu"] == 9001  # from the state when the facts lack it
    assert json.loads(row["state"])["rules"] == state["rules"]


def test_srd_traffic_does_not_read_as_an_exceeded_allowance() -> None:
    before = srd.parse_srd(shaped(1, 0, 0, 0, 5))
    after = srd.parse_srd(shaped(1, 50_000, 50_000, 40_000, 60))
    host = {"zone_id": "use1-az1", "ena_express": True, "ena_srd": srd.over_run(before, after)}
    doc = _doc({"client": host, "server": host, "rules_as_of": "2026-01-02"})
    doc["notes"] = {"ena_allowance_deltas": {"h": {"bw_out_allowance_exceeded": 0}}}
    assert not [a for a in advise([doc]) if a.code == "ena-allowance"]
    doc["notes"] = {"ena_allowance_deltas": {"h": {"bw_out_allowance_exceeded": 3}}}
    assert [a.code for a in advise([doc]) if a.code == "ena-allowance"] == ["ena-allowance"]


# -- a real lab run: the state is recorded, ingested by both paths, and checked by doctor ------

MTU = 1400
ZONE, WEIGHTING = "use1-az4", "vpc-1"


@pytest.mark.netns
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")
def test_a_lab_run_fills_the_state_columns_on_both_ingest_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = f"""\
        subnet: 198.18.130.0/24
        mtu: {MTU}
        hosts:
          srv: {{}}
          cli: {{labels: {{zone_id: {ZONE}, bandwidth_weighting: {WEIGHTING}}}}}
        """
    results = tmp_path / "results"
    with lab_up(tmp_path, body, prefix="st") as (name, state_dir):
        tests = """\
            tests:
              - name: tput
                client: cli
                server: srv
                params: {duration: 1, omit: 0, interval: 1}
            """
        spec = write_spec(
            tmp_path, lab_campaign(name, "statecheck", {"srv": "srv", "cli": "cli"}, tests)
        )
        done = labkit.run(spec, results, state_dir)
        assert done.ok == 1, [e.reason for e in done.envelopes]
        env = done.envelopes[0]
        assert env.state is not None
        assert env.state.client.zone_id == ZONE and env.state.server.zone_id == "unknown"
        assert env.state.client.mtu == env.client.facts["mtu"] == MTU
        assert env.state.client.ena_express is None  # a veth: no ena_srd_* counters
        assert env.state.rules == providerrules.recorded()

        assert ingest(results, tmp_path / "cat").ingested == 1
        columns = (
            "client_zone_id, server_zone_id, client_bandwidth_weighting, "
            "server_bandwidth_weighting, client_mtu, server_mtu, rules_as_of, "
            "client_ena_express, state IS NOT NULL"
        )
        rows = query(tmp_path / "cat", f"SELECT {columns} FROM runs").rows
        assert rows == [
            [ZONE, "unknown", WEIGHTING, None, MTU, MTU, providerrules.AS_OF, None, True]
        ]

        # doctor: nothing changed since; then the table is revised after the result was taken
        quiet = api.doctor(spec, state_dir=state_dir, results=str(results))
        assert not [a for a in quiet.advice if a.code.startswith("rule")]
        old = providerrules.RULES[0]
        revised = replace(old, as_of=old.as_of + dt.timedelta(days=30))
        rules = (revised, *providerrules.RULES[1:])
        monkeypatch.setattr(providerrules, "RULES", rules)
        monkeypatch.setattr(providerrules, "BY_NAME", {r.name: r for r in rules})
        warned = api.doctor(spec, state_dir=state_dir, results=str(results))
        (item,) = [a for a in warned.advice if a.code == "rule-changed"]
        assert item.severity == "warn" and old.name in item.message
        assert item.evidence["recorded"] == old.as_of.isoformat()
        assert item.run_ids == (env.run_id,)
