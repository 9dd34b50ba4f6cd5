"""Which planned runs may start now: concurrency, host exclusivity, cooldown, bandwidth budget.

The plan's order is the priority order. The scheduler is greedy and work-conserving: whenever
runs end it starts, in plan order, every pending run that fits —

- at most ``concurrency`` runs at once;
- no host in two runs at once, unless the campaign allows it for that host
  (``allow_host_overlap``: a big server may serve a star of clients at once);
- a host rests ``cooldown`` seconds after each of its runs (with ``concurrency: 1`` that is
  simply the pause between two runs, as before);
- the planned bitrates of the runs in flight add up to at most ``bandwidth_budget``.

A full mesh is planned round by round (circle method, ``netfleet.plan.topology``): a round's
pairs are disjoint, so they start together, and a pair of the next round starts as soon as both
its hosts are free. With runs of equal length that is exactly n − 1 rounds. Only the first
``window`` pending runs are examined each time, so a decision costs O(window), whatever the size
of the plan (a 1,000-host mesh is about a million runs).

Hosts may be *absent* (waves: a cloud host acquired only when its round is due,
:mod:`netfleet.runner.waves`): no run of an absent host starts until :meth:`Scheduler.arrive`
says it is there.

Pure logic with an injected clock: ``simulate`` drives it without running anything (estimates,
tests, benchmarks).
"""

from __future__ import annotations

import heapq
import itertools
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from netfleet.errors import InputError
from netfleet.plan.matrix import PlannedRun
from netfleet.spec.bandwidth import planned_bitrate
from netfleet.spec.models import CampaignSpec
from netfleet.units import parse_rate

#: examine at most this many pending runs per decision (or 8 × concurrency when larger)
WINDOW = 512
#: the start-up estimate simulates the schedule up to this many runs (about 1 s)
SIMULATE_UP_TO = 50_000


@dataclass(frozen=True)
class Limits:
    concurrency: int = 1
    cooldown_s: float = 0.0
    budget_bps: float | None = None
    #: hosts that may be in several runs at once; None means every host
    overlap: frozenset[str] | None = frozenset()

    @classmethod
    def of(cls, spec: CampaignSpec, concurrency: int | None = None) -> Limits:
        """The campaign's limits; ``concurrency`` (the CLI's --concurrency) overrides the spec."""
        overlap = spec.allow_host_overlap
        return cls(
            concurrency=concurrency or spec.concurrency,
            cooldown_s=float(spec.cooldown),
            budget_bps=parse_rate(spec.bandwidth_budget) if spec.bandwidth_budget else None,
            overlap=None if overlap is True else frozenset(overlap or ()),
        )

    def may_overlap(self, host: str) -> bool:
        return self.overlap is None or host in self.overlap


