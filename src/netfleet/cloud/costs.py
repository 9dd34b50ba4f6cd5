"""The cost guard: what a campaign's machines will cost before launch, refusing above the limits
unless told, and what they did cost after (``netfleet cloud plan/up``, ``netfleet plan/run``)."""

from __future__ import annotations

from dataclasses import dataclass

from netfleet.cloud import prices
from netfleet.cloud.campaign import CloudSpec
from netfleet.errors import InputError
from netfleet.tabular import Tabular

#: boot + teardown minutes added to every instance's run time in the estimate
OVERHEAD_MINUTES = 8.0


#: current spot $/h: region → instance type → price
Spot = dict[str, dict[str, float]]
#: what an instance was held for: (region, instance type, seconds)
Held = tuple[str, str, float]


@dataclass
class Priced:
    """The plan's table and its estimate."""

    table: Tabular
    estimate: prices.Estimate
    spot: Spot | None  #: current spot $/h per region and type (None: on-demand or unknown)


def hourly(
    table: prices.PriceTable, region: str, itype: str, spot: Spot | None = None
) -> float | None:
    """$/h of ``itype`` in ``region``: the current spot price where known, else the table's."""
    found = (spot or {}).get(region, {}).get(itype)
    return found if found is not None else table.ec2_hourly(region, itype)


def spot_prices(cs: CloudSpec) -> tuple[Spot | None, str | None]:
    """Current spot prices in each region of a spot campaign (DescribeSpotPriceHistory), or a
    note why not."""
    if cs.market != "spot":
        return None, None
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, ClientError

    from netfleet import aws
    from netfleet.cloud import spot

    quick = Config(connect_timeout=5, read_timeout=10, retries={"max_attempts": 2})
    found: Spot = {}
    try:
        for region in cs.regions:
            ec2 = aws.client("ec2", region, config=quick)  # a plan must not hang offline
            zone = cs.availability_zone if region == cs.region else None
            types = sorted({f.instance_type for f in cs.fleets if cs.region_of(f) == region})
            found[region] = spot.current_prices(ec2, zone, types)
    except (BotoCoreError, ClientError) as exc:
        return None, f"spot: no current price ({exc}); on-demand prices used (an upper bound)"
    return found, None


def plan(
    cs: CloudSpec,
    table: prices.PriceTable,
    minutes: float | None = None,
    spot: Spot | None = None,
) -> Priced:
    """Instance count and ``instances × (minutes + overhead) × $/h``, each at its own region's
    price (spot prices where known). With two or more regions the table gains a region
    column."""
    minutes = minutes if minutes is not None else cs.minutes
    counts: dict[tuple[str, str, str], int] = {}
    for f in cs.fleets:
        key = (f.instance_type, f.role, cs.region_of(f))
        counts[key] = counts.get(key, 0) + f.count
    several = len(cs.regions) > 1
    parts = [
        prices.estimate(
            table,
            region,
            [(t, n) for (t, _, r), n in counts.items() if r == region],
            minutes,
            OVERHEAD_MINUTES,
            override=(spot or {}).get(region),
        )
        for region in cs.regions
    ]
    unknown = [
        f"{t} in {region}" if several else t
        for region, part in zip(cs.regions, parts, strict=True)
        for t in part.unknown
    ]
    total = None if unknown else round(sum(p.usd or 0.0 for p in parts), 4)
    est = prices.Estimate(sum(p.instances for p in parts), total, unknown, parts[0].hours_each)
    rows = []
    for (itype, role, region), n in counts.items():
        p = hourly(table, region, itype, spot)
        usd_ = None if p is None else round(p * n * est.hours_each, 4)
        rows.append([itype, *([region] if several else []), role, n, p, usd_])
    per_region = ", ".join(
        f"{region} ({part.instances})" for region, part in zip(cs.regions, parts, strict=True)
    )
    notes = [
        f"{est.instances} instances in {per_region if several else cs.region}, "
        f"{est.hours_each * 60:.0f} min each "
        f"({minutes:.1f} min of runs + {OVERHEAD_MINUTES:g} min boot/teardown overhead)"
        + (", each at its region's price" if several else ""),
        "estimated cost: "
        + (
            "unknown (no price for " + ", ".join(est.unknown) + ")"
            if est.usd is None
            else usd(est.usd) + " USD"
        ),
        f"prices: {table.source}, as of {table.as_of}",
    ]
    if cs.market == "spot":
        priced = sorted({t for found in (spot or {}).values() for t in found})
        notes.append(
            f"spot: current spot price for {', '.join(priced)} (DescribeSpotPriceHistory); "
            if priced
            else "spot: "
        )
        notes[-1] += "on-demand price (an upper bound) for the rest"
    warn = prices.stale_warning(table)
    if warn:
        notes.append("warning: " + warn)
    tab = Tabular(
        ["instance_type", *(["region"] if several else []), "role", "count", "usd_per_hour", "usd"],
        rows,
        title=f"cloud plan {cs.campaign} ({cs.market})",
        notes=notes,
        decimals=4,
    )
    return Priced(tab, est, spot)


