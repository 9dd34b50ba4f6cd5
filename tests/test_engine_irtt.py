"""irtt: the parser on captured real JSON, the spec, and a real run in a lab → catalog rows."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from netfleet.catalog import ingest, query
from netfleet.engines import ENGINES
from netfleet.engines.irtt import Irtt, IrttParams, one_line, summarize, table_rows
from netfleet.hosts.packages import package_table
from netfleet.spec.models import TEST_KINDS
from tests.labkit import lab_campaign, lab_up, run, write_spec

FIX = Path(__file__).parent / "fixtures" / "irtt"


@pytest.mark.parametrize("name", ["basic", "short_interval"])
def test_summary_matches_irtts_own_stats(name: str) -> None:
    doc = json.loads((FIX / f"{name}.json").read_text())
    stats = doc["stats"]
    s = summarize(doc)
    assert s["rtt_mean_us"] == pytest.approx(stats["rtt"]["mean"] / 1000)
    assert s["rtt_min_us"] <= s["rtt_p50_us"] <= s["rtt_max_us"]
    assert s["packets_sent"] == len(doc["round_trips"]) and s["packets_received"] > 0
    assert s["send_delay_mean_us"] is not None and s["ipdv_mean_us"] is not None
    assert s["seconds"] == pytest.approx(stats["duration"] / 1e9)
    assert "RTT p50" in one_line(s)
    row = table_rows("r", {"json": doc}, {"length": 64})["latency"][0]
    assert row["tool"] == "irtt" and row["kind"] == "isochronous"
    assert row["received"] == stats["packets_received"] and row["p50_us"] == s["rtt_p50_us"]


def test_no_json_is_no_summary() -> None:
    s = summarize({})
    assert s["rtt_p50_us"] is None and s["packets_received"] is None
    assert one_line(summarize({})) == "no round trips"


def test_registry_line_feeds_spec_catalog_packages_tools() -> None:
    assert isinstance(ENGINES["irtt"], Irtt)
    assert TEST_KINDS["irtt"].model_fields["params"].annotation is IrttParams
    assert package_table()["irtt"]["apt-get"] == "irtt"
    argv = Irtt().client_argv(IrttParams(duration=2, interval=0.01, length=64), "198.18.0.1", 9)
    assert argv[-1] == "198.18.0.1:9" and "10ms" in argv and "2s" in argv


@pytest.mark.netns
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")
def test_irtt_in_a_lab_lands_in_the_latency_table(tmp_path: Path) -> None:
    with lab_up(tmp_path, "subnet: 198.18.63.0/24\nhosts:\n  a: {}\n  b: {}\n", "ir") as (
        name,
        state,
    ):
        tests = """\
            tests:
              - {name: iso, engine: irtt, client: a, server: b,
                 params: {duration: 1, interval: 0.02, length: 100}}
            """
        spec = write_spec(tmp_path, lab_campaign(name, "irtt", {"a": "a", "b": "b"}, tests))
        result = run(spec, tmp_path / "results", state)
    assert result.ok == result.total == 1, [(e.test, e.reason) for e in result.failed]
    catalog = tmp_path / "catalog"
    ingest(tmp_path / "results", catalog)
    rows = query(catalog, "SELECT tool, kind, sent, received, p50_us, size FROM latency").rows
    assert len(rows) == 1
    tool, kind, sent, received, p50, size = rows[0]
    assert (tool, kind, size) == ("irtt", "isochronous", 100)
    assert 40 <= sent <= 60 and received == sent and 0 < p50 < 100_000
