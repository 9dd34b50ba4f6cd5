"""The campaign's lifecycle on any cloud: plan → acquire → bootstrap → measure → collect →
release, as an owning host provider the runner drives.

:class:`CloudProvider` is the runner's host provider for one
:class:`~netfleet.cloud.seam.Cloud`: ``acquire`` asks the cloud for its catalogue and prices
(plan: a machine type the cloud does not offer fails before anything exists), then for the
machines (each journalled before it is created), then bootstraps them into hosts; the runner
measures on those hosts and collects the results into the store; every lease goes back
through :func:`netfleet.cloud.release.give_back`, the one release path. A cloud package
registers ``CloudProvider(TheCloud())`` (or a subclass) under its host kind —
docs/extending.md, "Adding a second cloud"."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from netfleet.cloud.release import give_back
from netfleet.cloud.seam import Advertised, Cloud, Price, Scope
from netfleet.errors import HostError
from netfleet.hosts.provider import Acquired, HostRequest, Lease, LeaseLog, Provider


class CloudProvider(Provider):
    """The host lifecycle on one cloud (an *owning* provider: docs/hosts.md)."""

    owns_resources: ClassVar[bool] = True

    def __init__(self, cloud: Cloud) -> None:
        self.cloud = cloud
        self.name = cloud.name  # type: ignore[misc]  # the cloud's kind, per instance
        #: machine type → advertised figures, of this session's acquires (plan)
        self.offered: dict[str, Advertised] = {}
        #: what this session's acquires cost per hour, as the cloud priced them (plan)
        self.hourly: list[Price] = []

    def plan(self, requests: list[HostRequest]) -> Mapping[str, Advertised]:
        """The catalogue entries of the requested machine types (the cloud refuses a type it
        does not offer, before anything exists) and what holding them costs per hour."""
        found = self.cloud.catalogue(requests)
        self.offered.update(found)
        self.hourly.append(self.cloud.price(requests, 1.0))
        return found

    async def acquire(self, requests: list[HostRequest], log: LeaseLog) -> list[Acquired]:
        self.plan(requests)
        machines = await self.cloud.acquire(requests, log)
        hosts = await self.cloud.bootstrap(machines)
        if len(hosts) != len(machines):
            raise HostError(
                f"{self.cloud.name}: bootstrap gave {len(hosts)} hosts for {len(machines)} machines"
            )
        return [Acquired(h, self, m.lease) for h, m in zip(hosts, machines, strict=True)]

    async def release_lease(self, lease: Lease) -> str:
        return (await give_back(self.cloud, Scope.of_lease(lease))).outcome
