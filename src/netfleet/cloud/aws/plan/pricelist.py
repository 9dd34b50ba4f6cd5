"""Prices from the AWS Price List API (``pricing:GetProducts``) for any instance type and region.

The API answers with ``PriceList``: one JSON document (a string) per product, each holding the
product's ``attributes`` and its ``terms`` (``OnDemand`` → offer term → ``priceDimensions`` →
``pricePerUnit.USD``), plus ``publicationDate``. A filter on type and region still matches
several products (Linux with SQL, Windows, dedicated tenancy, capacity reservations, a $0.00
line), so :func:`on_demand_hourly` re-checks the attributes it needs and refuses an ambiguous
answer instead of guessing.

Only the endpoints in ``us-east-1`` and ``ap-south-1`` serve the API. moto (the emulator the
tests use) does not implement it: the parser is tested on documents shaped like the documented
format (tests/test_pricelist.py), never on the live service's answer.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

#: the region whose endpoint serves the Price List API
PRICING_REGION = "us-east-1"
#: attributes a plain Linux on-demand instance-hour carries
LINUX_ON_DEMAND = {
    "operatingSystem": "Linux",
    "tenancy": "Shared",
    "preInstalledSw": "NA",
    "capacitystatus": "Used",
    "licenseModel": "No License required",
}
SOURCE = "AWS Price List API GetProducts (on-demand, Linux, shared tenancy)"


@dataclass(frozen=True)
class Found:
    """A price read from GetProducts and the date AWS published it."""

    usd: float
    published: dt.date | None


def ec2_filters(region: str, instance_type: str) -> list[dict[str, str]]:
    pairs = [("instanceType", instance_type), ("regionCode", region), ("operation", "RunInstances")]
    pairs += list(LINUX_ON_DEMAND.items())
    return [{"Type": "TERM_MATCH", "Field": f, "Value": v} for f, v in pairs]


def _doc(raw: Any) -> dict[str, Any]:
    doc = json.loads(raw) if isinstance(raw, str | bytes) else raw
    return doc if isinstance(doc, dict) else {}


def _published(doc: dict[str, Any]) -> dt.date | None:
    stamp = str(doc.get("publicationDate", ""))[:10]
    try:
        return dt.date.fromisoformat(stamp)
    except ValueError:
        return None


def _hourly_usd(doc: dict[str, Any], units: tuple[str, ...]) -> list[float]:
    out = []
    for term in (doc.get("terms", {}).get("OnDemand") or {}).values():
        for dim in (term.get("priceDimensions") or {}).values():
            if dim.get("unit") not in units:
                continue
            try:
                usd = float(dim.get("pricePerUnit", {}).get("USD", ""))
            except ValueError:
                continue
            if usd > 0:
                out.append(usd)
    return out


class Ambiguous(ValueError):
    """GetProducts matched products with different prices after every check."""


def on_demand_hourly(price_list: Iterable[Any], instance_type: str) -> Found | None:
    """The on-demand Linux $/h of ``instance_type`` in a GetProducts ``PriceList`` (None: not
    offered there). Products whose attributes are not plain Linux/shared/on-demand are skipped;
    two different prices left raise :class:`Ambiguous`."""
    found: dict[float, dt.date | None] = {}
    for raw in price_list:
        doc = _doc(raw)
        attrs = doc.get("product", {}).get("attributes", {})
        if attrs.get("instanceType") != instance_type:
            continue
        if any(attrs.get(k, v) != v for k, v in LINUX_ON_DEMAND.items()):
            continue
        if attrs.get("marketoption", "OnDemand") != "OnDemand":
            continue
        for usd in _hourly_usd(doc, ("Hrs", "hours")):
            found.setdefault(usd, _published(doc))
    if len(found) > 1:
        raise Ambiguous(
            f"{instance_type}: GetProducts gave several on-demand Linux prices "
            f"({', '.join(f'${p:g}' for p in sorted(found))})"
        )
    return next((Found(p, d) for p, d in found.items()), None)


def fargate_rates(price_list: Iterable[Any]) -> tuple[Found | None, Found | None]:
    """(vCPU-hour, GB-hour) Linux/x86 Fargate prices in a GetProducts answer for AmazonECS."""
    vcpu: Found | None = None
    gb: Found | None = None
    for raw in price_list:
        doc = _doc(raw)
        usage = str(doc.get("product", {}).get("attributes", {}).get("usagetype", ""))
        if "Fargate" not in usage or "ARM" in usage or "Windows" in usage or "Spot" in usage:
            continue
        if usage.endswith("Fargate-vCPU-Hours:perCPU"):
            prices = _hourly_usd(doc, ("hours", "Hrs", "vCPU-Hours"))
            vcpu = Found(prices[0], _published(doc)) if prices else vcpu
        elif usage.endswith("Fargate-GB-Hours"):
            prices = _hourly_usd(doc, ("hours", "Hrs", "GB-Hours"))
            gb = Found(prices[0], _published(doc)) if prices else gb
    return vcpu, gb


def _pages(pricing: Any, **kwargs: Any) -> list[Any]:
    out: list[Any] = []
    token = None
    while True:
        resp = pricing.get_products(**kwargs, **({"NextToken": token} if token else {}))
        out.extend(resp.get("PriceList", []))
        token = resp.get("NextToken")
        if not token:
            return out


def ec2_hourly(pricing: Any, region: str, instance_type: str) -> Found | None:
    """Ask GetProducts for one type in one region (all pages)."""
    items = _pages(
        pricing,
        ServiceCode="AmazonEC2",
        Filters=ec2_filters(region, instance_type),
        MaxResults=100,
    )
    return on_demand_hourly(items, instance_type)


def fargate_hourly(pricing: Any, region: str) -> tuple[Found | None, Found | None]:
    items = _pages(
        pricing,
        ServiceCode="AmazonECS",
        Filters=[{"Type": "TERM_MATCH", "Field": "regionCode", "Value": region}],
        MaxResults=100,
    )
    return fargate_rates(items)
