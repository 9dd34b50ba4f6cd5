"""Host providers and the host lifecycle: plan → acquire → check → use → release.

A *provider* turns host specs of one kind into ready :class:`Host` objects (``acquire``) and
gives back what it took (``release``). Two shapes:

- **attach** providers (local, netns, lab hosts, ssh) find something that already exists:
  acquire = resolve/connect, release = close. Nothing outlives the controller, so nothing is
  journaled (``owns_resources = False``).
- **owning** providers (cloud instances, a lab brought up for the campaign, the test provider)
  create something that costs or lingers until released. They record an *intent* in the
  campaign journal BEFORE creating (``log.intent``), then what they got (``log.acquired``), and
  ``release_lease`` can release it from that journal record alone — a later
  ``netfleet run --resume`` uses it after the controller was killed with ``kill -9``.

:class:`HostPool` drives the life of a fleet: it acquires the hosts (grouped by provider, in
batches of ``Provider.batch_size``, concurrently) and releases each acquired host exactly once
on every ending path — normal end, an exception, Ctrl-C / SIGTERM (task cancellation), and a
failure half-way through acquiring. Hosts named ``later`` are not acquired on entry but when
the runner calls :meth:`HostPool.acquire` with their names (waves: the hosts a round needs,
when it is due — :mod:`netfleet.runner.waves`); a provider learns every host it will be asked
for, and the plan's expected wall time, once before its first acquire
(:meth:`Provider.prepare`). See docs/hosts.md, "Providers and the host lifecycle".
"""

from __future__ import annotations

import asyncio
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from netfleet.errors import HostError
from netfleet.hosts.base import Host

#: release outcomes after which a lease is settled (nothing of it is left)
SETTLED = frozenset({"released", "gone"})


@dataclass(frozen=True)
class HostRequest:
    """One host the campaign plans to use: its name and its spec (a validated spec model)."""

    name: str
    spec: Any
    lab_state_dir: Path | None = None
    #: the tools the campaign's runs need on it (empty: not known), so that a provider can
    #: refuse a machine that cannot have them before it exists
    tools: tuple[str, ...] = ()


@dataclass(frozen=True)
class Lease:
    """What an owning provider holds for one host, exactly as journaled: enough to release it
    with no other state (``resource`` is the provider's own JSON-able record — an instance id,
    a directory, a namespace name — and must let ``release_lease`` check the thing is still
    the one it created before destroying it)."""

    id: str
    provider: str
    host: str
    resource: dict[str, Any] = field(default_factory=dict)


class LeaseLog(Protocol):
    """Where owning providers record what they own (the campaign journal in a real run)."""

    def intent(self, provider: str, host: str, resource: dict[str, Any]) -> Lease:
        """Record, durably, that ``provider`` is about to create ``resource`` for ``host``."""
        ...

    def acquired(self, lease: Lease) -> None:
        """Record what was actually created (``lease.resource`` may now hold more: an id)."""
        ...

    def released(self, lease: Lease, outcome: str, detail: str | None = None) -> None:
        """Record a release attempt: ``released``/``gone`` settle it, anything else keeps it
        open to be released again by a later session."""
        ...


@dataclass
class Acquired:
    """A host in use, with the lease behind it (None for attach-style providers)."""

    host: Host
    provider: Provider
    lease: Lease | None = None


class Provider(ABC):
    """One kind of host. Subclass, set ``name``, implement ``acquire`` (and, for owning
    providers, ``release_lease``), and add one line to ``hosts.registry.PROVIDERS``."""

    #: registry name, recorded in the journal with every lease
    name: ClassVar[str] = "abstract"
    #: True when acquire creates something that must be released even after a crash
    owns_resources: ClassVar[bool] = False
    #: hosts acquired per call of ``acquire`` (0: all of this provider's hosts in one call)
    batch_size: ClassVar[int] = 0
    #: True when the runner may acquire this provider's hosts in waves (several ``acquire``
    #: calls in one campaign, each host released after its last run): what they share is made
    #: on first need and released at the end
    waves: ClassVar[bool] = False

    def prepare(self, requests: list[HostRequest], expected_s: float | None) -> None:
        """Told once, before the first ``acquire``: every host of this provider the campaign
        will ask for (possibly over several calls) and the plan's expected wall time (None: not
        known). Default: nothing to prepare."""
        del requests, expected_s

    @abstractmethod
    async def acquire(self, requests: list[HostRequest], log: LeaseLog) -> list[Acquired]:
        """Acquire hosts for ``requests`` (one batch), in order. An owning provider calls
        ``log.intent`` before creating anything and ``log.acquired`` after; if it raises
        half-way, every lease it recorded is released by the pool."""

    async def release(self, acquired: Acquired) -> None:
        """Give back one host in this session: close it, then release its lease, if any."""
        try:
            await acquired.host.close()
        finally:
            if acquired.lease is not None:
                await self.release_lease(acquired.lease)

    async def release_lease(self, lease: Lease) -> str:
        """Release what ``lease`` recorded, from the record alone (no Host object, possibly in
        another process after ``kill -9``). Returns ``released`` or ``gone`` (already not
        there); raises if it could not. Must not touch anything it cannot prove it created."""
        raise NotImplementedError(f"provider {self.name!r} owns nothing to release")


