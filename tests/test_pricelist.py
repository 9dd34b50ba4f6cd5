"""Prices for any type (issue 25.4) and what else the bill counts (25.5).

moto does not implement the Price List API (``pricing:GetProducts``): the documents below are
built from AWS's documented GetProducts format (a ``PriceList`` of JSON strings, each with
``product.attributes``, ``terms.OnDemand.<offer>.priceDimensions.<rate>.pricePerUnit.USD`` and
``publicationDate``), with the neighbours a real filter also returns (Windows, SQL, dedicated
tenancy, capacity reservations, a $0.00 line). The parser never met the live service.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import botocore.session
import pytest
from botocore.stub import Stubber

from netfleet.cloud.aws.campaign import CloudSpec
from netfleet.cloud.aws.plan import billing, costs, pricelist, prices
from tests.motokit import moto_server

SEED002 = Path(__file__).parents[1] / "bench" / "seed002_types.txt"


def product(itype: str, usd: str, unit: str = "Hrs", **attrs: str) -> str:
    """One GetProducts ``PriceList`` entry in the documented shape."""
    a = {
        "instanceType": itype,
        "regionCode": "us-east-1",
        "location": "US East (N. Virginia)",
        "operatingSystem": "Linux",
        "tenancy": "Shared",
        "preInstalledSw": "NA",
        "capacitystatus": "Used",
        "licenseModel": "No License required",
        "operation": "RunInstances",
        "marketoption": "OnDemand",
        "servicecode": "AmazonEC2",
        **attrs,
    }
    sku = f"SKU{abs(hash((itype, usd, tuple(sorted(attrs.items()))))) % 10**8:08d}"
    return json.dumps(
        {
            "product": {"productFamily": "Compute Instance", "attributes": a, "sku": sku},
            "serviceCode": "AmazonEC2",
            "terms": {
                "OnDemand": {
                    f"{sku}.JRTCKXETXF": {
                        "priceDimensions": {
                            f"{sku}.JRTCKXETXF.6YS6EN2CT7": {
                                "unit": unit,
                                "endRange": "Inf",
                                "beginRange": "0",
                                "description": f"${usd} per On Demand Linux {itype} Instance Hour",
                                "appliesTo": [],
                                "rateCode": f"{sku}.JRTCKXETXF.6YS6EN2CT7",
                                "pricePerUnit": {"USD": usd},
                            }
                        },
                        "sku": sku,
                        "effectiveDate": "2025-11-01T00:00:00Z",
                        "offerTermCode": "JRTCKXETXF",
                        "termAttributes": {},
                    }
                }
            },
            "version": "20251101000000",
            "publicationDate": "2025-11-03T18:21:07Z",
        }
    )


def neighbours(itype: str) -> list[str]:
    """What a type/region filter also matches besides the plain Linux price."""
    return [
        product(itype, "0.5440000000", operatingSystem="Windows", licenseModel="License Included"),
        product(itype, "1.2000000000", preInstalledSw="SQL Std"),
        product(itype, "0.1600000000", tenancy="Dedicated"),
        product(itype, "0.1390000000", capacitystatus="UnusedCapacityReservation"),
        product(itype, "0.0000000000"),
    ]


def test_the_plain_linux_price_is_picked_from_its_neighbours() -> None:
    items = [*neighbours("m6in.large"), product("m6in.large", "0.1392300000")]
    found = pricelist.on_demand_hourly(items, "m6in.large")
    assert found == pricelist.Found(0.13923, dt.date(2025, 11, 3))
    assert pricelist.on_demand_hourly(neighbours("m6in.large"), "m6in.large") is None
    assert pricelist.on_demand_hourly([], "m6in.large") is None
    two = [product("m6in.large", "0.13923"), product("m6in.large", "0.2")]
    with pytest.raises(pricelist.Ambiguous, match=r"\$0.13923, \$0.2"):
        pricelist.on_demand_hourly(two, "m6in.large")


def _pricing() -> Any:
    return botocore.session.get_session().create_client(
        "pricing", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )


def test_any_type_is_priced_across_pages_and_dated(tmp_path: Path) -> None:
    """A type the table lacks is asked for (paged answer), cached with its date and source."""
    table = prices.load(None)
    assert table.ec2_hourly("us-east-1", "c7gn.16xlarge") is None
    pricing = _pricing()
    with Stubber(pricing) as stub:
        first = {"PriceList": neighbours("c7gn.16xlarge")[:3], "NextToken": "t2"}
        stub.add_response("get_products", first)
        rest = {"PriceList": [*neighbours("c7gn.16xlarge")[3:], product("c7gn.16xlarge", "3.9936")]}
        stub.add_response(
            "get_products",
            rest,
            {
                "ServiceCode": "AmazonEC2",
                "Filters": pricelist.ec2_filters("us-east-1", "c7gn.16xlarge"),
                "MaxResults": 100,
                "NextToken": "t2",
            },
        )
        new, missing = prices.refresh_ec2(
            pricing, table, [("us-east-1", "c7gn.16xlarge")], dt.date(2026, 11, 25)
        )
    assert missing == [] and new.ec2_hourly("us-east-1", "c7gn.16xlarge") == 3.9936
    src = new.ec2_source_of("us-east-1", "c7gn.16xlarge")
    assert src.as_of == dt.date(2026, 11, 25) and "GetProducts" in src.source
    old = new.ec2_source_of("us-east-1", "m5.large")  # the rest keep their own source
    assert old == table.ec2_source_of("us-east-1", "m5.large")
    prices.save(new, tmp_path)
    again = prices.load(tmp_path)
    assert again.ec2_hourly("us-east-1", "c7gn.16xlarge") == 3.9936
    assert again.ec2_source_of("us-east-1", "c7gn.16xlarge") == src


def test_fargate_rates_from_the_ecs_price_list() -> None:
    def usage(name: str, usd: str) -> str:
        return json.dumps(
            {
                "product": {"attributes": {"usagetype": name, "regionCode": "eu-west-1"}},
                "terms": {"OnDemand": {"T": {"priceDimensions": {"D": {
                    "unit": "hours", "pricePerUnit": {"USD": usd}}}}}},
                "publicationDate": "2025-10-01T00:00:00Z",
            }
        )  # fmt: skip

    items = [
        usage("EU-Fargate-vCPU-Hours:perCPU", "0.04456"),
        usage("EU-Fargate-GB-Hours", "0.004865"),
        usage("EU-Fargate-ARM-vCPU-Hours:perCPU", "0.03565"),
        usage("EU-SpotUsage-Fargate-vCPU-Hours:perCPU", "0.0133"),
    ]
    vcpu, gb = pricelist.fargate_rates(items)
    assert vcpu and vcpu.usd == 0.04456 and gb and gb.usd == 0.004865


def test_the_shipped_table_prices_every_type_the_seeds_name() -> None:
    """Seed 002's 77 types, the r4 family (seed 004, eu-west-1 and us-east-1), m6in and the
    Fargate tiers (seed 000, eu-west-1) — each with a dated source."""
    table = prices.load(None)
    lines = SEED002.read_text().splitlines()
    seed002 = [t for t in lines if t and not t.startswith("#")]
    assert len(seed002) == 77
    r4 = [f"r4.{s}" for s in ("large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge")]
    m6in = [f"m6in.{s}" for s in ("large", "xlarge", "2xlarge", "4xlarge", "8xlarge")]
    wanted = [("us-east-1", t) for t in [*seed002, *r4, *m6in, "c5.18xlarge"]]
    wanted += [("eu-west-1", t) for t in r4]
    missing = [f"{r}/{t}" for r, t in wanted if table.ec2_hourly(r, t) is None]
    assert missing == []
    for region, itype in wanted:
        src = table.ec2_source_of(region, itype)
        assert src.as_of.year >= 2024 and src.source
    assert table.fargate.get("eu-west-1", {}).keys() == {"vcpu_hour", "gb_hour"}


def test_a_cross_region_10_gbit_hour_is_a_transfer_line_in_the_plan() -> None:
    """4.5 TB out of us-east-1 at the inter-region rate, plus a public IPv4 and a root volume
    per instance, each with its source; the total counts them."""
    cs = CloudSpec(
        campaign="x",
        placement="cross-region",
        fleets=[
            {"instance_type": "c5n.4xlarge", "role": "client"},
            {"instance_type": "c5n.4xlarge", "role": "server", "region": "eu-west-1"},
        ],
    )
    table = prices.load(None)
    table.ec2.setdefault("eu-west-1", {})["c5n.4xlarge"] = 0.98  # a test price, not shipped
    priced = costs.plan(cs, table, 60, gbps={"c5n.4xlarge": 10.0})  # + 8 min boot/teardown
    by = {line.item.split(" (")[0]: line for line in priced.lines}
    xfer = by["transfer cross-region us-east-1→eu-west-1"]
    assert xfer.quantity == pytest.approx(4500.0)  # GB: 10 Gbit/s × 3600 s / 8
    assert xfer.usd == pytest.approx(4500 * 0.02)
    assert by["public IPv4"].usd == pytest.approx(0.005 * 68 / 60)
    notes = "\n".join(priced.table.notes)
    assert "4,500.0 GB" in notes and "$90.00" in notes
    assert "--yes only skips the confirmation" in notes
    rows = [r for r in priced.table.rows if r[0].startswith("transfer")]
    assert rows and rows[0][-1] == pytest.approx(90.0)
    ec2 = (0.864 + 0.98) * 68 / 60
    assert priced.estimate.usd == pytest.approx(ec2 + (billing.total(priced.lines) or 0), abs=1e-3)


@pytest.mark.parametrize(
    ("kind", "rate", "sides"),
    [("same-az", None, 0), ("cross-az", "cross_az_gb_each_way", 2),
     ("cross-region", "inter_region_out_gb", 1), ("internet", "internet_out_gb", 1)],
)  # fmt: skip
def test_transfer_is_charged_as_the_bill_does(kind: str, rate: str | None, sides: int) -> None:
    table = prices.load(None)
    line = billing.transfer(table, billing.Flow(kind, "us-east-1", "us-east-1", 100.0))
    expect = 0.0 if rate is None else 100 * sides * (table.other_rate("us-east-1", rate) or 0)
    assert line.usd == pytest.approx(expect)
    if rate is not None:
        assert line.usd and line.usd > 0


def _run(direction: str, sent: int | None, cz: str, sz: str, status: str = "ok") -> Any:
    from types import SimpleNamespace as NS

    def host(zone: str) -> Any:
        return NS(labels={"region": zone[:-1], "availability_zone": zone})

    result = None if sent is None else {"end": {"sum_sent": {"bytes": sent}}}
    return NS(status=status, direction=direction, result=result, client=host(cz), server=host(sz))


def test_the_bill_after_release_counts_measured_transfer_ipv4_and_volumes() -> None:
    """Sent bytes by the sending side's region/zone: an "in" run is sent by the server; a run
    whose engine has no byte count is named, not guessed; a failed run moves nothing here."""
    runs = [
        _run("out", 4_000_000_000, "us-east-1a", "eu-west-1a"),
        _run("in", 1_000_000_000, "us-east-1a", "eu-west-1a"),
        _run("out", 2_000_000_000, "us-east-1a", "us-east-1b"),
        _run("out", 9_000_000_000, "us-east-1a", "us-east-1a"),
        _run("out", None, "us-east-1a", "us-east-1a"),
        _run("out", 7_000_000_000, "us-east-1a", "eu-west-1a", status="failed"),
    ]
    flows, unknown = billing.measured_flows(runs, "cross-region", "auto")
    got = {(f.kind, f.src_region, f.dst_region): f.gbytes for f in flows}
    assert got == {
        ("cross-region", "us-east-1", "eu-west-1"): 4.0,
        ("cross-region", "eu-west-1", "us-east-1"): 1.0,
        ("cross-az", "us-east-1", "us-east-1"): 2.0,
        ("same-az", "us-east-1", "us-east-1"): 9.0,
    }
    assert unknown == 1
    table = prices.load(None)
    held = [("us-east-1", "m5.large", 1800.0), ("eu-west-1", "r4.large", 30.0)]
    line = costs.cost_line(table, "on-demand", held, 0.5, flows=flows)
    assert "transfer cross-region us-east-1→eu-west-1 (measured by the engines): 4 GB" in line
    assert "× $0.02/GB = $0.08" in line and "× $0.02/GB = $0.02" in line  # 4 GB, 1 GB out
    assert "transfer cross-az us-east-1 (measured by the engines): 2 GB × $0.02/GB" in line
    assert "public IPv4 (one per instance): 0.5 address-h" in line  # us-east-1: 30 min
    assert "public IPv4 (one per instance): 0.0167 address-h" in line  # 30 s billed as 60
    assert "; total $" in line and "estimated before launch: $0.50" in line


def test_a_plan_longer_than_the_dead_mans_switch_is_refused_before_launch() -> None:
    """Seed 002 as one campaign held 4630 min by instances that power off after 120 min."""
    from netfleet.errors import InputError

    cs = CloudSpec(campaign="x", fleets=[{"instance_type": "m5.large", "count": 2}])
    table = prices.load(None)
    long = costs.plan(cs, table, 4630)
    assert any("too short, the guard refuses" in n for n in long.table.notes)
    with pytest.raises(InputError, match="power themselves off after") as err:
        costs.guard(long.estimate, max_cost=1e6, max_instances=10, yes=True)
    assert "expires_after_minutes: 5798" in (err.value.hint or "")  # 4638 + 25 %
    fits = costs.plan(cs.model_copy(update={"expires_after_minutes": 5798}), table, 4630)
    costs.guard(fits.estimate, max_cost=1e6, max_instances=10)
    short = costs.plan(cs, table, 30)
    costs.guard(short.estimate, max_cost=10, max_instances=10)


@pytest.mark.slow  # its own moto server: ~10 s, more on a loaded machine
def test_the_plan_reads_peaks_and_vcpus_from_the_catalogue_and_says_why_a_price_is_missing(
    tmp_path: Path,
) -> None:
    """Against moto's server (its DescribeInstanceTypes; no Price List API): the transfer line
    at the types' advertised peak, the peak vCPUs, and for a type without a price the note
    that the Price List API did not answer — the guard then refuses."""
    from netfleet.errors import InputError

    cs = CloudSpec(
        campaign="x",
        placement="cross-region",
        fleets=[
            {"instance_type": "c5n.large", "role": "client"},
            {"instance_type": "c5n.large", "role": "server", "region": "eu-west-1"},
            {"instance_type": "c7gn.medium", "role": "client"},
        ],
    )
    with moto_server():
        priced = costs.priced_plan(cs, tmp_path, minutes=60)
    notes = "\n".join(priced.table.notes)
    assert "peak: 3 instances, 5 vCPUs at once" in notes  # 2 + 2 + 1
    xfer = [x for x in priced.lines if x.item.startswith("transfer cross-region")]
    assert xfer and xfer[0].quantity == pytest.approx(25 * 3600 / 8)  # c5n.large: up to 25
    assert "no price for c7gn.medium in us-east-1 in the table; Price List API" in notes
    assert priced.estimate.usd is None
    with pytest.raises(InputError, match="cannot be bounded"):
        costs.guard(priced.estimate, 1e6, 10)