class Scheduler:
    """Hands out runs as they may start; told when each ends.

    Two ways to find the first pending run (in plan order) that fits, same answer:

    - *scan*: from the first pending run, look at up to ``window`` of them — cheap when many
      hosts are free (the first runs usually fit);
    - *index*: pending runs grouped by their exclusive hosts. Unless the last decision stopped
      at a limit (concurrency, budget), a run can only have become possible through a host freed
      since: only groups with such a *fresh* host and otherwise free hosts are looked at —
      O(fresh × free) per decision, whatever the size of the plan (a mesh's steady state: two
      hosts free up, their next run is found at once).
    """

    def __init__(
        self,
        runs: Sequence[PlannedRun],
        limits: Limits,
        window: int | None = None,
        index: bool | None = None,
        absent: Iterable[str] = (),
    ) -> None:
        """``window``: how many pending runs a scan looks at; ``index``: group pending runs by
        their hosts (default: when the plan is larger than the window); ``absent``: hosts not
        there yet (see :meth:`arrive`)."""
        self.limits = limits
        self._absent = set(absent)
        self._runs = list(runs)
        self._taken = [False] * len(self._runs)
        self._head = 0
        self._left = len(self._runs)
        self._window = window or max(WINDOW, 8 * limits.concurrency)
        self._busy: dict[str, int] = {}
        hosts = {h for r in self._runs for h in (r.client, r.server)}
        #: exclusive hosts neither busy nor resting (hosts that may overlap are never tracked)
        self._free: set[str] = (
            set() if limits.overlap is None else hosts - limits.overlap - self._absent
        )
        #: hosts freed since the last decision; and whether that decision stopped at a limit
        self._fresh: set[str] = set(self._free)
        self._limited = True
        self._free_at: dict[str, float] = {}
        self._gap_until = float("-inf")
        self._active = 0
        self._used_bps = 0.0
        self._rate: dict[int, float] = {}
        if limits.budget_bps is not None:
            for run in self._runs:
                rate = planned_bitrate(run.params)
                if rate is None or rate > limits.budget_bps:
                    why = "no bitrate" if rate is None else f"{rate / 1e6:g} Mbit/s"
                    raise InputError(
                        f"run {run.run_key} cannot fit the bandwidth budget ({why} planned, "
                        f"budget {limits.budget_bps / 1e6:g} Mbit/s)",
                        hint="give every test a bitrate (per stream) below the budget",
                    )
                self._rate[run.sequence] = rate
        #: exclusive hosts → positions of its pending runs, latest first (pop() = earliest)
        self._index: dict[tuple[str, ...], list[int]] | None = None
        if index if index is not None else len(self._runs) > self._window:
            groups: dict[tuple[str, ...], list[int]] = {}
            for i, run in enumerate(self._runs):
                groups.setdefault(self._exclusive(run), []).append(i)
            for positions in groups.values():
                positions.reverse()
            self._index = groups

    @property
    def pending(self) -> int:
        """Runs not started yet."""
        return self._left

    @property
    def active(self) -> int:
        return self._active

    @property
    def done(self) -> bool:
        return self._left == 0 and self._active == 0

    @property
    def used_bps(self) -> float:
        """Planned bitrate of the runs in flight."""
        return self._used_bps

    def arrive(self, hosts: Iterable[str]) -> None:
        """Hosts that were absent are there now: their runs may start."""
        for host in hosts:
            if host not in self._absent:
                continue
            self._absent.discard(host)
            if not self.limits.may_overlap(host) and not self._busy.get(host):
                self._free.add(host)
                self._fresh.add(host)
        self._limited = True  # a shared host's runs are found by a full look only

    def _present(self, run: PlannedRun) -> bool:
        return not self._absent or (
            run.client not in self._absent and run.server not in self._absent
        )

    def take(self, now: float) -> list[PlannedRun]:
        """Every run that may start at ``now``, in plan order (marked as started)."""
        for host in [h for h, t in self._free_at.items() if t <= now]:
            del self._free_at[host]
            if not self._busy.get(host):
                self._free.add(host)
                self._fresh.add(host)
        if self._active >= self.limits.concurrency or now < self._gap_until:
            return []
        free = len(self._free)
        if self._index is None:
            out = self._take_scanned()
        elif not self._limited:
            out = self._take_indexed(full=False)
        elif free * (free + 1) // 2 + 1 <= self._window:
            out = self._take_indexed(full=True)
        else:
            out = self._take_scanned()
        self._fresh.clear()
        while self._head < len(self._runs) and self._taken[self._head]:
            self._head += 1
        return out

    def _take_scanned(self) -> list[PlannedRun]:
        out: list[PlannedRun] = []
        i, seen, n = self._head, 0, len(self._runs)
        self._limited = False
        while i < n and self._active < self.limits.concurrency:
            if seen >= self._window:
                self._limited = True  # runs further on were not looked at
                break
            if not self._taken[i]:
                seen += 1
                run = self._runs[i]
                if all(h in self._free for h in self._exclusive(run)) and self._present(run):
                    if self._budget_fits(run):
                        self._start(i)
                        out.append(run)
                    else:
                        self._limited = True
            i += 1
        self._limited |= self._active >= self.limits.concurrency
        return out

    def _take_indexed(self, full: bool) -> list[PlannedRun]:
        assert self._index is not None
        out: list[PlannedRun] = []
        self._limited = False
        while self._active < self.limits.concurrency:
            best: int | None = None
            for key in self._candidates(full):
                positions = self._index.get(key)
                while positions and self._taken[positions[-1]]:
                    positions.pop()
                if positions and (best is None or positions[-1] < best):
                    if not self._present(self._runs[positions[-1]]):
                        continue
                    if self._budget_fits(self._runs[positions[-1]]):
                        best = positions[-1]
                    else:
                        self._limited = True
            if best is None:
                break
            self._start(best)
            out.append(self._runs[best])
        self._limited |= self._active >= self.limits.concurrency
        return out

    def _candidates(self, full: bool) -> list[tuple[str, ...]]:
        """Groups of exclusive hosts that may hold a run able to start now."""
        free = self._free
        if full:
            ordered = sorted(free)
            return [(), *((h,) for h in ordered), *itertools.combinations(ordered, 2)]
        keys: list[tuple[str, ...]] = []
        for f in self._fresh & free:
            keys.append((f,))
            keys += [(f, g) if f < g else (g, f) for g in free if g != f]
        return keys

    def finished(self, run: PlannedRun, now: float) -> None:
        """``run`` ended at ``now``: its hosts rest ``cooldown``, its bandwidth is free."""
        self._active -= 1
        self._used_bps -= self._rate.get(run.sequence, 0.0)
        rest = now + self.limits.cooldown_s
        for host in _hosts(run):
            self._busy[host] -= 1
            if self.limits.may_overlap(host):
                continue
            if self.limits.cooldown_s:
                self._free_at[host] = max(self._free_at.get(host, rest), rest)
            elif not self._busy[host]:
                self._free.add(host)
                self._fresh.add(host)
        if self.limits.concurrency == 1 and self.limits.cooldown_s:
            self._gap_until = rest

    def wakeup(self, now: float) -> float | None:
        """The next moment a resting host (or the pause between runs) becomes free, if any."""
        times = [t for t in self._free_at.values() if t > now]
        if self._gap_until > now:
            times.append(self._gap_until)
        return min(times) if times else None

    def _exclusive(self, run: PlannedRun) -> tuple[str, ...]:
        """The hosts of ``run`` that no other run may use meanwhile, sorted (hot: once per run
        when the index is built, so no sorting or generators)."""
        shared = self.limits.overlap
        if shared is None:
            return ()
        client, server = run.client, run.server
        mine = client not in shared
        theirs = server not in shared and server != client
        if mine and theirs:
            return (client, server) if client < server else (server, client)
        if mine:
            return (client,)
        return (server,) if theirs else ()

    def _budget_fits(self, run: PlannedRun) -> bool:
        budget = self.limits.budget_bps
        return budget is None or self._used_bps + self._rate[run.sequence] <= budget * (1 + 1e-9)

    def _start(self, i: int) -> None:
        run = self._runs[i]
        self._taken[i] = True
        self._left -= 1
        self._active += 1
        self._used_bps += self._rate.get(run.sequence, 0.0)
        for host in _hosts(run):
            self._busy[host] = self._busy.get(host, 0) + 1
            self._free.discard(host)