class AttachProvider(Provider):
    """A provider of hosts that already exist: acquire builds the Host object, release closes
    it. Subclasses implement ``build``."""

    @abstractmethod
    def build(self, request: HostRequest) -> Host:
        """The Host for one request (may raise LabError/HostError naming the fix)."""

    async def acquire(self, requests: list[HostRequest], log: LeaseLog) -> list[Acquired]:
        return [Acquired(self.build(r), self) for r in requests]


def new_lease_id() -> str:
    return uuid.uuid4().hex


class MemoryLeaseLog:
    """A LeaseLog kept in memory (tests, commands that acquire without a journal)."""

    def __init__(self) -> None:
        self.leases: dict[str, Lease] = {}
        self.outcomes: dict[str, list[str]] = {}

    def intent(self, provider: str, host: str, resource: dict[str, Any]) -> Lease:
        lease = Lease(new_lease_id(), provider, host, dict(resource))
        self.leases[lease.id] = lease
        return lease

    def acquired(self, lease: Lease) -> None:
        self.leases[lease.id] = lease

    def released(self, lease: Lease, outcome: str, detail: str | None = None) -> None:
        self.outcomes.setdefault(lease.id, []).append(outcome)


class _Tracking:
    """Wraps a LeaseLog to remember every lease recorded in this session, so the pool can
    release leases whose acquire raised before returning a host."""

    def __init__(self, log: LeaseLog) -> None:
        self.log = log
        self.leases: dict[str, Lease] = {}

    def intent(self, provider: str, host: str, resource: dict[str, Any]) -> Lease:
        lease = self.log.intent(provider, host, resource)
        self.leases[lease.id] = lease
        return lease

    def acquired(self, lease: Lease) -> None:
        self.log.acquired(lease)
        self.leases[lease.id] = lease

    def released(self, lease: Lease, outcome: str, detail: str | None = None) -> None:
        self.log.released(lease, outcome, detail)


ProviderLookup = Callable[[str], Provider]


