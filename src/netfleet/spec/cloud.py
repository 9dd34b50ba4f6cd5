"""The ``cloud:`` block of a campaign spec and the ``kind: aws`` host (pure models: the AWS
provider that acts on them lives in ``netfleet.cloud``, which this module never imports).

.. code-block:: yaml

    campaign: aws-cheatsheet
    cloud:
      region: us-east-1
      placement: same-az          # cluster | same-az | none
      market: on-demand           # or spot
      backing: sim                # sim: a shaped lab namespace per instance; ssh: the machine
      fleets:
        - {name: srv, instance_type: c5n.large, role: server}
        - {name: m5, instance_type: m5.large, count: 2, role: client}   # hosts m5-1, m5-2
    tests: [...]                  # refer to srv, m5-1, m5-2 like any other host

Each fleet becomes hosts of ``kind: aws`` (one per instance: ``NAME`` when ``count`` is 1, else
``NAME-1`` … ``NAME-N``); a host may also be written out as ``{kind: aws, instance_type: …}``.
Every aws host carries the campaign's cloud settings (``cloud``), so the provider needs nothing
else to launch it.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, field_validator

from netfleet.spec.common import LabelValue, LocatedError, _check_labels, _Strict

#: usable in AWS resource names and tags, and as a directory name
CAMPAIGN_RE = re.compile(r"^[a-z][a-z0-9-]{0,39}$")
REGION_RE = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d$")
TYPE_RE = r"^[a-z][a-z0-9-]*\.[a-z0-9]+$"
Role = Literal["server", "client", "peer"]


class CloudSettings(_Strict):
    """Where and how to launch, and for how long at most (shared with ``netfleet cloud``)."""

    region: str = "us-east-1"
    availability_zone: str | None = Field(None, pattern=r"^[a-z]{2}(-[a-z]+)+-\d[a-z]$")
    placement: Literal["cluster", "same-az", "none"] = "same-az"
    market: Literal["on-demand", "spot"] = "on-demand"
    owner: str = Field(default="netfleet", pattern=r"^[A-Za-z0-9_.@+=-]{1,64}$")
    duration_minutes: float | None = Field(
        default=None,
        gt=0,
        le=24 * 60,
        description="expected run time for the cost estimate (default: the plan's estimate)",
    )
    expires_after_minutes: float = Field(
        default=120,
        gt=0,
        le=7 * 24 * 60,
        description="the dead man's switch: instances power off (and reap deletes them) after",
    )
    subnet_id: str | None = Field(default=None, pattern=r"^subnet-[0-9a-zA-Z]+$")
    vpc_cidr: str = Field("10.77.0.0/16", pattern=r"^10\.\d{1,3}\.0\.0/16$")
    controller_cidr: str = Field(default="127.0.0.1/32", pattern=r"^[0-9.]+/\d{1,2}$")
    ami: str | None = Field(default=None, pattern=r"^ami-[0-9a-zA-Z]+$")

    @field_validator("region")
    @classmethod
    def _region(cls, v: str) -> str:
        if not REGION_RE.match(v):
            raise ValueError("an AWS region name such as us-east-1")
        return v


class FleetSpec(_Strict):
    """``count`` instances of one type in one role, named ``name`` (or ``name-1`` …)."""

    name: str = Field(pattern=r"^[a-z][a-z0-9-]{0,30}$")
    instance_type: str = Field(pattern=TYPE_RE)
    count: int = Field(default=1, ge=1, le=100)
    role: Role = "peer"
    labels: dict[str, LabelValue] = Field(default_factory=dict)

    _labels = field_validator("labels")(_check_labels)

    def host_names(self) -> list[str]:
        if self.count == 1:
            return [self.name]
        return [f"{self.name}-{i}" for i in range(1, self.count + 1)]


class CloudBlock(CloudSettings):
    """The ``cloud:`` block of a campaign."""

    provider: Literal["aws"] = "aws"
    backing: Literal["sim", "ssh"] = Field(
        "sim",
        description="sim: each instance is backed by a lab namespace shaped from its advertised "
        "figures (offline, needs root); ssh: the engines run on the instances over SSH",
    )
    rate_scale: float = Field(0.05, gt=0, le=1, description="sim: lab rate = advertised × this")
    time_scale: float = Field(0.05, gt=0, le=1, description="sim: credit time × this")
    fleets: list[FleetSpec] = Field(default_factory=list)


def check_cloud_campaign(v: str) -> str:
    """A campaign name that can name AWS resources and tags and a directory."""
    if not CAMPAIGN_RE.match(v):
        raise ValueError(
            f"campaign {v!r} names cloud resources: use 1-40 characters, a lowercase letter, "
            "then [a-z0-9-]"
        )
    return v


class AwsSettings(CloudBlock):
    """What an aws host carries: the campaign's cloud block plus the campaign name."""

    campaign: str

    _campaign = field_validator("campaign")(check_cloud_campaign)


class AwsHostSpec(_Strict):
    """An EC2 instance launched for this campaign and released when it ends."""

    kind: Literal["aws"]
    instance_type: str = Field(pattern=TYPE_RE)
    role: Role = "peer"
    labels: dict[str, LabelValue] = Field(default_factory=dict)
    cloud: AwsSettings | None = Field(
        None, description="filled in from the campaign's `cloud:` block (do not write it)"
    )

    _labels = field_validator("labels")(_check_labels)


def expand_cloud(data: Any) -> Any:
    """A spec's raw data with each fleet of its ``cloud:`` block turned into ``kind: aws``
    hosts, and the block (plus the campaign name) copied into every aws host. Malformed values
    are left to the models, which name the field."""
    if not isinstance(data, dict) or not isinstance(data.get("hosts", {}), dict):
        return data
    hosts: dict[str, Any] = dict(data.get("hosts") or {})
    block = data.get("cloud")
    aws = [n for n, h in hosts.items() if isinstance(h, dict) and h.get("kind") == "aws"]
    if not isinstance(block, dict):
        if aws:
            raise LocatedError(
                f"host {aws[0]!r} is kind aws but the campaign has no `cloud:` block: add one "
                "(region, placement, market, fleets; see docs/cloud.md)",
                ("hosts", aws[0]),
            )
        return data
    settings = {k: v for k, v in block.items() if k != "fleets"}
    settings["campaign"] = data.get("campaign")
    fleets = block.get("fleets")
    for i, fleet in enumerate(fleets if isinstance(fleets, list) else []):
        if not isinstance(fleet, dict):
            continue
        try:
            names = FleetSpec.model_validate(fleet).host_names()
        except ValueError:
            continue  # the cloud block's own validation names the field
        for name in names:
            if name in hosts:
                raise LocatedError(
                    f"fleet {fleet['name']!r} makes host {name!r}, which is also under hosts: "
                    "rename one",
                    ("cloud", "fleets", i, "name"),
                )
            hosts[name] = {
                "kind": "aws",
                "instance_type": fleet["instance_type"],
                "role": fleet.get("role", "peer"),
                "labels": fleet.get("labels", {}),
            }
            aws.append(name)
    for name in aws:
        if "cloud" not in hosts[name]:
            hosts[name] = {**hosts[name], "cloud": settings}
    return {**data, "hosts": hosts}
