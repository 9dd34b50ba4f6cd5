"""Acquire in waves at run time (issue 25.1): the hosts a round needs, when it is due.

The plan (made by the provider's side — for cloud campaigns :mod:`netfleet.cloud.aws.plan.runwaves`,
from :func:`netfleet.cloud.plan.waves.plan`) is an :class:`AcquirePlan`: groups of hosts in the
order the plan launches them, what each holds while it is up (vCPUs per quota, instances) and
the budget. Hosts of no group are acquired up front and held to the end (a shared receiver).

:class:`WaveDriver` follows it while the runs go: it starts acquiring every group that fits
the budget next to what is held (in plan order, each group's hosts launched together by the
provider), preflights the group's runs, tells the scheduler the hosts are there, and when the
last run of a group's host ends it releases that host at once; when a group's last host is
released its share of the budget is free and the next groups that fit are acquired. A group
that would not fit even alone was refused before launch (by the plan).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from netfleet.errors import HostError
from netfleet.plan.matrix import PlannedRun


@dataclass(frozen=True)
class Group:
    """Hosts acquired together and what they hold while up (resource → units)."""

    name: str
    hosts: tuple[str, ...]
    need: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class AcquirePlan:
    """Which hosts are acquired when: ``groups`` in launch order, under ``budget`` (resource →
    the most held at once; ``held`` is what the up-front hosts hold)."""

    groups: tuple[Group, ...]
    budget: Mapping[str, float] = field(default_factory=dict)
    held: Mapping[str, float] = field(default_factory=dict)
    #: the plan's expected wall time (the cloud's dead-man switch follows it)
    expected_s: float | None = None
    #: host → the longest an adaptive run of it may last (the catalogue's stop bound)
    max_run_s: Mapping[str, float] = field(default_factory=dict)

    @property
    def later(self) -> set[str]:
        """Hosts acquired by wave, not up front."""
        return {h for g in self.groups for h in g.hosts}

    def order(self, runs: Sequence[PlannedRun]) -> list[PlannedRun]:
        """Runs in wave order: those of up-front hosts only first, then group by group
        (each group's in plan order) — the scheduler's window looks at what is due."""
        rank = {h: i + 1 for i, g in enumerate(self.groups) for h in g.hosts}
        return sorted(runs, key=lambda r: max(rank.get(r.client, 0), rank.get(r.server, 0)))


def fits(need: Mapping[str, float], held: Mapping[str, float], budget: Mapping[str, float]) -> bool:
    return all(held.get(k, 0.0) + v <= budget[k] + 1e-9 for k, v in need.items() if k in budget)


class WaveDriver:
    """Acquire and release the plan's groups as the runs go (see the module doc).

    ``acquire(names, runs)`` makes the hosts and preflights their runs; ``arrive(names)`` tells
    the scheduler; ``release(name)`` gives one host back. ``pending`` holds the driver's tasks in
    flight: the dispatcher waits on them with the runs (a failed acquire is raised there)."""

    def __init__(
        self,
        plan: AcquirePlan,
        runs: Sequence[PlannedRun],
        acquire: Callable[[list[str], list[PlannedRun]], Awaitable[None]],
        arrive: Callable[[list[str]], None],
        release: Callable[[str], Awaitable[bool]],
        note: Callable[[str], None] = lambda _msg: None,
    ) -> None:
        self.plan = plan
        self._acquire, self._arrive, self._release, self.note = acquire, arrive, release, note
        self.held: dict[str, float] = dict(plan.held)
        self.peak: dict[str, float] = dict(self.held)
        used = {h for r in runs for h in (r.client, r.server)}
        #: groups not started, in plan order (a group none of whose hosts has a run: skipped)
        self.todo = [g for g in plan.groups if used & set(g.hosts)]
        self._runs = {g.name: [r for r in runs if {r.client, r.server} & set(g.hosts)]
                      for g in self.todo}  # fmt: skip
        self._group_of = {h: g for g in self.todo for h in g.hosts}
        self._up: dict[str, set[str]] = {}  #: group → its hosts not released yet
        self.pending: set[asyncio.Future[None]] = set()
        self._acquiring: set[asyncio.Future[None]] = set()
        #: (wave, group names) as started: the waves as run
        self.waves: list[list[str]] = []

    @property
    def absent(self) -> set[str]:
        return {h for g in self.todo for h in g.hosts}

    def due(self) -> None:
        """Start acquiring every group that fits now (plan order), as one wave."""
        wave = []
        for g in list(self.todo):
            if not fits(g.need, self.held, self.plan.budget):
                continue
            self.todo.remove(g)
            for k, v in g.need.items():
                self.held[k] = self.held.get(k, 0.0) + v
                self.peak[k] = max(self.peak.get(k, 0.0), self.held[k])
            self._up[g.name] = set(g.hosts)
            wave.append(g.name)
            self._acquiring.add(self._spawn(self._bring_up(g)))
        if wave:
            self.waves.append(wave)
            self.note(f"wave {len(self.waves)}: acquiring {', '.join(wave)}")
        elif self.todo and not self._up:
            raise HostError(
                f"group {self.todo[0].name} does not fit the budget even alone",
                hint="raise the limit the plan names (vCPU quota, --max-instances)",
            )

    async def _bring_up(self, g: Group) -> None:
        names = list(g.hosts)
        await self._acquire(names, self._runs[g.name])
        self._arrive(names)

    def host_done(self, name: str) -> bool:
        """The last run of ``name`` ended: release it now if it belongs to a group (True)."""
        g = self._group_of.get(name)
        if g is None:
            return False
        self._spawn(self._give_back(g, name))
        return True

    async def _give_back(self, g: Group, name: str) -> None:
        try:
            await self._release(name)
        finally:
            up = self._up.get(g.name, set())
            up.discard(name)
            if not up and self._up.pop(g.name, None) is not None:
                for k, v in g.need.items():
                    self.held[k] = self.held.get(k, 0.0) - v
        self.due()

    def _spawn(self, coro: Awaitable[None]) -> asyncio.Future[None]:
        task = asyncio.ensure_future(coro)
        self.pending.add(task)
        return task

    def settle(self, done: Iterable[asyncio.Future[None]]) -> None:
        """Forget finished tasks; raise the first failure."""
        for task in done:
            self.pending.discard(task)
            self._acquiring.discard(task)
            task.result()

    async def stop(self) -> None:
        """The campaign ends: acquisitions in flight are cancelled (the pool releases what
        they recorded), releases in flight are awaited."""
        for task in self._acquiring:
            task.cancel()
        tasks = list(self.pending)
        self.pending.clear()
        self._acquiring.clear()
        await asyncio.gather(*tasks, return_exceptions=True)
