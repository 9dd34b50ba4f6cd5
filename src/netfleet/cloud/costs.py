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


@dataclass
class Priced:
    """The plan's table and its estimate."""

    table: Tabular
    estimate: prices.Estimate
    spot: dict[str, float] | None  #: current spot $/h per type (None: on-demand or unknown)


def spot_prices(cs: CloudSpec) -> tuple[dict[str, float] | None, str | None]:
    """Current spot prices for a spot campaign (DescribeSpotPriceHistory), or a note why not."""
    if cs.market != "spot":
        return None, None
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, ClientError

    from netfleet import aws
    from netfleet.cloud import spot

    quick = Config(connect_timeout=5, read_timeout=10, retries={"max_attempts": 2})
    try:
        ec2 = aws.client("ec2", cs.region, config=quick)  # a plan must not hang offline
        found = spot.current_prices(
            ec2, cs.availability_zone, sorted({f.instance_type for f in cs.fleets})
        )
    except (BotoCoreError, ClientError) as exc:
        return None, f"spot: no current price ({exc}); on-demand prices used (an upper bound)"
    return found, None


def plan(
    cs: CloudSpec,
    table: prices.PriceTable,
    minutes: float | None = None,
    spot: dict[str, float] | None = None,
) -> Priced:
    """Instance count and ``instances × (minutes + overhead) × $/h``, spot prices where known."""
    minutes = minutes if minutes is not None else cs.minutes
    counts: dict[tuple[str, str], int] = {}
    for f in cs.fleets:
        counts[(f.instance_type, f.role)] = counts.get((f.instance_type, f.role), 0) + f.count
    est = prices.estimate(
        table,
        cs.region,
        [(t, n) for (t, _), n in counts.items()],
        minutes,
        OVERHEAD_MINUTES,
        override=spot,
    )
    rows = []
    for (itype, role), n in counts.items():
        p = (spot or {}).get(itype, table.ec2_hourly(cs.region, itype))
        rows.append([itype, role, n, p, None if p is None else round(p * n * est.hours_each, 4)])
    notes = [
        f"{est.instances} instances in {cs.region}, {est.hours_each * 60:.0f} min each "
        f"({minutes:.1f} min of runs + {OVERHEAD_MINUTES:g} min boot/teardown overhead)",
        "estimated cost: "
        + (
            "unknown (no price for " + ", ".join(est.unknown) + ")"
            if est.usd is None
            else usd(est.usd) + " USD"
        ),
        f"prices: {table.source}, as of {table.as_of}",
    ]
    if cs.market == "spot":
        priced = sorted(spot or {})
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
        ["instance_type", "role", "count", "usd_per_hour", "usd"],
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
    table: prices.PriceTable,
    region: str,
    held: list[tuple[str, float]],
    spot: dict[str, float] | None = None,
) -> tuple[float | None, float, list[str]]:
    """What instances held ``held`` (type, seconds) cost: per-second billing with the 60 s
    minimum. Returns (USD or None if a price is unknown, billed hours, unknown types)."""
    usd, hours, unknown = 0.0, 0.0, []
    for itype, seconds in held:
        h = max(seconds, prices.MIN_BILLED_S) / 3600
        hours += h
        p = (spot or {}).get(itype, table.ec2_hourly(region, itype))
        if p is None:
            unknown.append(itype)
        else:
            usd += p * h
    return (None if unknown else usd), hours, unknown


def usd(amount: float) -> str:
    return f"${amount:.2f}" if amount >= 0.01 or amount == 0 else f"${amount:.6f}"


def cost_line(
    table: prices.PriceTable,
    region: str,
    market: str,
    held: list[tuple[str, float]],
    estimate_usd: float | None,
    spot: dict[str, float] | None = None,
) -> str:
    """One line: what the session's instances were held for and what that costs."""
    total, hours, unknown = billed(table, region, held, spot)
    secs = sum(s for _, s in held)
    what = (
        "unknown (no price for " + ", ".join(sorted(set(unknown))) + ")"
        if total is None
        else usd(total) + " USD"
    )
    est = "" if estimate_usd is None else f"; estimated before launch: {usd(estimate_usd)}"
    spotted = sorted({t for t, _ in held} & set(spot or {}))
    source = f"{table.source}, as of {table.as_of}"
    if spotted:
        source = f"current spot price (DescribeSpotPriceHistory) for {', '.join(spotted)}" + (
            "; the rest: " + source if len(spotted) < len({t for t, _ in held}) else ""
        )
    return (
        f"cost: {len(held)} instances ({market}) held {secs / 60:.1f} min in all, "
        f"{hours:.3f} instance-hours billed (per second, {prices.MIN_BILLED_S:g} s minimum) "
        f"= {what}{est}; prices: {source}"
    )
