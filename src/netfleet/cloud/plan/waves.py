"""Acquire in waves: which hosts a study holds when, and what that costs (issue 25.1).

A study is a list of :class:`Job` — e.g. one instance type's runs on its own client — each
needing its own machines for boot + install + its runs, after which they are released. Shared
machines (receivers every job sends to) are held for the whole study. :func:`plan` starts the
longest jobs first, as many at once as the budget allows (vCPUs per quota as read from the
account, instances, the shared receivers' Gbit/s), starts the next ones as soon as a running job
releases its machines, and prices every machine per second with EC2's one-minute minimum.

Pure: no AWS calls. The quota values come from :mod:`netfleet.cloud.aws.plan.quotas`, the run bounds
from :mod:`netfleet.cloud.plan.stopbound`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

#: EC2 and Fargate bill Linux per second with a 60-second minimum
MIN_BILLED_S = 60.0
#: the limit on machines held at once, as an unfit job names it
INSTANCES_LIMIT = "--max-instances"


@dataclass(frozen=True)
class Machine:
    instance_type: str
    vcpus: int
    usd_per_hour: float | None  #: None: no price (the plan's cost is then unknown)
    quota: str | None = None  #: the vCPU quota it counts against (None: not counted)


@dataclass(frozen=True)
class Job:
    name: str
    machines: tuple[Machine, ...]  #: acquired for this job, released when its last run ends
    run_s: float  #: its runs' time, bounded by the catalogue (see stopbound)
    gbps: float = 0.0  #: load on the shared receivers while it runs
    why: str = ""  #: why its runs take run_s


@dataclass(frozen=True)
class Budget:
    vcpus: Mapping[str, int] = field(default_factory=dict)  #: quota → vCPUs free for the study
    instances: int | None = None
    gbps: float | None = None  #: what the shared receivers can take at once
    max_cost: float | None = None
    jobs: int | None = None  #: jobs at once (a campaign's ``concurrency``: one run each)


@dataclass(frozen=True)
class Timing:
    boot_s: float = 120.0  #: RunInstances → SSH answers
    install_s: float = 60.0  #: engines installed, ready marker written
    release_s: float = 10.0  #: last run ended → TerminateInstances (billing stops)

    def held_s(self, run_s: float) -> float:
        return self.boot_s + self.install_s + run_s + self.release_s


@dataclass(frozen=True)
class Slot:
    job: Job
    start_s: float  #: launch
    end_s: float  #: release
    wave: int  #: jobs launched together share a wave

    @property
    def held_s(self) -> float:
        return self.end_s - self.start_s


@dataclass
class WavePlan:
    slots: list[Slot]
    shared: tuple[Machine, ...]
    wall_s: float
    peak_vcpus: dict[str, int]  #: quota → the most vCPUs held at once (shared included)
    peak_instances: int
    instance_hours: float  #: billed (per second, one-minute minimum)
    usd: float | None
    unpriced: list[str]
    unfit: list[str]  #: jobs that do not fit the budget even alone, with the limit to raise
    over_cost: str | None  #: why the plan exceeds max_cost, else None
    #: the fewest machines held at once that run every job (the shared ones and the largest
    #: job): above ``--max-instances`` no plan fits
    least_instances: int = 0
    #: the jobs of ``unfit`` that a higher ``--max-instances`` alone would not fit, each with
    #: the other limits it breaks (a quota, the receivers' Gbit/s)
    blocked: list[str] = field(default_factory=list)
    #: what the priced machines cost (= ``usd`` when every machine has a price)
    priced_usd: float = 0.0

    @property
    def waves(self) -> int:
        return 1 + max((s.wave for s in self.slots), default=-1)


def billed_s(held_s: float) -> float:
    return max(held_s, MIN_BILLED_S)


def _vcpus(machines: Sequence[Machine]) -> dict[str, int]:
    out: dict[str, int] = {}
    for m in machines:
        if m.quota is not None:
            out[m.quota] = out.get(m.quota, 0) + m.vcpus
    return out


def _fits(
    need: Mapping[str, int],
    n: int,
    gbps: float,
    held: Mapping[str, int],
    held_n: int,
    load: float,
    budget: Budget,
    running: int = 0,
) -> list[str]:
    """The limits a start would break (empty: it fits)."""
    over = [
        f"vCPU quota {q} ({held.get(q, 0) + v} > {budget.vcpus[q]})"
        for q, v in need.items()
        if q in budget.vcpus and held.get(q, 0) + v > budget.vcpus[q]
    ]
    if budget.instances is not None and held_n + n > budget.instances:
        over.append(f"{INSTANCES_LIMIT} ({held_n + n} > {budget.instances})")
    if budget.gbps is not None and gbps and load + gbps > budget.gbps + 1e-9:
        over.append(f"the receivers' {budget.gbps:g} Gbit/s ({load + gbps:g} needed)")
    if budget.jobs is not None and running + 1 > budget.jobs:
        over.append(f"concurrency ({running + 1} > {budget.jobs})")
    return over


def plan(
    jobs: Sequence[Job],
    budget: Budget,
    timing: Timing | None = None,
    shared: Sequence[Machine] = (),
) -> WavePlan:
    """Schedule ``jobs`` longest first under ``budget``; see the module doc."""
    timing = timing or Timing()
    base = _vcpus(shared)
    unfit, blocked = [], []
    todo = []
    least = len(shared)
    for job in jobs:
        least = max(least, len(shared) + len(job.machines))
        over = _fits(_vcpus(job.machines), len(job.machines), job.gbps, base, len(shared), 0.0,
                     budget)  # fmt: skip
        if over:
            unfit.append(f"{job.name}: raise {', '.join(over)}")
            beyond = [o for o in over if not o.startswith(INSTANCES_LIMIT)]
            if beyond:
                blocked.append(f"{job.name}: raise {', '.join(beyond)}")
        else:
            todo.append(job)
    todo.sort(key=lambda j: (-timing.held_s(j.run_s), j.name))
    slots: list[Slot] = []
    running: list[Slot] = []
    held, held_n, load = dict(base), len(shared), 0.0
    peak, peak_n = dict(base), held_n
    t, wave = 0.0, 0
    while todo:
        started = False
        for job in list(todo):
            need = _vcpus(job.machines)
            if _fits(need, len(job.machines), job.gbps, held, held_n, load, budget, len(running)):
                continue
            slot = Slot(job, t, t + timing.held_s(job.run_s), wave)
            slots.append(slot)
            running.append(slot)
            todo.remove(job)
            for q, v in need.items():
                held[q] = held.get(q, 0) + v
            held_n += len(job.machines)
            load += job.gbps
            started = True
        if started:
            wave += 1
            for q, v in held.items():
                peak[q] = max(peak.get(q, 0), v)
            peak_n = max(peak_n, held_n)
        if not running:
            break  # cannot happen: every job in todo fits alone
        t = min(s.end_s for s in running)
        for s in [s for s in running if s.end_s <= t]:
            running.remove(s)
            for q, v in _vcpus(s.job.machines).items():
                held[q] -= v
            held_n -= len(s.job.machines)
            load -= s.job.gbps
    wall = max((s.end_s for s in slots), default=0.0)
    usd, hours, unpriced = 0.0, 0.0, []
    for s in slots:
        for m in s.job.machines:
            h = billed_s(s.held_s) / 3600
            hours += h
            if m.usd_per_hour is None:
                unpriced.append(m.instance_type)
            else:
                usd += m.usd_per_hour * h
    for m in shared:
        h = billed_s(wall) / 3600
        hours += h
        if m.usd_per_hour is None:
            unpriced.append(m.instance_type)
        else:
            usd += m.usd_per_hour * h
    total = None if unpriced else usd
    over_cost = None
    if budget.max_cost is not None and (total is None or total > budget.max_cost):
        over_cost = (
            "the cost cannot be bounded (no price for "
            + ", ".join(sorted(set(unpriced)))
            + f"; the priced part: ${usd:,.2f})"
            if total is None
            else f"estimated ${total:,.2f} exceeds --max-cost ${budget.max_cost:,.2f}"
        )
    return WavePlan(
        slots=slots,
        shared=tuple(shared),
        wall_s=wall,
        peak_vcpus=peak,
        peak_instances=peak_n,
        instance_hours=hours,
        usd=total,
        unpriced=sorted(set(unpriced)),
        unfit=unfit,
        over_cost=over_cost,
        priced_usd=usd,
        least_instances=least,
        blocked=blocked,
    )


#: the shared machines' share of a plan's cost above which :func:`wider` is worth saying
SHARED_DOMINATE = 0.5


def shared_usd(p: WavePlan) -> float:
    """What the shared machines (held for the whole wall time) cost in ``p``."""
    return sum(m.usd_per_hour or 0.0 for m in p.shared) * billed_s(p.wall_s) / 3600


def most_at_once(p: WavePlan) -> int:
    """The most jobs running at the same time in ``p``."""
    return max(
        (sum(1 for o in p.slots if o.start_s <= s.start_s < o.end_s) for s in p.slots), default=0
    )


def wider(
    jobs: Sequence[Job],
    budget: Budget,
    timing: Timing | None,
    shared: Sequence[Machine],
    p: WavePlan,
) -> tuple[int, WavePlan] | None:
    """When the shared machines dominate ``p`` (more than :data:`SHARED_DOMINATE` of its priced
    cost) because few jobs may run at once (``budget.jobs``): the plan with every job allowed
    at once (the other limits kept) and the concurrency it reaches — if that is cheaper. None
    otherwise (nothing to say)."""
    if not p.priced_usd or budget.jobs is None or len(jobs) <= budget.jobs:
        return None
    if shared_usd(p) <= SHARED_DOMINATE * p.priced_usd:
        return None
    alt = plan(jobs, replace(budget, jobs=None, max_cost=None), timing, shared)
    n = most_at_once(alt)
    if n <= budget.jobs or alt.priced_usd >= p.priced_usd:
        return None
    return n, plan(jobs, replace(budget, jobs=n, max_cost=None), timing, shared)
