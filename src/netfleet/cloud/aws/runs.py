"""``netfleet run`` / ``plan`` on a campaign with a ``cloud:`` block: the cost guard before,
the cheat sheet with measured ÷ advertised and the cost line after.

The machines themselves are acquired and released by the host lifecycle
(:class:`netfleet.cloud.aws.provider.AwsProvider`, host kind ``aws``); this module only prices and
summarises.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from pathlib import Path

from netfleet.cloud.aws.acquire import fargate
from netfleet.cloud.aws.campaign import CloudSpec
from netfleet.cloud.aws.plan import billing, costs, prices, quotas, safety
from netfleet.cloud.aws.plan.prices import Estimate
from netfleet.cloud.journal import default_root
from netfleet.errors import InputError
from netfleet.plan.matrix import PlannedRun
from netfleet.spec.cloud import AwsHostSpec, TierSpec
from netfleet.spec.models import CampaignSpec
from netfleet.store.envelope import Envelope
from netfleet.tabular import Tabular


def cloud_spec(spec: CampaignSpec) -> CloudSpec | None:
    """The launch plan of a campaign's EC2 instances (None: it has no aws hosts)."""
    hosts = [h for h in spec.hosts.values() if isinstance(h, AwsHostSpec)]
    if not hosts or hosts[0].cloud is None:
        return None
    ec2 = [h for h in hosts if h.fargate is None]
    if not ec2:
        raise InputError(
            f"campaign {spec.campaign!r}: Fargate tiers need an EC2 client in the same VPC and "
            "security group",
            hint="add a fleet to the cloud block, e.g. "
            "{name: client, instance_type: c5.large, role: client}",
        )
    cs = CloudSpec.of_hosts(hosts[0].cloud, ec2)
    if len(ec2) < len(hosts):
        fargate.require_client_in(cs)
    return cs


def confirm_campaign(
    spec: CampaignSpec,
    est: Estimate,
    *,
    yes: bool,
    ask: Callable[[str], bool] | None,
    say: Callable[[str], None],
    switch_minutes: float | None = None,
) -> None:
    """:func:`safety.check_campaign`, then :func:`safety.confirm` for a campaign spec's
    instances and tasks (``netfleet run``, before the provider is asked for anything), naming
    the dead-man switch the run follows (``switch_minutes``: the plan's)."""
    safety.check_campaign(spec)
    cs = cloud_spec(spec)
    if cs is not None:
        tasks = len(fargate_tiers(spec))
        safety.confirm(
            cs, est, yes=yes, ask=ask, say=say, fargate_tasks=tasks, switch_minutes=switch_minutes
        )


def follow(spec: CampaignSpec, priced: costs.Priced) -> None:
    """``netfleet run``: the aws cloud's ``price`` and ``quota`` — which
    :func:`netfleet.cloud.guard.campaign` holds every cloud's launch to — answer for the plan
    this run follows (``priced``: its waves, spot, Fargate tasks, the bill's other lines)."""
    from netfleet.cloud.aws.provider import AwsProvider
    from netfleet.hosts.registry import get_provider

    provider = get_provider("aws")
    if isinstance(provider, AwsProvider):
        names = [n for n, h in spec.hosts.items() if isinstance(h, AwsHostSpec)]
        provider.cloud.follow(names, priced)


def fargate_tiers(spec: CampaignSpec) -> list[TierSpec]:
    """The campaign's Fargate tasks (one per tier)."""
    return [h.fargate for h in spec.hosts.values() if isinstance(h, AwsHostSpec) and h.fargate]


def plan_cost(
    spec: CampaignSpec,
    estimated_seconds: float,
    state_root: Path | None = None,
    *,
    runs: Sequence[PlannedRun] | None = None,
    max_instances: int | None = None,
    max_cost: float | None = None,
    concurrency: int | None = None,
) -> costs.Priced | None:
    """The cost table for the campaign's instances, run time = the cloud block's
    ``duration_minutes`` or else the plan's estimate. With ``runs``: the waves and stop bounds
    the run follows, priced as run (:mod:`netfleet.cloud.aws.plan.runwaves`; ``Priced.waves``). None
    for a campaign without aws hosts."""
    cs = cloud_spec(spec)
    if cs is None:
        return None
    minutes = cs.duration_minutes or estimated_seconds / 60
    root = state_root or default_root()
    if runs is not None:
        from netfleet.cloud.aws.plan import runwaves

        priced = runwaves.priced_run(
            spec, cs, runs, root,
            max_instances=max_instances, max_cost=max_cost, concurrency=concurrency,
        )  # fmt: skip
        minutes = priced.waves.plan.wall_s / 60  # the tasks are held throughout
    else:
        priced = costs.priced_plan(cs, root, minutes)
    table = prices.load(root)
    tiers = fargate_tiers(spec)
    if tiers:
        priced = _with_fargate(priced, table, cs.region, tiers, minutes)
        found = quotas.check_fargate(cs.region, sum(t.cpu for t in tiers) / 1024)
        priced.table.notes += [f"note: {n}" for n in found.notes]
        if found.over and priced.waves is not None:  # the run's guard refuses it (exit 4)
            over = [f"Fargate tasks: {o}" for o in found.over]
            priced.waves.plan.unfit.extend(over)
            priced.waves.plan.blocked.extend(over)
    return priced


