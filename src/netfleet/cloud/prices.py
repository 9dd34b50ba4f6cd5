"""The dated price table: shipped in the repo, refreshed from the AWS Pricing API when online.

The table states its ``source`` and ``as_of``; :func:`stale_warning` says when it is older than
:data:`STALE_AFTER_DAYS`. ``refresh`` writes an updated copy next to the cloud state (atomically)
and :func:`load` prefers that copy over the shipped one.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# the static table lives at base rank (netfleet.pricetable): the report reads it too
from netfleet.pricetable import SHIPPED, STALE_AFTER_DAYS, PriceTable, load, stale_warning

__all__ = [
    "MIN_BILLED_S", "SHIPPED", "STALE_AFTER_DAYS", "Estimate", "PriceTable", "estimate", "load",
    "refresh", "save", "stale_warning",
]  # fmt: skip

#: EC2 bills Linux per second with a 60-second minimum
MIN_BILLED_S = 60.0


def save(table: PriceTable, state_root: Path) -> Path:
    state_root.mkdir(parents=True, exist_ok=True)
    target = state_root / "prices.json"
    fd, tmp = tempfile.mkstemp(dir=state_root, prefix=".prices.")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(table.to_json(), fh, indent=1, sort_keys=True)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, target)
    return target


def _on_demand_usd(item: dict[str, Any]) -> float | None:
    for term in item.get("terms", {}).get("OnDemand", {}).values():
        for dim in term.get("priceDimensions", {}).values():
            if dim.get("unit") in ("Hrs", "hours"):
                usd = float(dim.get("pricePerUnit", {}).get("USD", "0"))
                if usd > 0:
                    return usd
    return None


def refresh(
    pricing: Any, table: PriceTable, regions: list[str], types: list[str], today: dt.date
) -> tuple[PriceTable, list[str]]:
    """Ask ``pricing:GetProducts`` for each (region, type); returns the new table and what was
    not found (kept at its old price, if any)."""
    ec2 = {r: dict(v) for r, v in table.ec2.items()}
    missing: list[str] = []
    for region in regions:
        for itype in types:
            resp = pricing.get_products(
                ServiceCode="AmazonEC2",
                Filters=[
                    {"Type": "TERM_MATCH", "Field": f, "Value": v}
                    for f, v in (
                        ("instanceType", itype),
                        ("regionCode", region),
                        ("operatingSystem", "Linux"),
                        ("tenancy", "Shared"),
                        ("preInstalledSw", "NA"),
                        ("capacitystatus", "Used"),
                    )
                ],
                MaxResults=10,
            )
            found = None
            for raw in resp.get("PriceList", []):
                found = _on_demand_usd(json.loads(raw) if isinstance(raw, str) else raw)
                if found:
                    break
            if found is None:
                missing.append(f"{region}/{itype}")
            else:
                ec2.setdefault(region, {})[itype] = found
    new = PriceTable(
        source="AWS Pricing API GetProducts (on-demand, Linux, shared tenancy)",
        as_of=today,
        ec2=ec2,
        fargate=table.fargate,
    )
    return new, missing


@dataclass
class Estimate:
    instances: int
    usd: float | None  #: None when a price is unknown (then the guard cannot vouch for the cost)
    unknown: list[str]
    hours_each: float


def estimate(
    table: PriceTable,
    region: str,
    types: list[tuple[str, int]],
    duration_minutes: float,
    overhead_minutes: float = 8.0,
    override: dict[str, float] | None = None,
) -> Estimate:
    """instances × (duration + boot/teardown overhead) × price (``override``: $/h per type that
    wins over the table, e.g. current spot prices)."""
    hours = max(duration_minutes + overhead_minutes, MIN_BILLED_S / 60) / 60
    total, unknown, n = 0.0, [], 0
    for itype, count in types:
        n += count
        price = (override or {}).get(itype, table.ec2_hourly(region, itype))
        if price is None:
            unknown.append(itype)
        else:
            total += price * count * hours
    return Estimate(n, None if unknown else round(total, 4), unknown, hours)
