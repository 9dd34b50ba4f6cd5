"""The cloud part of a campaign: what ``netfleet cloud plan/up`` read from a ``*.cloud.yaml``, and
what ``netfleet run`` builds from a campaign spec's ``cloud:`` block (``netfleet.spec.cloud``)."""

from __future__ import annotations

from pydantic import Field, field_validator

from netfleet.spec.cloud import (
    TYPE_RE,
    AwsSettings,
    CloudSettings,
    Role,
    check_cloud_campaign,
)
from netfleet.spec.common import _Strict

#: the cost estimate's run time when neither the file nor a plan says
DEFAULT_DURATION_MINUTES = 10.0


class Fleet(_Strict):
    """``count`` instances of one type in one role."""

    instance_type: str = Field(pattern=TYPE_RE)
    count: int = Field(default=1, ge=1, le=100)
    role: Role = "peer"


class CloudSpec(CloudSettings):
    """Where and what to launch, and for how long at most."""

    campaign: str
    fleets: list[Fleet] = Field(min_length=1)

    _campaign = field_validator("campaign")(check_cloud_campaign)

    @property
    def instance_count(self) -> int:
        return sum(f.count for f in self.fleets)

    @property
    def minutes(self) -> float:
        return self.duration_minutes or DEFAULT_DURATION_MINUTES

    @classmethod
    def of_hosts(cls, settings: AwsSettings, types: list[tuple[str, str]]) -> CloudSpec:
        """The CloudSpec of a campaign's aws hosts: (instance_type, role) per host."""
        common = settings.model_dump(include=set(CloudSettings.model_fields))
        fleets = [Fleet(instance_type=t, role=r) for t, r in types]
        return cls(campaign=settings.campaign, fleets=fleets, **common)
