"""Price per Gbit/s from the shipped, dated price table (cloud hosts: instance_type + region
labels) or from price_per_hour labels (lab and SSH hosts), over runs captured through the lab
(tests/fixtures/series); the source and the staleness travel with every row."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from netfleet import pricetable
from netfleet.analysis import GroupAnalysis, analyze_file
from netfleet.cloud.aws.plan import prices
from netfleet.errors import InputError
from netfleet.report.price import GBIT, HOURS_PER_MONTH, price_performance
from netfleet.report.study import rates_of

SERIES = Path(__file__).parent / "fixtures" / "series"
MANIFEST: dict[str, Any] = json.loads((SERIES / "MANIFEST.json").read_text())["fixtures"]


def _group(fixture: str, direction: str, **labels: str) -> GroupAnalysis:
    a = analyze_file(SERIES / MANIFEST[fixture]["file"])
    a = replace(a, run=replace(a.run, labels=labels))
    return GroupAnalysis({"instance_type": labels["instance_type"], "direction": direction}, (a,))


def test_cloud_hosts_take_the_dated_table_and_lab_hosts_their_label() -> None:
    table = prices.load(None)  # the shipped table
    c5 = table.ec2_hourly("us-east-1", "c5.large")
    m5 = table.ec2_hourly("us-east-1", "m5.large")
    assert c5 is not None and m5 is not None and c5 < m5
    groups = [
        _group("steady_out", "out", instance_type="m5.large", region="us-east-1"),
        _group("steady_out", "in", instance_type="c5.large", region="us-east-1"),
        # listed type, but no region: the table cannot vouch for it, the label counts
        _group("steady_out", "out", instance_type="t3.micro", price_per_hour="0.5"),
        _group("credit_out", "out", instance_type="lab-credit", price_per_hour="0.001"),
        _group("steady_out", "out", instance_type="x9.huge", region="us-east-1"),  # unlisted
    ]
    today = table.as_of + dt.timedelta(days=pricetable.STALE_AFTER_DAYS + 10)
    pp = price_performance("unused", groups=groups, table=table, target="200mbit", today=today)
    rows = {r["instance_type"]: r for r in pp.table().records()}

    assert rows["m5.large"]["usd_per_hour"] == m5
    assert rows["m5.large"]["price_source"] == f"price table as of {table.as_of}"
    assert rows["m5.large"]["price_as_of"] == table.as_of
    assert rows["m5.large"]["price_age_days"] == pricetable.STALE_AFTER_DAYS + 10
    assert rows["m5.large"]["price_stale"] is True
    assert any("days old" in n for n in pp.table().notes)  # the table's stale warning

    assert rows["t3.micro"]["usd_per_hour"] == 0.5
    assert rows["t3.micro"]["price_source"] == "price_per_hour label"
    assert rows["t3.micro"]["price_stale"] is None and rows["t3.micro"]["price_as_of"] is None
    assert rows["x9.huge"]["usd_per_hour"] is None and rows["x9.huge"]["price_source"] == "none"

    # $ per sustained Gbit/s follows from the row's own price and measured rate
    sustained = rates_of(groups[0]).sustained
    assert sustained is not None
    per = rows["m5.large"]["usd_per_sustained_gbps_hour"]
    assert per == pytest.approx(m5 / (sustained.value / GBIT))
    assert rows["m5.large"]["usd_per_sustained_gbps_month"] == pytest.approx(per * HOURS_PER_MONTH)

    # ≥ 200 Mbit/s sustained: the steady types reach it, the credit host's baseline does not;
    # c5.large is the cheapest by the table even though lab-credit's label is cheaper
    assert pp.cheapest == "c5.large", pp.verdict
    assert "c5.large" in pp.verdict and f"${c5:.4g}/h" in pp.verdict
    human, flags = pp.report_table()  # terminal and report: staleness stays on the row
    cells = {r["instance type"]: r["price from"] for r in human.records()}
    assert (
        cells["m5.large"]
        == f"price table as of {table.as_of} ({rows['m5.large']['price_age_days']} days old: stale)"
    )
    assert cells["t3.micro"] == "price_per_hour label"
    assert sorted(flags) == [0, 1]  # the two table-priced rows
    fresh = price_performance("unused", groups=groups[:1], table=table, today=table.as_of)
    assert fresh.table().records()[0]["price_stale"] is False


def test_a_price_given_from_python_wins_and_without_any_price_the_notes_say_how() -> None:
    groups = [_group("steady_out", "out", instance_type="m5.large", region="us-east-1")]
    given = price_performance("unused", groups=groups, prices={"m5.large": 0.2})
    (row,) = given.table().records()
    assert row["usd_per_hour"] == 0.2 and row["price_source"] == "given price table"
    bare = [_group("steady_out", "out", instance_type="lab-steady")]
    none = price_performance("unused", groups=bare, table=prices.load(None))
    assert none.rows[0].price_per_hour is None
    assert any("region labels" in n and "price_per_hour" in n for n in none.table().notes)


def test_a_refreshed_copy_wins_and_a_broken_one_names_the_file(tmp_path: Path) -> None:
    shipped = prices.load(None)
    doc = shipped.to_json()
    doc["as_of"] = "2026-11-01"
    doc["ec2_on_demand_per_hour"]["us-east-1"]["m5.large"] = 0.123
    (tmp_path / "prices.json").write_text(json.dumps(doc))
    local = prices.load(tmp_path)
    assert local.ec2_hourly("us-east-1", "m5.large") == 0.123
    assert local.as_of == dt.date(2026, 11, 1) and local.path == tmp_path / "prices.json"
    (tmp_path / "prices.json").write_text('{"source": "x"}')
    with pytest.raises(InputError, match=r"prices\.json: not a netfleet price table"):
        prices.load(tmp_path)


def test_the_cloud_ships_its_table_and_the_base_reads_it() -> None:
    """The file is the cloud's (AWS: ``netfleet.cloud.aws.plan.prices.SHIPPED``); the format
    and the one loader are the base's, which names no cloud's file."""
    assert prices.PriceTable is pricetable.PriceTable
    assert prices.load(None).path == prices.SHIPPED and prices.SHIPPED.is_file()
    assert pricetable.load(None, prices.SHIPPED) == prices.load(None)
    assert not hasattr(pricetable, "SHIPPED")


def test_the_study_reports_price_section_of_cloud_runs_uses_the_table(tmp_path: Path) -> None:
    """End to end: captured runs relabelled as cloud hosts (instance_type + region, as
    `netfleet cloud` labels them), ingested, reported — the price section takes the table."""
    import gzip

    from netfleet.catalog import ingest
    from netfleet.report.document import Table
    from netfleet.report.study_report import build_document

    part = tmp_path / "results" / "d=2026-11-22" / "campaign=series"
    part.mkdir(parents=True)
    as_cloud = {"steady_out": "c5.large", "credit_out": "t3.micro"}
    for fixture, itype in as_cloud.items():
        name = MANIFEST[fixture]["file"]
        doc = json.loads(gzip.decompress((SERIES / name).read_bytes()))
        doc["labels"] = {"cloud": "aws", "instance_type": itype, "region": "us-east-1"}
        (part / name).write_bytes(gzip.compress(json.dumps(doc).encode()))
    ingest(tmp_path / "results", tmp_path / "catalog")
    table = prices.load(None)
    doc = build_document(tmp_path / "catalog", price_table=table, target="100mbit")
    section = doc.section("price")
    assert section is not None
    (shown,) = [b for b in section.blocks if isinstance(b, Table)]
    rows = {r["instance type"]: r for r in shown.data.records()}
    assert set(rows) == set(as_cloud.values())
    for itype, row in rows.items():
        assert row["$/hour"] == table.ec2_hourly("us-east-1", itype)
        assert row["price from"].startswith(f"price table as of {table.as_of}")
    texts = [b.text for b in section.blocks if hasattr(b, "text")]
    assert any("c5.large" in t for t in texts), texts  # t3.micro's baseline is below 100 Mbit/s
