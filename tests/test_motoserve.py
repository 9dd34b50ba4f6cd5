"""tests/motoserve.py: moto's DescribeInstanceTypes cut into pages as AWS cuts them (MaxResults,
NextToken) — the same types as the unpaged answer, in pages no longer than asked; the spot
price history likewise."""

from __future__ import annotations

from typing import Any

from netfleet import aws
from tests import motokit
from tests.motokit import MotoServer

moto = motokit.moto  # one moto server for the module


def test_instance_types_come_in_pages_that_add_up_to_the_whole(moto: MotoServer) -> None:
    ec2 = aws.client("ec2", "us-east-1")
    r4 = [{"Name": "instance-type", "Values": ["r4.*"]}]
    whole = {t["InstanceType"] for t in ec2.describe_instance_types(Filters=r4)["InstanceTypes"]}
    assert len(whole) > 5 and "r4.large" in whole
    pages = list(
        ec2.get_paginator("describe_instance_types").paginate(
            Filters=r4, PaginationConfig={"PageSize": 5}
        )
    )
    assert len(pages) > 1 and all(len(p["InstanceTypes"]) <= 5 for p in pages)
    assert "NextToken" in pages[0] and "NextToken" not in pages[-1]
    paged = [t["InstanceType"] for p in pages for t in p["InstanceTypes"]]
    assert len(paged) == len(whole) and set(paged) == whole
    first = ec2.describe_instance_types(MaxResults=5)  # the permission probe's call
    assert len(first["InstanceTypes"]) == 5 and first["NextToken"]
    named = ec2.describe_instance_types(InstanceTypes=["r4.large"], MaxResults=5)
    assert [t["InstanceType"] for t in named["InstanceTypes"]] == ["r4.large"]


def test_the_spot_price_history_comes_in_pages_too(moto: MotoServer) -> None:
    ec2 = aws.client("ec2", "us-east-1")
    kw: dict[str, Any] = {"InstanceTypes": ["r4.large", "c5n.large"]}
    whole = ec2.describe_spot_price_history(**kw)["SpotPriceHistory"]
    assert len(whole) > 3
    pages = list(
        ec2.get_paginator("describe_spot_price_history").paginate(
            **kw, PaginationConfig={"PageSize": 3}
        )
    )
    assert len(pages) > 1 and all(len(p["SpotPriceHistory"]) <= 3 for p in pages)
    paged = [h for p in pages for h in p["SpotPriceHistory"]]
    key = ("InstanceType", "AvailabilityZone", "SpotPrice", "ProductDescription")
    assert sorted(tuple(h[k] for k in key) for h in paged) == sorted(
        tuple(h[k] for k in key) for h in whole
    )
    assert len(ec2.describe_spot_price_history(MaxResults=5)["SpotPriceHistory"]) == 5
