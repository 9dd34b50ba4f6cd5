"""The waves and stop bounds of a ``netfleet run`` on AWS (issue 25.1, 25.2): what the run
executes, priced — the plan ``netfleet plan`` and ``run`` print.

From the campaign's runs:

* **stop bounds** — each EC2 host whose runs are adaptive (``until_steady``) gets the bound of
  its type's catalogue figures (:func:`netfleet.cloud.plan.stopbound.bound`): a fixed-rate type
  stops within a steady window, a burstable one after its burst τ (+ margin) and 30 s at
  baseline, or the longest documented burst when its bucket is unknown. The runner lowers each
  adaptive run's maximum to it (:mod:`netfleet.plan.bounds`); the plan names the long types.
* **waves** — servers (``role: server``) and Fargate tasks are *shared*: acquired up front,
  held to the end. The other instances form *jobs*: hosts that measure each other (linked by
  runs) are one job. :func:`netfleet.cloud.plan.waves.plan` schedules the jobs longest first under
  the budget — the account's vCPU quotas as read (Service Quotas, minus what already runs),
  ``--max-instances``, the campaign's ``concurrency`` (jobs at once) — and prices every machine
  per second with the one-minute minimum, boot, install and release included; ``--max-cost``
  bounds the result. The runner follows the plan (:class:`netfleet.runner.waves.AcquirePlan`):
  a job's hosts are launched together when it is due and released after their last run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netfleet.cloud.aws.campaign import CloudSpec
from netfleet.cloud.aws.measure import expiry
from netfleet.cloud.aws.plan import billing, costs, prices, quotas
from netfleet.cloud.aws.plan.catalogue import InstanceInfo
from netfleet.cloud.plan import stopbound, waves
from netfleet.plan.bounds import bound_runs
from netfleet.plan.matrix import PlannedRun
from netfleet.pricetable import PriceTable
from netfleet.runner.waves import AcquirePlan, Group
from netfleet.spec.cloud import AwsHostSpec
from netfleet.spec.models import CampaignSpec
from netfleet.tabular import Tabular

#: the runtime budget's instance count (the vCPU quotas are keyed by :func:`quota_key`)
INSTANCES = "instances"
JOBS = "jobs"


@dataclass
class RunWaves:
    """The run's waves, its stop bounds, and what the runner needs to follow them."""

    plan: waves.WavePlan
    acquire: AcquirePlan
    bounds: dict[str, stopbound.Bound] = field(default_factory=dict)  #: host → its bound
    types: dict[str, str] = field(default_factory=dict)  #: host → instance type
    notes: list[str] = field(default_factory=list)
    scale: float = 1.0  #: the sim's time scale (its switch is scaled like its credits)
    #: instance types whose vCPUs are not known (no DescribeInstanceTypes data)
    vcpus_unknown: tuple[str, ...] = ()

    def vcpu_text(self) -> str:
        """The peak vCPUs, "unknown" when no type's count is known, "≥ N" when some are not."""
        p = self.plan
        total = sum(p.peak_vcpus.values())
        if self.vcpus_unknown and set(self.vcpus_unknown) >= set(self.types.values()):
            return "vCPUs unknown (no instance type data)"
        peak = ", ".join(f"{q} {v}" for q, v in sorted(p.peak_vcpus.items()) if v)
        at_least = "≥ " if self.vcpus_unknown else ""
        unknown = f"; unknown for {', '.join(self.vcpus_unknown)}" if self.vcpus_unknown else ""
        return f"{at_least}{total} vCPUs at once" + (f" ({peak}{unknown})" if peak else unknown)

    def lines(self) -> list[str]:
        """The plan's notes: waves, peak vCPUs, instance-hours, long types, the switch."""
        p = self.plan
        shared = ", ".join(sorted({m.instance_type for m in p.shared})) or "none"
        out = [
            f"waves: {len(p.slots)} jobs in {p.waves} waves (each job's instances launched "
            f"together when it is due, released after their last run); held throughout: "
            f"{shared}",
            f"peak: {p.peak_instances} instances, {self.vcpu_text()}; "
            f"wall ≈ {p.wall_s / 60:.1f} min",
        ]
        out += [f"does not fit: {u}" for u in p.unfit]
        if p.over_cost:
            out.append(f"over the limit: {p.over_cost}")
        long: dict[str, stopbound.Bound] = {}
        short = set()
        for host, b in self.bounds.items():
            if b.long:
                long.setdefault(self.types[host], b)
            else:
                short.add(self.types[host])
        if not self.bounds:
            out.append(
                "stop bounds: none — no adaptive run (until_steady): each lasts its duration"
            )
        if short:
            out.append(
                f"stop bounds: {', '.join(sorted(short))} stop within "
                f"{stopbound.STEADY_S:.0f} s (catalogue: baseline = peak, no credits)"
            )
        for t, b in sorted(long.items(), key=lambda x: -x[1].seconds):
            out.append(f"long: {t} up to {b.seconds / 60:.1f} min — {b.why}")
        switch = self.switch_minutes()
        if switch is not None:
            out.append(
                f"dead-man switch: {switch:.1f} min "
                "after launch (the plan's end plus a margin), pushed on by the controller's "
                "heartbeat while it lives"
            )
        return out + self.notes

    def switch_minutes(self) -> float | None:
        """Minutes after launch the instances power themselves off (the plan's end plus a
        margin, :mod:`netfleet.cloud.aws.measure.expiry`): what the run sets, and what its
        confirmation says."""
        if self.acquire.expected_s is None:
            return None
        return expiry.switch_s(self.acquire.expected_s, self.scale) / 60


