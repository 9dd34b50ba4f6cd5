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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netfleet.errors import InputError

SHIPPED = Path(__file__).parent / "data" / "prices.json"
STALE_AFTER_DAYS = 90
#: EC2 bills Linux per second with a 60-second minimum
MIN_BILLED_S = 60.0


@dataclass
class PriceTable:
    source: str
    as_of: dt.date
    ec2: dict[str, dict[str, float]]  #: region → type → USD per hour
    fargate: dict[str, dict[str, float]]  #: region → {vcpu_hour, gb_hour}
    path: Path = field(default=SHIPPED)

    def ec2_hourly(self, region: str, instance_type: str) -> float | None:
        return self.ec2.get(region, {}).get(instance_type)

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "as_of": self.as_of.isoformat(),
            "currency": "USD",
            "ec2_on_demand_per_hour": self.ec2,
            "fargate": self.fargate,
        }


def _parse(doc: dict[str, Any], path: Path) -> PriceTable:
    try:
        return PriceTable(
            source=str(doc["source"]),
            as_of=dt.date.fromisoformat(doc["as_of"]),
            ec2={
                r: {t: float(p) for t, p in types.items()}
                for r, types in doc["ec2_on_demand_per_hour"].items()
            },
            fargate={r: {k: float(v) for k, v in f.items()} for r, f in doc["fargate"].items()},
            path=path,
        )
    except (KeyError, ValueError, TypeError, AttributeError) as exc:
        raise InputError(
            f"{path}: not a netfleet price table ({exc})",
            hint="delete it to fall back to the shipped table, or run `netfleet cloud prices "
            "refresh`",
        ) from None


def load(state_root: Path | None = None) -> PriceTable:
    local = state_root / "prices.json" if state_root else None
    path = local if local and local.exists() else SHIPPED
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: cannot read the price table ({exc})") from None
    return _parse(doc, path)


def stale_warning(table: PriceTable, today: dt.date | None = None) -> str | None:
    age = ((today or dt.date.today()) - table.as_of).days
    if age > STALE_AFTER_DAYS:
        return (
            f"prices are {age} days old (as of {table.as_of}, {table.path.name}): estimates may be "
            "off; run `netfleet cloud prices refresh` when online"
        )
    return None


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
