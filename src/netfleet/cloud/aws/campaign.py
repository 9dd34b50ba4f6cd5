"""The cloud part of a campaign: what ``netfleet cloud plan/up`` read from a ``*.cloud.yaml``, and
what ``netfleet run`` builds from a campaign spec's ``cloud:`` block (``netfleet.spec.cloud``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import Field, field_validator, model_validator

from netfleet.spec.cloud import (
    TYPE_RE,
    AwsHostSpec,
    AwsSettings,
    CloudSettings,
    Member,
    Role,
    SiteFields,
    check_cloud_campaign,
    check_sites,
    regions_of,
    vpc_cidr_for,
)

if TYPE_CHECKING:
    from netfleet.hosts.provider import HostRequest

#: the cost estimate's run time when neither the file nor a plan says
DEFAULT_DURATION_MINUTES = 10.0


class Fleet(SiteFields):
    """``count`` instances of one type in one role (optionally in its own region/zone)."""

    instance_type: str = Field(pattern=TYPE_RE)
    count: int = Field(default=1, ge=1, le=100)
    role: Role = "peer"
    name: str | None = Field(
        None,
        pattern=r"^[a-z][a-z0-9-]{0,30}$",
        description="fleets of one name share a zone (netfleet run: the campaign's fleet)",
    )


class CloudSpec(CloudSettings):
    """Where and what to launch, and for how long at most."""

    campaign: str
    fleets: list[Fleet] = Field(min_length=1)

    _campaign = field_validator("campaign")(check_cloud_campaign)

    @model_validator(mode="after")
    def _sites(self) -> CloudSpec:
        check_sites(self, self.members())
        return self

    def group(self, index: int) -> str:
        """The zone-sharing unit of fleet ``index``: its name, else itself."""
        return self.fleets[index].name or f"#{index}"

    def members(self) -> list[Member]:
        """One :class:`Member` per group (the first fleet of each name)."""
        seen: dict[str, Member] = {}
        for i, f in enumerate(self.fleets):
            seen.setdefault(
                self.group(i),
                Member(("fleets", i), f.name or f.instance_type, f.region, f.availability_zone),
            )
        return list(seen.values())

    def region_of(self, fleet: Fleet) -> str:
        return fleet.region or self.region

    @property
    def regions(self) -> list[str]:
        """The block's region first, then the fleets' other regions in order."""
        return regions_of(self, (f.region for f in self.fleets))

    def vpc_cidr_in(self, region: str) -> str:
        return vpc_cidr_for(self, self.regions.index(region))

    @property
    def instance_count(self) -> int:
        return sum(f.count for f in self.fleets)

    @property
    def minutes(self) -> float:
        return self.duration_minutes or DEFAULT_DURATION_MINUTES

    @classmethod
    def of_hosts(cls, settings: AwsSettings, hosts: Sequence[AwsHostSpec]) -> CloudSpec:
        """The CloudSpec of a campaign's EC2 hosts: one fleet per host, in order (hosts of one
        campaign fleet share its name, hence its zone)."""
        common = settings.model_dump(include=set(CloudSettings.model_fields))
        fleets = [
            Fleet(
                instance_type=h.machine,
                role=h.role,
                name=h.fleet,
                region=h.region,
                availability_zone=h.availability_zone,
            )
            for h in hosts
        ]
        return cls(campaign=settings.campaign, fleets=fleets, **common)


def host_requests(cs: CloudSpec) -> list[HostRequest]:
    """The ``kind: aws`` host requests of a launch-only file (``netfleet cloud up``): one per
    instance, named ``<fleet name>-<n>`` (or ``<role>-<type>-<n>``), n from 0, each carrying the
    file's settings — what the seam's ``acquire`` launches. ``cloud up`` stops before
    bootstrap (nothing is measured, no host is reached), so the settings' ``backing`` is never
    read; every launch field was validated with the file."""
    from netfleet.hosts.provider import HostRequest

    common = cs.model_dump(include=set(CloudSettings.model_fields))
    settings = AwsSettings.model_construct(
        **common, campaign=cs.campaign, backing="ssh", fleets=[], fargate=None
    )
    out: list[HostRequest] = []
    seen: dict[str, int] = {}
    for index, fleet in enumerate(cs.fleets):
        base = fleet.name or f"{fleet.role}-{fleet.instance_type.replace('.', '-')}"
        for _ in range(fleet.count):
            n = seen[base] = seen.get(base, -1) + 1
            spec = AwsHostSpec(
                kind="aws",
                instance_type=fleet.instance_type,
                role=fleet.role,
                region=fleet.region,
                availability_zone=fleet.availability_zone,
                fleet=fleet.name or f"fleet-{index}",  # a fleet's instances share a zone
            ).model_copy(update={"cloud": settings})  # (validated with the file, above)
            out.append(HostRequest(f"{base}-{n}", spec))
    return out