class HostPool:
    """Acquire a fleet, use it, release it — exactly once per acquired host. Use as
    ``async with HostPool(requests, log, lookup) as hosts:`` (``hosts``: name → Host, the
    hosts acquired so far: it grows as ``later`` hosts are acquired)."""

    def __init__(
        self,
        requests: list[HostRequest],
        log: LeaseLog,
        lookup: ProviderLookup,
        note: Callable[[str], None] | None = None,
        *,
        later: Collection[str] = (),
        expected_s: float | None = None,
    ) -> None:
        """``later``: hosts acquired only when :meth:`acquire` names them (waves);
        ``expected_s``: the plan's expected wall time, told to each provider."""
        self.requests = requests
        self.log = _Tracking(log)
        self.lookup = lookup
        self.note = note or (lambda _msg: None)
        self.later = frozenset(later)
        self.expected_s = expected_s
        self.acquired: dict[str, Acquired] = {}
        #: name → Host of every host acquired so far (the dict ``async with`` gives)
        self.hosts: dict[str, Host] = {}
        self._released: set[str] = set()
        self._leases_released: set[str] = set()
        self._providers: dict[str, Provider] = {}

    async def __aenter__(self) -> dict[str, Host]:
        try:
            await self.acquire([r.name for r in self.requests if r.name not in self.later])
        except BaseException:
            await asyncio.shield(self.release())
            raise
        return self.hosts

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.shield(self.release())

    def _provider(self, kind: str) -> Provider:
        """The provider of ``kind``, prepared with all its hosts on first use."""
        if kind not in self._providers:
            provider = self._providers[kind] = self.lookup(kind)
            mine = [r for r in self.requests if str(getattr(r.spec, "kind", "")) == kind]
            provider.prepare(mine, self.expected_s)
        return self._providers[kind]

    async def acquire(self, names: Iterable[str] | None = None) -> None:
        """Acquire the hosts ``names`` (default: every host) not acquired yet, each
        provider's in batches, all concurrently; raises the first failure."""
        wanted = None if names is None else set(names)
        groups: dict[str, list[HostRequest]] = {}
        for req in self.requests:
            if req.name in self.acquired or (wanted is not None and req.name not in wanted):
                continue
            kind = str(getattr(req.spec, "kind", ""))
            groups.setdefault(kind, []).append(req)
        batches: list[tuple[Provider, list[HostRequest]]] = []
        for kind, reqs in groups.items():
            provider = self._provider(kind)
            size = provider.batch_size or len(reqs)
            batches += [(provider, reqs[i : i + size]) for i in range(0, len(reqs), size)]
        outcomes = await asyncio.gather(
            *(self._acquire_batch(p, reqs) for p, reqs in batches), return_exceptions=True
        )
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome

    async def _acquire_batch(self, provider: Provider, reqs: list[HostRequest]) -> None:
        got = await provider.acquire(reqs, self.log)
        names = [r.name for r in reqs]
        for acq in got:
            if acq.host.name not in names:
                raise HostError(f"provider {provider.name!r} returned unrequested {acq.host.name}")
            self.acquired[acq.host.name] = acq
            self.hosts[acq.host.name] = acq.host
        missing = [n for n in names if n not in self.acquired]
        if missing:
            raise HostError(f"provider {provider.name!r} did not acquire {', '.join(missing)}")

    async def release(self) -> None:
        """Release every acquired host and every recorded lease not yet released; never
        twice. Errors are noted and the lease stays open in the journal for a later session."""
        todo = [a for n, a in self.acquired.items() if n not in self._released]
        self._released.update(a.host.name for a in todo)
        await asyncio.gather(*(self._release_one(a) for a in todo))
        # leases whose acquire raised before a host came back
        orphans = [
            lease
            for lid, lease in self.log.leases.items()
            if lid not in self._leases_released
            and lid not in {a.lease.id for a in self.acquired.values() if a.lease}
        ]
        self._leases_released.update(lease.id for lease in orphans)
        await asyncio.gather(*(self._release_lease(lease) for lease in orphans))

    async def release_early(self, name: str) -> bool:
        """Release host ``name`` now (its last run ended) when an owning provider made it —
        a cloud instance stops billing; attached hosts stay until the end. Never twice; True
        when released here."""
        acq = self.acquired.get(name)
        if acq is None or name in self._released or not acq.provider.owns_resources:
            return False
        self._released.add(name)
        await self._release_one(acq)
        return True

    async def _release_one(self, acq: Acquired) -> None:
        lease = acq.lease
        if lease is not None:
            self._leases_released.add(lease.id)
        try:
            await acq.host.close()
        except Exception as exc:  # closing one host must not keep others from release
            self.note(f"host {acq.host.name}: close failed: {exc}")
        if lease is not None:
            await self._release_lease(lease, acq.provider)

    async def _release_lease(self, lease: Lease, provider: Provider | None = None) -> None:
        await release_recorded(lease, provider or self.lookup_provider(lease), self.log, self.note)

    def lookup_provider(self, lease: Lease) -> Provider:
        for p in self._providers.values():
            if p.name == lease.provider:
                return p
        return self.lookup(lease.provider)


async def release_recorded(
    lease: Lease, provider: Provider, log: LeaseLog, note: Callable[[str], None]
) -> str:
    """Release one lease through ``provider`` and journal the outcome (``failed`` keeps it
    open). Returns the outcome."""
    try:
        outcome = await provider.release_lease(lease)
        detail = None
    except Exception as exc:
        outcome, detail = "failed", str(exc)
        note(f"host {lease.host}: release by {provider.name} failed: {exc} (kept for later)")
    log.released(lease, outcome, detail)
    return outcome


async def release_leftovers(
    leases: Mapping[str, Lease],
    lookup: ProviderLookup,
    log: LeaseLog,
    note: Callable[[str], None],
) -> dict[str, str]:
    """Release leases an earlier session recorded and never settled (it was killed).
    Returns lease id → outcome; a provider that is not registered any more keeps its lease."""
    outcomes: dict[str, str] = {}
    for lease in leases.values():
        try:
            provider = lookup(lease.provider)
        except HostError as exc:
            note(f"host {lease.host}: cannot release {lease.resource}: {exc}")
            outcomes[lease.id] = "unknown-provider"
            continue
        outcomes[lease.id] = await release_recorded(lease, provider, log, note)
    if outcomes:
        n = sum(o in SETTLED for o in outcomes.values())
        note(f"released {n} of {len(outcomes)} hosts an earlier session left acquired")
    return outcomes