def quota_key(code: str, region: str) -> str:
    return f"{code} in {region}"


def quota_budget(cs: CloudSpec) -> tuple[dict[str, int], list[str]]:
    """vCPUs free per quota as read from the account (quota − what already runs), and notes
    for the quotas that could not be read."""
    found = quotas.check_campaign(cs)
    free = {
        quota_key(code, region): max(0, int(quota) - running)
        for region, code, _, running, quota in found.rows
        if quota is not None
    }
    return free, found.notes


def _jobs_of(
    ec2: Mapping[str, AwsHostSpec], shared: set[str], runs: Sequence[PlannedRun]
) -> list[list[str]]:
    """Hosts linked by runs (both not shared) are one job; in first-run order."""
    parent = {h: h for h in ec2 if h not in shared}

    def find(h: str) -> str:
        while parent[h] != h:
            parent[h] = parent[parent[h]]
            h = parent[h]
        return h

    order: list[str] = []
    for r in runs:
        for h in (r.client, r.server):
            if h in parent and h not in order:
                order.append(h)
        if r.client in parent and r.server in parent:
            parent[find(r.client)] = find(r.server)
    groups: dict[str, list[str]] = {}
    for h in order:
        groups.setdefault(find(h), []).append(h)
    return list(groups.values())


def plan_run(
    spec: CampaignSpec,
    cs: CloudSpec,
    runs: Sequence[PlannedRun],
    table: PriceTable,
    infos: Mapping[str, InstanceInfo] | None,
    *,
    spot: Mapping[str, Mapping[str, float]] | None = None,
    vcpu_budget: Mapping[str, int] | None = None,
    max_instances: int | None = None,
    max_cost: float | None = None,
    concurrency: int | None = None,
) -> RunWaves:
    """The waves and bounds of ``runs`` (see the module doc)."""
    ec2 = {n: h for n, h in spec.hosts.items() if isinstance(h, AwsHostSpec) and h.fargate is None}
    region_of = {n: h.region or cs.region for n, h in ec2.items()}
    adaptive = {r.subject_host for r in runs if getattr(r.params, "until_steady", None) is not None}
    bounds: dict[str, stopbound.Bound] = {}
    for name in sorted(adaptive & set(ec2)):
        longest = next(
            (getattr(r.params, "longest_burst", None) for r in runs if r.subject_host == name),
            None,
        )
        info = None if infos is None else infos.get(ec2[name].machine)
        bounds[name] = stopbound.bound(info, longest_burst_s=longest)
    bounded = bound_runs(runs, {h: b.seconds for h, b in bounds.items()})

    def machine(name: str) -> waves.Machine:
        itype, region = ec2[name].machine, region_of[name]
        found = quotas.quota_of(itype, cs.market)
        code = None if found is None else found[0]
        price = (spot or {}).get(region, {}).get(itype)
        vcpus = 0 if infos is None or itype not in infos else infos[itype].vcpus
        return waves.Machine(
            itype,
            vcpus,
            price if price is not None else table.ec2_hourly(region, itype),
            None if code is None else quota_key(code, region),
        )

    shared = {n for n, h in ec2.items() if h.role == "server"}
    jobs_hosts = _jobs_of(ec2, shared, bounded)
    jobs = []
    for hosts in jobs_hosts:
        mine = [r for r in bounded if r.client in hosts or r.server in hosts]
        why = "; ".join(f"{h}: {bounds[h].why}" for h in hosts if h in bounds)
        jobs.append(
            waves.Job(
                "+".join(hosts),
                tuple(machine(h) for h in hosts),
                sum(r.estimated_s for r in mine),
                why=why,
            )
        )
    budget = waves.Budget(
        vcpus=dict(vcpu_budget or {}),
        instances=max_instances,
        max_cost=max_cost,
        jobs=concurrency or spec.concurrency,
    )
    idle = [n for n in ec2 if n not in shared and not any(n in j for j in jobs_hosts)]
    shared_machines = [machine(n) for n in sorted(shared) + idle]
    settings = next(h.cloud for h in ec2.values() if h.cloud is not None)
    wp = waves.plan(jobs, budget, timing(settings), shared_machines)
    notes = []
    hint = waves.wider(jobs, budget, timing(settings), shared_machines, wp)
    if hint is not None:
        n, alt = hint
        held = ", ".join(sorted({m.instance_type for m in shared_machines}))
        part = "" if wp.usd is not None else " (the priced instances)"
        notes.append(
            f"hint: the shared hosts ({held}) are {waves.shared_usd(wp) / wp.priced_usd:.0%} of "
            f"this cost{part} — held {wp.wall_s / 3600:.1f} h while {budget.jobs} job(s) run at "
            f"a time; `concurrency: {n}` (or --concurrency {n}) would hold them "
            f"{alt.wall_s / 3600:.1f} h: ${alt.priced_usd:,.2f} instead of "
            f"${wp.priced_usd:,.2f}{part} (each job's own hours stay the same)"
        )
    names = {j.name: hosts for j, hosts in zip(jobs, jobs_hosts, strict=True)}
    order = sorted(wp.slots, key=lambda s: (s.start_s, s.wave))

    def need(ms: Sequence[waves.Machine]) -> dict[str, float]:
        out: dict[str, float] = {INSTANCES: float(len(ms))}
        for m in ms:
            if m.quota is not None:
                out[m.quota] = out.get(m.quota, 0.0) + m.vcpus
        return out

    limit: dict[str, float] = {k: float(v) for k, v in budget.vcpus.items()}
    if max_instances is not None:
        limit[INSTANCES] = float(max_instances)
    limit[JOBS] = float(budget.jobs or 1)
    groups = tuple(
        Group(s.job.name, tuple(names[s.job.name]), {**need(s.job.machines), JOBS: 1.0})
        for s in order
    )
    acquire = AcquirePlan(
        groups,
        budget=limit,
        held=need(shared_machines),
        expected_s=wp.wall_s,
        max_run_s={h: b.seconds for h, b in bounds.items()},
    )
    scale = float(settings.time_scale) if settings.backing == "sim" else 1.0
    types = {n: h.machine for n, h in ec2.items()}
    unknown = tuple(sorted({t for t in types.values() if infos is None or t not in infos}))
    return RunWaves(wp, acquire, bounds, types, notes=notes, scale=scale, vcpus_unknown=unknown)


