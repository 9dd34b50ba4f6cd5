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

Pure logic with an injected clock: ``simulate`` drives it without running anything (estimates,
tests, benchmarks).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from netfleet.errors import InputError
from netfleet.plan.bandwidth import planned_bitrate
from netfleet.plan.matrix import PlannedRun
from netfleet.spec.models import CampaignSpec
from netfleet.units import parse_rate

#: examine at most this many pending runs per decision (or 8 × concurrency when larger)
WINDOW = 512


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
    """Hands out runs as they may start; told when each ends."""

    def __init__(
        self, runs: Sequence[PlannedRun], limits: Limits, window: int | None = None
    ) -> None:
        self.limits = limits
        self._runs = list(runs)
        self._taken = [False] * len(self._runs)
        self._head = 0
        self._left = len(self._runs)
        self._window = window or max(WINDOW, 8 * limits.concurrency)
        self._busy: dict[str, int] = {}
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

    def take(self, now: float) -> list[PlannedRun]:
        """Every run that may start at ``now``, in plan order (marked as started)."""
        limits = self.limits
        if self._active >= limits.concurrency or now < self._gap_until:
            return []
        out: list[PlannedRun] = []
        i, seen, n = self._head, 0, len(self._runs)
        while i < n and seen < self._window and self._active < limits.concurrency:
            if not self._taken[i]:
                seen += 1
                run = self._runs[i]
                if self._fits(run, now):
                    self._taken[i] = True
                    self._start(run)
                    out.append(run)
            i += 1
        while self._head < n and self._taken[self._head]:
            self._head += 1
        return out

    def finished(self, run: PlannedRun, now: float) -> None:
        """``run`` ended at ``now``: its hosts rest ``cooldown``, its bandwidth is free."""
        self._active -= 1
        self._used_bps -= self._rate.get(run.sequence, 0.0)
        rest = now + self.limits.cooldown_s
        for host in _hosts(run):
            self._busy[host] -= 1
            if self.limits.cooldown_s and not self.limits.may_overlap(host):
                self._free_at[host] = max(self._free_at.get(host, rest), rest)
        if self.limits.concurrency == 1 and self.limits.cooldown_s:
            self._gap_until = rest

    def wakeup(self, now: float) -> float | None:
        """The next moment a resting host (or the pause between runs) becomes free, if any."""
        for host in [h for h, t in self._free_at.items() if t <= now]:
            del self._free_at[host]
        times = [t for t in self._free_at.values()]
        if self._gap_until > now:
            times.append(self._gap_until)
        return min(times) if times else None

    def _fits(self, run: PlannedRun, now: float) -> bool:
        limits = self.limits
        for host in _hosts(run):
            if limits.may_overlap(host):
                continue
            if self._busy.get(host) or self._free_at.get(host, now) > now:
                return False
        if limits.budget_bps is not None:
            if self._used_bps + self._rate[run.sequence] > limits.budget_bps * (1 + 1e-9):
                return False
        return True

    def _start(self, run: PlannedRun) -> None:
        self._left -= 1
        self._active += 1
        self._used_bps += self._rate.get(run.sequence, 0.0)
        for host in _hosts(run):
            self._busy[host] = self._busy.get(host, 0) + 1


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
) -> list[Slot]:
    """When each run would start and end under ``limits`` if it lasted ``duration(run)``
    (default: its estimate). Nothing runs; the schedule is exactly what the runner would do."""
    length = duration or (lambda r: r.estimated_s)
    sched = Scheduler(runs, limits)
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
    """Wall time of the campaign under ``limits``, from each run's estimate."""
    slots = simulate(runs, limits)
    return max((s.end for s in slots), default=0.0)