def _hosts(run: PlannedRun) -> tuple[str, ...]:
    return (run.client,) if run.client == run.server else (run.client, run.server)


@dataclass(frozen=True)
class Slot:
    run: PlannedRun
    start: float
    end: float


def simulate(
    runs: Sequence[PlannedRun],
    limits: Limits,
    duration: Callable[[PlannedRun], float] | None = None,
    window: int | None = None,
    index: bool | None = None,
) -> list[Slot]:
    """When each run would start and end under ``limits`` if it lasted ``duration(run)``
    (default: its estimate). Nothing runs; the schedule is exactly what the runner would do."""
    length = duration or (lambda r: r.estimated_s)
    sched = Scheduler(runs, limits, window, index)
    now = 0.0
    ends: list[tuple[float, int, PlannedRun]] = []
    slots: list[Slot] = []
    while not sched.done:
        for run in sched.take(now):
            end = now + length(run)
            heapq.heappush(ends, (end, run.sequence, run))
            slots.append(Slot(run, now, end))
        wake = sched.wakeup(now)
        if ends and (wake is None or ends[0][0] <= wake):
            now, _, run = heapq.heappop(ends)
            sched.finished(run, now)
            while ends and ends[0][0] <= now:
                sched.finished(heapq.heappop(ends)[2], now)
        elif wake is not None:
            now = wake
        elif not sched.done:
            raise RuntimeError("scheduler stalled with runs pending and nothing to wait for")
    return slots


def estimate_wall_seconds(runs: Sequence[PlannedRun], limits: Limits) -> float:
    """Wall time of the campaign under ``limits``, from each run's estimate: simulated exactly
    up to ``SIMULATE_UP_TO`` runs; beyond, the larger of two lower bounds — all the work spread
    over ``concurrency``, and the busiest host's own runs one after another."""
    if len(runs) <= SIMULATE_UP_TO:
        return max((s.end for s in simulate(runs, limits)), default=0.0)
    total = 0.0
    per_host: defaultdict[str, float] = defaultdict(float)
    cost: dict[int, float] = {}  # runs share params objects: price each one once
    rest = limits.cooldown_s
    for run in runs:
        c = cost.get(id(run.params))
        if c is None:
            c = cost[id(run.params)] = run.estimated_s
        total += c
        per_host[run.client] += c + rest
        if run.server != run.client:
            per_host[run.server] += c + rest
    busiest = max((v for h, v in per_host.items() if not limits.may_overlap(h)), default=0.0)
    return max(total / limits.concurrency, busiest)
