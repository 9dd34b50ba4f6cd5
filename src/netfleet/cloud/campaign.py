"""The cloud part of a campaign (a separate model so spec/models.py stays untouched)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from netfleet.cloud.journal import CAMPAIGN_RE, REGION_RE

TYPE_RE = r"^[a-z][a-z0-9-]*\.[a-z0-9]+$"


class Fleet(BaseModel):
    """``count`` instances of one type in one role."""

    model_config = ConfigDict(extra="forbid")
    instance_type: str = Field(pattern=TYPE_RE)
    count: int = Field(default=1, ge=1, le=100)
    role: Literal["server", "client", "peer"] = "peer"


class CloudSpec(BaseModel):
    """Where and what to launch, and for how long at most."""

    model_config = ConfigDict(extra="forbid")
    campaign: str
    region: str = "us-east-1"
    availability_zone: str | None = None
    placement: Literal["cluster", "same-az", "none"] = "same-az"
    market: Literal["on-demand", "spot"] = "on-demand"
    fleets: list[Fleet] = Field(min_length=1)
    owner: str = Field(default="netfleet", pattern=r"^[A-Za-z0-9_.@+=-]{1,64}$")
    duration_minutes: float = Field(default=10, gt=0, le=24 * 60)
    #: the dead man's switch: user-data powers the instance off after this, and reap deletes it
    expires_after_minutes: float = Field(default=120, gt=0, le=7 * 24 * 60)
    subnet_id: str | None = Field(default=None, pattern=r"^subnet-[0-9a-zA-Z]+$")
    vpc_cidr: str = "10.77.0.0/16"
    controller_cidr: str = Field(default="127.0.0.1/32", pattern=r"^[0-9.]+/\d{1,2}$")
    ami: str | None = Field(default=None, pattern=r"^ami-[0-9a-zA-Z]+$")

    @field_validator("campaign")
    @classmethod
    def _campaign(cls, v: str) -> str:
        if not CAMPAIGN_RE.match(v):
            raise ValueError("use 1-40 characters: a lowercase letter, then [a-z0-9-]")
        return v

    @field_validator("region")
    @classmethod
    def _region(cls, v: str) -> str:
        if not REGION_RE.match(v):
            raise ValueError("an AWS region name such as us-east-1")
        return v

    @property
    def instance_count(self) -> int:
        return sum(f.count for f in self.fleets)