def guard(est: prices.Estimate, max_cost: float, max_instances: int, yes: bool) -> None:
    """Refuse above --max-cost / --max-instances (or an unknown price) unless --yes."""
    if yes:
        return
    if est.instances > max_instances:
        raise InputError(
            f"{est.instances} instances exceed --max-instances {max_instances}",
            hint="raise --max-instances or pass --yes",
        )
    if est.usd is None:
        raise InputError(
            f"no price for {', '.join(est.unknown)}: the cost cannot be bounded",
            hint="run `netfleet cloud prices refresh` or pass --yes",
        )
    if est.usd > max_cost:
        raise InputError(
            f"estimated ${est.usd:.2f} exceeds --max-cost ${max_cost:.2f}",
            hint="raise --max-cost or pass --yes",
        )


def billed(
    table: prices.PriceTable, held: list[Held], spot: Spot | None = None
) -> tuple[float | None, float, list[str]]:
    """What instances held ``held`` (region, type, seconds) cost, each at its region's price:
    per-second billing with the 60 s minimum. Returns (USD or None if a price is unknown,
    billed hours, unknown types)."""
    usd_, hours, unknown = 0.0, 0.0, []
    several = len({region for region, _, _ in held}) > 1
    for region, itype, seconds in held:
        h = max(seconds, prices.MIN_BILLED_S) / 3600
        hours += h
        p = hourly(table, region, itype, spot)
        if p is None:
            unknown.append(f"{itype} in {region}" if several else itype)
        else:
            usd_ += p * h
    return (None if unknown else usd_), hours, unknown


def usd(amount: float) -> str:
    return f"${amount:.2f}" if amount >= 0.01 or amount == 0 else f"${amount:.6f}"


def cost_line(
    table: prices.PriceTable,
    market: str,
    held: list[Held],
    estimate_usd: float | None,
    spot: Spot | None = None,
) -> str:
    """One line: what the session's instances were held for and what that costs."""
    total, hours, unknown = billed(table, held, spot)
    secs = sum(s for _, _, s in held)
    what = (
        "unknown (no price for " + ", ".join(sorted(set(unknown))) + ")"
        if total is None
        else usd(total) + " USD"
    )
    est = "" if estimate_usd is None else f"; estimated before launch: {usd(estimate_usd)}"
    types = {t for _, t, _ in held}
    spotted = sorted({t for r, t, _ in held if t in (spot or {}).get(r, {})})
    regions = sorted({r for r, _, _ in held})
    where = f" in {', '.join(regions)} (each at its region's price)" if len(regions) > 1 else ""
    source = f"{table.source}, as of {table.as_of}"
    if spotted:
        source = f"current spot price (DescribeSpotPriceHistory) for {', '.join(spotted)}" + (
            "; the rest: " + source if len(spotted) < len(types) else ""
        )
    return (
        f"cost: {len(held)} instances ({market}) held {secs / 60:.1f} min in all{where}, "
        f"{hours:.3f} instance-hours billed (per second, {prices.MIN_BILLED_S:g} s minimum) "
        f"= {what}{est}; prices: {source}"
    )