def timing(settings: Any) -> waves.Timing:
    """Boot, install and release: AWS's; the sim's scaled by its ``time_scale``."""
    scale = float(settings.time_scale) if settings.backing == "sim" else 1.0
    t = waves.Timing()
    return waves.Timing(t.boot_s * scale, t.install_s * scale, t.release_s * scale)


def priced(
    cs: CloudSpec,
    rw: RunWaves,
    table: PriceTable,
    spot: Mapping[str, Mapping[str, float]] | None,
    gbps: Mapping[str, float] | None,
) -> costs.Priced:
    """The cost table of the waves as run: a row per type (its instances' billed hours), the
    bill's other lines on the instance-hours, the waves' notes."""
    p = rw.plan
    spot_now = None if spot is None else {k: dict(v) for k, v in spot.items()}
    rows: dict[tuple[str, str, str], list[float]] = {}  # key → [count, usd]
    held = [(s.job.machines, s.held_s) for s in p.slots] + [((m,), p.wall_s) for m in p.shared]
    for machines, secs in held:
        for m in machines:
            region = (m.quota or "").rpartition(" in ")[2] or cs.region
            key = (m.instance_type, region, str(m.usd_per_hour))
            row = rows.setdefault(key, [0.0, 0.0])
            row[0] += 1
            if m.usd_per_hour is not None:
                row[1] += m.usd_per_hour * waves.billed_s(secs) / 3600
    several = len(cs.regions) > 1
    n = max(1, cs.instance_count)
    run_min = sum(s.job.run_s for s in p.slots) / max(1, len(p.slots)) / 60
    lines = costs.bill_lines(cs, table, p.instance_hours / n, run_min, gbps)
    extra = billing.total(lines)
    unknown = [*p.unpriced, *(line.item for line in lines if line.usd is None)]
    subtotal = round(p.priced_usd + sum(line.usd or 0.0 for line in lines), 4)
    total = None if unknown or p.usd is None else round(p.usd + (extra or 0.0), 4)
    out_rows: list[list[object]] = []
    for (itype, region, price), (count, usd_) in rows.items():
        hourly: float | None = None if price == "None" else float(price)
        out_rows.append(
            [itype, *([region] if several else []), int(count), hourly,
             None if hourly is None else round(usd_, 4)]
        )  # fmt: skip
    for line in lines:
        cost = None if line.usd is None else round(line.usd, 4)
        out_rows.append([line.item, *([line.region] if several else []), None, None, cost])
    # the switch follows the plan (expiry): no fixed switch for the guard to hold it to
    est = prices.Estimate(
        p.peak_instances, total, unknown, p.instance_hours / n, None, subtotal=subtotal
    )
    per_region: dict[str, int] = {}
    for f in cs.fleets:
        per_region[cs.region_of(f)] = per_region.get(cs.region_of(f), 0) + f.count
    where = ", ".join(f"{r} ({per_region.get(r, 0)})" for r in cs.regions) if several else cs.region
    notes = [
        f"{cs.instance_count} instances in {where}, {p.instance_hours:.2f} instance-hours "
        f"billed in all (per second, {waves.MIN_BILLED_S:g} s minimum; boot, install and "
        "release included)",
        costs.estimate_note(total, subtotal, unknown),
        *rw.lines(),
        *(line.text() for line in lines),
        *costs.price_sources(table, {(cs.region_of(f), f.instance_type) for f in cs.fleets}),
        *costs.market_notes(cs, table, spot_now),
        "limits: --max-cost bounds this estimate, --max-instances the instances held at once; "
        "--yes only skips the confirmation, never a limit",
    ]  # fmt: skip
    tab = Tabular(
        ["instance_type", *(["region"] if several else []), "count", "usd_per_hour", "usd"],
        out_rows,
        title=f"cloud plan {cs.campaign} ({cs.market}, in waves)",
        notes=notes,
        decimals=4,
    )
    return costs.Priced(tab, est, spot_now, lines, waves=rw)


