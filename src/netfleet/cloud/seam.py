"""The provider seam: what the provider-neutral lifecycle asks of one cloud.

A cloud is one package implementing :class:`Cloud` — ``catalogue``, ``price`` and ``quota``
(plan; :mod:`netfleet.cloud.guard` holds every launch to the last two),
``acquire`` (machines, each journalled before it exists), ``bootstrap`` (machines → hosts the
runner can use) and ``release`` (give back what a :class:`Scope` names, from the record alone).
:class:`netfleet.cloud.lifecycle.CloudProvider` walks a campaign through them; nothing in the
lifecycle knows which cloud it drives. AWS is :class:`netfleet.cloud.aws.provider.AwsCloud`;
docs/extending.md, "Adding a second cloud", shows a whole small one.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from netfleet.hosts.base import Host
from netfleet.hosts.provider import HostRequest, Lease, LeaseLog


class Advertised(Protocol):
    """What a cloud advertises for one machine type (its catalogue entry)."""

    @property
    def instance_type(self) -> str: ...
    @property
    def vcpus(self) -> int: ...
    @property
    def baseline_gbps(self) -> float | None:
        """Gbit/s it sustains (wire rate, as the cloud advertises it); None: not said."""

    @property
    def peak_gbps(self) -> float | None:
        """Gbit/s it reaches while it has credits; None: not said."""

    @property
    def burstable(self) -> bool:
        """The figure is "up to": a credit bucket above a lower baseline."""

    def labels(self) -> dict[str, str]:
        """Host labels recorded with every run on a machine of this type."""
        ...


@dataclass(frozen=True)
class Price:
    """What holding machines costs, before anything exists."""

    usd: float | None  #: None: a price is unknown (then no guard can vouch for the cost)
    source: str  #: where the prices come from (a dated table, an API…)
    unknown: tuple[str, ...] = ()  #: machine types without a price
    #: what the priced machines cost when ``usd`` is None (named beside the refusal)
    subtotal: float | None = None
    #: the most machines held at once when the cloud's own plan holds them in turns (AWS's
    #: waves: ``--max-instances`` bounds this); None: every request, throughout
    machines: int | None = None


@dataclass(frozen=True)
class Quota:
    """What the account's limits say about the requested machines, before anything exists."""

    #: each limit the requests would break, naming what to raise (empty: they fit)
    over: tuple[str, ...] = ()
    #: what could not be checked, and why (never a reason to refuse on its own)
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Machine:
    """One machine a cloud acquired for one host request, before bootstrap."""

    request: HostRequest
    lease: Lease
    #: the cloud's own record of it (an EC2 instance, a Fargate task, a namespace…), read
    #: back only by the same cloud's ``bootstrap``
    detail: Any = None


@dataclass(frozen=True)
class Scope:
    """What :func:`netfleet.cloud.release.give_back` gives back.

    * ``lease`` — one lease, from its record alone: a host whose last run ended, every host
      at the campaign's end or failure, or an earlier session's after ``kill -9``;
    * ``campaign`` — everything of one campaign (``cloud destroy``, a failed ``cloud up``);
    * ``expired`` — every campaign whose expiry stamp is before ``now`` (``cloud reap``).
    """

    what: Literal["lease", "campaign", "expired"]
    lease: Lease | None = None
    campaign: str | None = None
    #: regions (or the cloud's own places) to sweep besides those the journal names
    regions: tuple[str, ...] = ()
    now: dt.datetime | None = None
    #: ``expired`` only: every installation's campaigns, not only this one's
    all_owners: bool = False

    @classmethod
    def of_lease(cls, lease: Lease) -> Scope:
        return cls("lease", lease=lease)

    @classmethod
    def of_campaign(cls, campaign: str, regions: Sequence[str] = ()) -> Scope:
        return cls("campaign", campaign=campaign, regions=tuple(regions))

    @classmethod
    def expired_before(
        cls, now: dt.datetime, regions: Sequence[str] = (), *, all_owners: bool = False
    ) -> Scope:
        return cls("expired", now=now, regions=tuple(regions), all_owners=all_owners)


@dataclass
class Released:
    """What a release did: ``released`` or ``gone`` (already not there), and what the cloud
    still counts afterwards (kind → number; every count 0 when nothing is left)."""

    outcome: str
    remaining: dict[str, int] = field(default_factory=dict)
    #: ``expired`` scopes: what was found (the cloud's own rows, e.g. one per campaign)
    found: list[Any] = field(default_factory=list)
    #: ``campaign`` scopes: what was deleted, by kind (the cloud's own counts)
    deleted: dict[str, int] = field(default_factory=dict)


class Cloud(Protocol):
    """One cloud behind the seam. ``name`` is its host kind (the registry's name, recorded
    with every lease)."""

    name: str

    def catalogue(self, requests: Sequence[HostRequest]) -> Mapping[str, Advertised]:
        """The advertised figures of every machine type the requests name (plan)."""
        ...

    def price(self, requests: Sequence[HostRequest], hours: float) -> Price:
        """What holding the requested machines for ``hours`` costs (plan). A cloud that cannot
        say returns ``usd=None``: :mod:`netfleet.cloud.guard` then refuses the launch. A cloud
        whose run follows a plan of its own (AWS: the waves ``netfleet run`` follows) prices
        that plan and says how many machines it holds at once (``Price.machines``)."""
        ...

    def quota(self, requests: Sequence[HostRequest]) -> Quota:
        """The account's limits for the requested machines (plan): the guard refuses a launch
        that would break one (a fleet stopped half-way by the cloud)."""
        ...

    async def acquire(self, requests: list[HostRequest], log: LeaseLog) -> list[Machine]:
        """Create one machine per request, in order: ``log.intent`` before each create,
        ``log.acquired`` after. Raising half-way is fine: every lease recorded is released."""
        ...

    async def bootstrap(self, machines: list[Machine]) -> list[Host]:
        """The hosts the runner uses, one per machine in the same order, each ready (keys
        pinned, engines there)."""
        ...

    async def release(self, scope: Scope) -> Released:
        """Give back what ``scope`` names, touching only what this installation created;
        raise if it could not (the lease then stays open for a later session)."""
        ...
