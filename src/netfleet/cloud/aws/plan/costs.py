"""The cost guard: what a campaign's machines will cost before launch, refusing above the limits
unless told, and what they did cost after (``netfleet cloud plan/up``, ``netfleet plan/run``)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netfleet.cloud.aws.campaign import CloudSpec
from netfleet.cloud.aws.plan import billing, prices
from netfleet.cloud.aws.plan.catalogue import InstanceInfo
from netfleet.errors import EnvironmentProblem, InputError
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
    lines: list[billing.Line] = field(default_factory=list)  #: IPv4, EBS, transfer …
    #: ``netfleet run``: the waves and stop bounds the run follows (a runwaves.RunWaves)
    waves: Any = None


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
    from netfleet.cloud.aws.measure import spot

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


def catalogue_of(cs: CloudSpec) -> tuple[dict[str, InstanceInfo] | None, str | None]:
    """The fleet types' DescribeInstanceTypes figures (vCPUs, advertised Gbit/s) for the plan's
    peak vCPUs and transfer lines; or a note why not."""
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, ClientError

    from netfleet import aws
    from netfleet.cloud.aws.plan import catalogue

    quick = Config(connect_timeout=5, read_timeout=10, retries={"max_attempts": 2})
    types = sorted({f.instance_type for f in cs.fleets})
    try:
        found = catalogue.describe(aws.client("ec2", cs.region, config=quick), types)
    except (BotoCoreError, ClientError, EnvironmentProblem) as exc:
        return None, f"transfer and vCPUs not estimated: no instance type data ({exc})"
    unknown = [t for t in types if t not in found]
    if unknown:
        return found, (
            f"not in the catalogue (DescribeInstanceTypes in {cs.region}): "
            f"{', '.join(unknown)} — no vCPUs, bound or transfer for "
            f"{'it' if len(unknown) == 1 else 'them'}; the other {len(found)} types are planned "
            "from their figures (a launch refuses a type EC2 does not know)"
        )
    return found, None


def price_unknown(
    cs: CloudSpec, table: prices.PriceTable, state_root: Path | None
) -> tuple[prices.PriceTable, str | None]:
    """Ask the Price List API for the fleet types the table lacks and cache what it found
    (dated) in ``state_root``; a note when the API could not answer."""
    wanted = [(cs.region_of(f), f.instance_type) for f in cs.fleets]
    new, left, why = prices.price_missing(table, wanted, dt.date.today())
    if new is not table and state_root is not None:
        prices.save(new, state_root)
    if why:
        return new, f"no price for {', '.join(left)} in the table; {why}"
    return new, None


def priced_plan(cs: CloudSpec, state_root: Path | None, minutes: float | None = None) -> Priced:
    """:func:`plan` with what can be looked up before launch: current spot prices, the Price
    List API for types the table lacks (cached in ``state_root``), the types' advertised peaks
    for the transfer lines; each look-up that failed says so in a note."""
    spot, why = spot_prices(cs)
    table, unpriced = price_unknown(cs, prices.load(state_root), state_root)
    infos, no_infos = catalogue_of(cs)
    gbps = (
        None
        if infos is None
        else {t: i.peak_gbps or i.baseline_gbps or 0.0 for t, i in infos.items()}
    )
    priced = plan(cs, table, minutes, spot, gbps)
    if infos is not None:
        vcpus = sum(
            infos[f.instance_type].vcpus * f.count for f in cs.fleets if f.instance_type in infos
        )
        priced.table.notes.insert(
            1,
            f"peak: {priced.estimate.instances} instances, {vcpus} vCPUs at once "
            "(acquired together)",
        )
    priced.table.notes += [n for n in (why, unpriced, no_infos) if n]
    return priced


def plan(
    cs: CloudSpec,
    table: prices.PriceTable,
    minutes: float | None = None,
    spot: Spot | None = None,
    gbps: Mapping[str, float] | None = None,
) -> Priced:
    """Instance count and ``instances × (minutes + overhead) × $/h``, each at its own region's
    price (spot prices where known), plus what else the bill counts (:mod:`billing`: a public
    IPv4 address and a root volume per instance, and the transfer the runs may move at the
    types' advertised peaks ``gbps``). With two or more regions the table gains a region
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
    hours_each = parts[0].hours_each
    lines = bill_lines(cs, table, hours_each, minutes, gbps)
    unknown += [line.item for line in lines if line.usd is None]
    subtotal = round(sum(p.subtotal or 0.0 for p in parts) + sum(x.usd or 0.0 for x in lines), 4)
    total = None if unknown else subtotal
    est = prices.Estimate(
        sum(p.instances for p in parts),
        total,
        unknown,
        hours_each,
        cs.expires_after_minutes,
        subtotal=subtotal,
    )
    rows = []
    for (itype, role, region), n in counts.items():
        p = hourly(table, region, itype, spot)
        usd_ = None if p is None else round(p * n * est.hours_each, 4)
        rows.append([itype, *([region] if several else []), role, n, p, usd_])
    for line in lines:
        usd_ = None if line.usd is None else round(line.usd, 4)
        rows.append([line.item, *([line.region] if several else []), "bill", None, None, usd_])
    per_region = ", ".join(
        f"{region} ({part.instances})" for region, part in zip(cs.regions, parts, strict=True)
    )
    notes = [
        f"{est.instances} instances in {per_region if several else cs.region}, "
        f"{est.hours_each * 60:.0f} min each "
        f"({minutes:.1f} min of runs + {OVERHEAD_MINUTES:g} min boot/teardown overhead)"
        + (", each at its region's price" if several else "")
        + f"; {est.instances * est.hours_each:.2f} instance-hours",
        estimate_note(est.usd, est.subtotal, est.unknown),
        *(line.text() for line in lines),
        *price_sources(table, {(cs.region_of(f), f.instance_type) for f in cs.fleets}),
    ]
    notes += market_notes(cs, table, spot)
    notes.append(
        f"dead-man switch: the instances power off after {cs.expires_after_minutes:g} min "
        f"(expires_after_minutes); this plan holds them {hours_each * 60:.0f} min"
        + (
            ""
            if hours_each * 60 <= cs.expires_after_minutes
            else f": too short, the guard refuses (needs ≥ {switch_minutes(hours_each * 60):.0f})"
        )
    )
    notes.append(
        "limits: --max-cost bounds this estimate and --max-instances the count; --yes only "
        "skips the confirmation, never a limit"
    )
    tab = Tabular(
        ["instance_type", *(["region"] if several else []), "role", "count", "usd_per_hour", "usd"],
        rows,
        title=f"cloud plan {cs.campaign} ({cs.market})",
        notes=notes,
        decimals=4,
    )
    return Priced(tab, est, spot, lines)


def estimate_note(total: float | None, subtotal: float | None, unknown: list[str]) -> str:
    """The plan's "estimated cost" line: the total, or — a price unknown — the priced subtotal,
    what it leaves out, and how to give the missing price (``--max-cost`` refuses until then)."""
    if total is not None:
        return f"estimated cost: {usd(total)} USD"
    part = "" if subtotal is None else f"priced subtotal {usd(subtotal)} USD without "
    return (
        f"estimated cost: unknown — {part}{', '.join(unknown)} (no price); give one with "
        "`netfleet cloud prices refresh --instance-type TYPE` (online) or in the state "
        "directory's prices.json: --max-cost refuses until then"
    )


def market_notes(cs: CloudSpec, table: prices.PriceTable, spot: Spot | None) -> list[str]:
    """Which prices are current spot prices (a spot campaign), and a stale table's warning."""
    notes = []
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
    return notes


def bill_lines(
    cs: CloudSpec,
    table: prices.PriceTable,
    hours_each: float,
    minutes: float,
    gbps: Mapping[str, float] | None,
) -> list[billing.Line]:
    """Per region: a public IPv4 address and a root volume per instance for its hours; the
    transfer of each sending fleet to the first other fleet (a server fleet first) when the
    types' peaks are known, free lines left out."""
    lines: list[billing.Line] = []
    for region in cs.regions:
        n = sum(f.count for f in cs.fleets if cs.region_of(f) == region)
        lines.append(billing.ipv4(table, region, n * hours_each))
        lines.append(billing.ebs(table, region, n * hours_each))
    if gbps is None:
        return lines
    pairs: list[billing.Pair] = []
    for f in cs.fleets:
        if f.role == "server":
            continue
        others = sorted((g for g in cs.fleets if g is not f), key=lambda g: g.role != "server")
        dst = others[0] if others else f
        pair = (f.instance_type, cs.region_of(f), zone_of(cs, f),
                dst.instance_type, cs.region_of(dst), zone_of(cs, dst))  # fmt: skip
        pairs += [pair] * f.count
    # hosts meet at public addresses with path public, and with auto across regions (no peering)
    public = cs.path == "public" or (cs.path == "auto" and len(cs.regions) > 1)
    path = "public" if public else cs.path
    flows = billing.plan_flows(cs.placement, path, pairs, gbps, minutes * 60)
    lines += [billing.transfer(table, fl) for fl in flows if billing.TRANSFER[fl.kind][0]]
    return lines


def zone_of(cs: CloudSpec, fleet: Any) -> str | None:
    """The zone a fleet is known to launch in before launch (its own, else the block's in the
    block's region); None: chosen at launch (the first zone offering its type)."""
    if fleet.availability_zone:
        return str(fleet.availability_zone)
    if cs.availability_zone and cs.region_of(fleet) == cs.region:
        return str(cs.availability_zone)
    return None


def price_sources(table: prices.PriceTable, used: set[tuple[str, str]]) -> list[str]:
    """One note per source the plan's prices came from, with its date and the types it priced
    (their count when there are many)."""
    by: dict[str, list[str]] = {}
    for region, itype in sorted(used):
        if table.ec2_hourly(region, itype) is not None:
            by.setdefault(str(table.ec2_source_of(region, itype)), []).append(itype)
    return [
        f"prices of {', '.join(types) if len(types) <= 6 else f'{len(types)} types'}: {src}"
        for src, types in by.items()
    ]


#: the dead-man switch's margin past the plan's expected end: this share, at least SWITCH_MIN
SWITCH_MARGIN = 0.25
SWITCH_MIN = 30.0


def switch_minutes(held_minutes: float) -> float:
    """The dead-man switch a plan of ``held_minutes`` needs: its end plus a margin."""
    return held_minutes + max(SWITCH_MIN, held_minutes * SWITCH_MARGIN)


#: where a missing price comes from (named by a refusal for an unknown price)
PRICE_SOURCE = (
    "`netfleet cloud prices refresh --instance-type TYPE` online (AWS Price List API), or "
    "the table in the state directory"
)


def guard(est: prices.Estimate, max_cost: float, max_instances: int, yes: bool = False) -> None:
    """Refuse above --max-cost / --max-instances, or when a price is unknown (the cost cannot
    be bounded): the neutral :func:`netfleet.cloud.guard.limits` every cloud's launch passes,
    plus (``cloud up``) a plan longer than the instances' dead-man switch. ``yes`` confirms the
    launch; it never lifts a limit (issue 25.6)."""
    from netfleet.cloud import guard as cloud_guard
    from netfleet.cloud.seam import Price

    del yes  # the confirmation is asked elsewhere; the spending limit holds either way
    held_min = est.hours_each * 60
    fits = est.instances <= max_instances  # the count is named first
    if fits and est.expires_minutes is not None and held_min > est.expires_minutes:
        raise InputError(
            f"the plan holds instances {held_min:.0f} min, but they power themselves off after "
            f"expires_after_minutes {est.expires_minutes:g}: the runs would be cut short",
            hint=f"set `expires_after_minutes: {switch_minutes(held_min):.0f}` in the cloud "
            "block (the plan's end plus a margin), or shorten the plan",
        )
    price = Price(est.usd, PRICE_SOURCE, tuple(est.unknown), est.subtotal)
    cloud_guard.limits(price, est.instances, max_cost=max_cost, max_instances=max_instances)


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


def held_lines(
    table: prices.PriceTable, held: list[Held], flows: list[billing.Flow] | None = None
) -> list[billing.Line]:
    """After release: a public IPv4 address and a root volume for each instance's billed
    hours (per region), and the transfer the engines measured."""
    hours: dict[str, float] = {}
    for region, _, seconds in held:
        hours[region] = hours.get(region, 0.0) + max(seconds, prices.MIN_BILLED_S) / 3600
    lines = []
    for region, h in hours.items():
        lines += [billing.ipv4(table, region, h), billing.ebs(table, region, h)]
    return lines + [billing.transfer(table, f) for f in flows or []]


def cost_line(
    table: prices.PriceTable,
    market: str,
    held: list[Held],
    estimate_usd: float | None,
    spot: Spot | None = None,
    flows: list[billing.Flow] | None = None,
) -> str:
    """What the session's instances were held for and what that costs, with the other lines
    of the bill (IPv4, EBS, measured transfer) and the estimate made before launch."""
    total, hours, unknown = billed(table, held, spot)
    secs = sum(s for _, _, s in held)
    what = (
        "unknown (no price for " + ", ".join(sorted(set(unknown))) + ")"
        if total is None
        else usd(total) + " USD"
    )
    lines = held_lines(table, held, flows) if held else []
    extra = billing.total(lines)
    grand = None if total is None or extra is None else total + extra
    bill = "".join(f"; {line.text()}" for line in lines)
    if lines:
        bill += "; total " + ("unknown" if grand is None else usd(grand) + " USD")
    est = "" if estimate_usd is None else f"; estimated before launch: {usd(estimate_usd)}"
    types = {t for _, t, _ in held}
    spotted = sorted({t for r, t, _ in held if t in (spot or {}).get(r, {})})
    regions = sorted({r for r, _, _ in held})
    where = f" in {', '.join(regions)} (each at its region's price)" if len(regions) > 1 else ""
    source = "; ".join(price_sources(table, {(r, t) for r, t, _ in held})) or (
        f"{table.source}, as of {table.as_of}"
    )
    if spotted:
        source = f"current spot price (DescribeSpotPriceHistory) for {', '.join(spotted)}" + (
            "; the rest: " + source if len(spotted) < len(types) else ""
        )
    return (
        f"cost: {len(held)} instances ({market}) held {secs / 60:.1f} min in all{where}, "
        f"{hours:.3f} instance-hours billed (per second, {prices.MIN_BILLED_S:g} s minimum) "
        f"= {what}{bill}{est}; {source}"
    )