def priced_run(
    spec: CampaignSpec,
    cs: CloudSpec,
    runs: Sequence[PlannedRun],
    state_root: Path,
    *,
    max_instances: int | None = None,
    max_cost: float | None = None,
    concurrency: int | None = None,
) -> costs.Priced:
    """:func:`priced` of :func:`plan_run` with what can be looked up before launch (as
    :func:`netfleet.cloud.aws.plan.costs.priced_plan`): spot prices, the Price List API for
    types the table lacks, the catalogue, and the account's vCPU quotas; a note for each that
    failed."""
    spot, why = costs.spot_prices(cs)
    table, unpriced = costs.price_unknown(cs, prices.load(state_root), state_root)
    infos, no_infos = costs.catalogue_of(cs)
    vcpus, quota_notes = quota_budget(cs)
    rw = plan_run(
        spec, cs, runs, table, infos, spot=spot, vcpu_budget=vcpus,
        max_instances=max_instances, max_cost=max_cost, concurrency=concurrency,
    )  # fmt: skip
    gbps = (
        None
        if infos is None
        else {t: i.peak_gbps or i.baseline_gbps or 0.0 for t, i in infos.items()}
    )
    out = priced(cs, rw, table, spot, gbps)
    out.table.notes += [n for n in (why, unpriced, no_infos) if n]
    out.table.notes += [f"note: {n}" for n in quota_notes]
    return out
