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
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

# the table's format lives at base rank (netfleet.pricetable): the report reads it too
from netfleet import pricetable
from netfleet.cloud.aws.plan import pricelist
from netfleet.errors import EnvironmentProblem
from netfleet.pricetable import STALE_AFTER_DAYS, PriceTable, Source, stale_warning

__all__ = [
    "MIN_BILLED_S", "SHIPPED", "STALE_AFTER_DAYS", "Estimate", "PriceTable", "estimate", "load",
    "price_missing", "refresh", "refresh_ec2", "save", "stale_warning",
]  # fmt: skip

#: the EC2/Fargate price table netfleet ships (dated, each price with its source)
SHIPPED = Path(__file__).resolve().parents[1] / "data" / "prices.json"


def load(state_root: Path | None = None) -> PriceTable:
    """The table in use: a refreshed copy in ``state_root`` (``netfleet cloud prices
    refresh``), else the shipped one."""
    return pricetable.load(state_root, SHIPPED)


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


def refresh(
    pricing: Any, table: PriceTable, regions: list[str], types: list[str], today: dt.date
) -> tuple[PriceTable, list[str]]:
    """Ask ``pricing:GetProducts`` for each (region, type) — any type, not only those the table
    has — and for Fargate in each region; returns the new table (each price found tagged with
    today's Price List source, the rest keeping theirs) and what was not found (kept at its old
    price, if any)."""
    new, missing = refresh_ec2(pricing, table, [(r, t) for r in regions for t in types], today)
    fargate, fargate_source = dict(new.fargate), dict(new.fargate_source)
    key = f"getproducts-{today.isoformat()}"
    for region in regions:
        vcpu, gb = pricelist.fargate_hourly(pricing, region)
        if vcpu and gb:
            fargate[region] = {"vcpu_hour": vcpu.usd, "gb_hour": gb.usd}
            fargate_source[region] = key
        else:
            missing.append(f"{region}/fargate")
    new = replace(
        new,
        source=pricelist.SOURCE,
        as_of=today,
        fargate=fargate,
        fargate_source=fargate_source,
    )
    return new, missing


def price_missing(
    table: PriceTable, wanted: list[tuple[str, str]], today: dt.date
) -> tuple[PriceTable, list[str], str | None]:
    """Price the (region, type) pairs the table lacks through GetProducts (a short timeout: a
    plan must not hang offline). Returns the table (with what was found), the pairs still
    unpriced and a note why the API was not asked or did not answer (None when it did)."""
    todo = sorted({(r, t) for r, t in wanted if table.ec2_hourly(r, t) is None})
    if not todo:
        return table, [], None
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, ClientError

    from netfleet import aws

    quick = Config(connect_timeout=5, read_timeout=10, retries={"max_attempts": 2})
    try:
        pricing = aws.client("pricing", pricelist.PRICING_REGION, config=quick)
        new, _ = refresh_ec2(pricing, table, todo, today)
    except (BotoCoreError, ClientError, EnvironmentProblem) as exc:
        why = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
        return table, [f"{t} in {r}" for r, t in todo], f"Price List API not asked ({why})"
    left = [f"{t} in {r}" for r, t in todo if new.ec2_hourly(r, t) is None]
    return new, left, None


def refresh_ec2(
    pricing: Any, table: PriceTable, pairs: list[tuple[str, str]], today: dt.date
) -> tuple[PriceTable, list[str]]:
    """:func:`refresh` for just these (region, type) pairs (no Fargate)."""
    table = _named(table)
    ec2 = {r: dict(v) for r, v in table.ec2.items()}
    ec2_source = {r: dict(v) for r, v in table.ec2_source.items()}
    key = f"getproducts-{today.isoformat()}"
    missing = []
    for region, itype in pairs:
        try:
            found = pricelist.ec2_hourly(pricing, region, itype)
        except pricelist.Ambiguous as exc:
            missing.append(f"{region}/{itype} ({exc})")
            continue
        if found is None:
            missing.append(f"{region}/{itype}")
            continue
        ec2.setdefault(region, {})[itype] = found.usd
        ec2_source.setdefault(region, {})[itype] = key
    sources = {**table.sources, key: Source(pricelist.SOURCE, today)}
    return replace(table, ec2=ec2, ec2_source=ec2_source, sources=sources), missing


def _named(table: PriceTable) -> PriceTable:
    """The table with every price naming its source (the table's own where none was named),
    so that a refresh that replaces the table's source keeps the old prices' provenance."""
    old = "table-" + table.as_of.isoformat()
    sources = {old: Source(table.source, table.as_of), **table.sources}
    ec2_source = {
        r: {t: table.ec2_source.get(r, {}).get(t, old) for t in types}
        for r, types in table.ec2.items()
    }
    fargate_source = {r: table.fargate_source.get(r, old) for r in table.fargate}
    other_source = {r: table.other_source.get(r, old) for r in table.other}
    return replace(
        table,
        sources=sources,
        ec2_source=ec2_source,
        fargate_source=fargate_source,
        other_source=other_source,
    )


@dataclass
class Estimate:
    instances: int
    usd: float | None  #: None when a price is unknown (then the guard cannot vouch for the cost)
    unknown: list[str]
    hours_each: float
    #: the instances' dead-man switch (``expires_after_minutes``); None: not an EC2 plan
    expires_minutes: float | None = None
    #: what the priced part costs when ``usd`` is None (a price is unknown); else ``usd``
    subtotal: float | None = None


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
    return Estimate(
        n, None if unknown else round(total, 4), unknown, hours, subtotal=round(total, 4)
    )