def _with_fargate(
    priced: costs.Priced,
    table: prices.PriceTable,
    region: str,
    tiers: list[TierSpec],
    minutes: float,
) -> costs.Priced:
    """The plan plus one row per Fargate task; the estimate covers both (``instances`` stays
    the EC2 count that ``--max-instances`` limits; tasks are bounded by ``--max-cost``)."""
    est = fargate.estimate(table, region, tiers, minutes)
    rows = []
    for t in tiers:
        p = fargate.hourly(table, region, t)
        usd = None if p is None else round(p * est.hours_each, 4)
        where = [region] if "region" in priced.table.columns else []
        rows.append([f"fargate-{t.cpu}-{t.memory}", *where, "server", 1, p, usd])
    ec2 = priced.estimate
    total = None if ec2.usd is None or est.usd is None else round(ec2.usd + est.usd, 4)
    subtotal = round((ec2.subtotal or 0.0) + (est.subtotal or 0.0), 4)
    both = prices.Estimate(
        ec2.instances, total, [*ec2.unknown, *est.unknown], ec2.hours_each, subtotal=subtotal
    )
    fg_usd = "unknown" if est.usd is None else costs.usd(est.usd) + " USD"
    notes = [
        f"{len(tiers)} Fargate tasks in {region}, {est.hours_each * 60:.0f} min each "
        f"({minutes:.1f} min of runs + 3 min start/stop overhead) at "
        f"{fargate.rates(table, region)}: {fg_usd}",
        costs.estimate_note(total, subtotal, both.unknown).replace(
            "estimated cost:", "estimated cost (instances + tasks):", 1
        ),
    ]
    ec2_notes = ["EC2 " + n if n.startswith("estimated cost: ") else n for n in priced.table.notes]
    tab = Tabular(
        priced.table.columns,
        [*priced.table.rows, *rows],
        title=priced.table.title,
        notes=[*ec2_notes, *notes],
        decimals=priced.table.decimals,
    )
    return costs.Priced(tab, both, priced.spot, priced.lines, priced.waves)


def summary(
    spec: CampaignSpec,
    results: str,
    priced: costs.Priced | None,
    since: str,
    catalog: Path | None = None,
    envelopes: Sequence[Envelope] = (),
) -> tuple[Tabular, str]:
    """After the run: ingest the results, the cheat sheet of this session's runs (those that
    started at or after ``since``, the first one's ISO ``started_at``) by instance type and
    direction with measured ÷ advertised, and the cost line of what this session held."""
    from netfleet.catalog import ingest
    from netfleet.cloud.aws.provider import AwsProvider
    from netfleet.hosts.registry import get_provider
    from netfleet.report.cheatsheet import cheatsheet, with_advertised
    from netfleet.store import open_root

    cs = cloud_spec(spec)
    assert cs is not None
    catalog = catalog or default_root() / cs.campaign / "catalog"
    ingest(open_root(results), catalog)
    start = dt.datetime.fromisoformat(since.replace("Z", "+00:00")).astimezone(dt.UTC)
    tab = cheatsheet(
        catalog,
        group_by=group_keys(cs),
        campaign=spec.campaign,
        where=f"started_at >= TIMESTAMP '{start:%Y-%m-%d %H:%M:%S.%f}'",  # this session's runs
    )
    provider = get_provider("aws")
    held: list[costs.Held] = []
    tasks: list[tuple[TierSpec, float]] = []
    if isinstance(provider, AwsProvider):
        aws = provider.cloud
        types = {str(r.get("instance_type")) for r in tab.records()}
        if types & set(aws.advertised):  # else: the columns would be empty (Fargate)
            tab = with_advertised(tab, "instance_type", aws.advertised, scale=aws.rate_scale)
        held = [(bill.region, t, s) for bill in aws.bills for t, s in bill.held_s]
        tasks = [x for bill in aws.bills for x in bill.tasks_held_s]
    tiers = fargate_tiers(spec)
    table = prices.load(default_root())
    spot = None if priced is None else priced.spot
    flows, unmeasured = billing.measured_flows(envelopes, cs.placement, cs.path)
    line = costs.cost_line(
        table,
        cs.market,
        held,
        None if priced is None or tiers else priced.estimate.usd,
        spot,
        flows,
    )
    if unmeasured:
        line += f"; transfer of {unmeasured} run(s) not counted (their engine reports no bytes)"
    if tiers:
        tab.notes.append(
            "fargate-<cpu>-<memory>: AWS advertises no bandwidth for Fargate tiers (no adv_*); "
            "the sim shapes each tier like seed 000's measurement (its labels "
            "advertised_out_mbps / advertised_in_mbps, at AWS scale)"
        )
        line += "\n" + fargate.cost_line(table, cs.region, tasks, None)
        ec2_usd = costs.billed(table, held, spot)[0]
        task_usd = fargate.billed(table, cs.region, tasks)[0]
        total = None if ec2_usd is None or task_usd is None else ec2_usd + task_usd
        line += "\ntotal (instances + tasks): " + (
            "unknown (a price is missing)" if total is None else costs.usd(total) + " USD"
        )
        if priced is not None and priced.estimate.usd is not None:
            line += f"; estimated before launch: {costs.usd(priced.estimate.usd)}"
    return tab, line


def group_keys(cs: CloudSpec) -> tuple[str, ...]:
    """The cheat sheet's groups: instance type and direction, plus the hosts' ``region`` label
    when the campaign spans several regions and ``availability_zone`` when it spreads over
    zones (cross-az, or fleets naming their zone)."""
    keys = ["instance_type"]
    if len(cs.regions) > 1:
        keys.append("region")
    if cs.placement == "cross-az" or any(f.availability_zone for f in cs.fleets):
        keys.append("availability_zone")
    return (*keys, "direction")
