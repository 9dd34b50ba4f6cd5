"""The ``cloud:`` block of a campaign spec and the ``kind: aws`` host (pure models: the AWS
provider that acts on them lives in ``netfleet.cloud``, which this module never imports).

.. code-block:: yaml

    campaign: aws-cheatsheet
    cloud:
      region: us-east-1
      placement: same-az          # cluster | same-az | cross-az | cross-region | none
      image: al2023               # or debian-12 / debian-13 (or `ami: ami-…`)
      market: on-demand           # or spot
      backing: sim                # sim: a shaped lab namespace per instance; ssh: the machine
      fleets:
        - {name: srv, instance_type: c5n.large, role: server}
        - {name: m5, instance_type: m5.large, count: 2, role: client}   # hosts m5-1, m5-2
    tests: [...]                  # refer to srv, m5-1, m5-2 like any other host

Each fleet becomes hosts of ``kind: aws`` (one per instance: ``NAME`` when ``count`` is 1, else
``NAME-1`` … ``NAME-N``); a host may also be written out as ``{kind: aws, instance_type: …}``.
Each Fargate tier (``fargate: {tiers: [{cpu: 256, memory: 512}, …]}``, seed 000) becomes a host
``{kind: aws, fargate: {cpu, memory}, role: server}`` named after the tier (``f256-512m``).
Every aws host carries the campaign's cloud settings (``cloud``), so the provider needs nothing
else to launch it.

A fleet may name its own ``region:`` (placement ``cross-region``) and ``availability_zone:``
(``cross-az``, ``cross-region``, ``none``); :func:`check_sites` refuses the combinations that
cannot hold (a region override with ``same-az``, ``cross-region`` within one region, …) with the
field named.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from netfleet.spec.common import LabelValue, LocatedError, _check_labels, _Strict

#: usable in AWS resource names and tags, and as a directory name
CAMPAIGN_RE = re.compile(r"^[a-z][a-z0-9-]{0,39}$")
REGION_RE = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d$")
AZ_PATTERN = r"^[a-z]{2}(-[a-z]+)+-\d[a-z]$"
TYPE_RE = r"^[a-z][a-z0-9-]*\.[a-z0-9]+$"
Role = Literal["server", "client", "peer"]
Placement = Literal["cluster", "same-az", "cross-az", "cross-region", "none"]
#: ``image:`` choices: Amazon Linux 2023 (SSM public parameter) or Debian (owner + name)
Image = Literal["al2023", "debian-12", "debian-13"]
DEFAULT_IMAGE_FAMILY: Image = "al2023"


class CloudSettings(_Strict):
    """Where and how to launch, and for how long at most (shared with ``netfleet cloud``)."""

    region: str = "us-east-1"
    availability_zone: str | None = Field(None, pattern=AZ_PATTERN)
    placement: Placement = Field(
        "same-az",
        description="cluster: one placement group; same-az: one zone; cross-az: each fleet in "
        "its own zone of the region; cross-region: fleets in two or more regions (a fleet's "
        "`region:`); none: no constraint (a fleet may pick its zone)",
    )
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
    controller_cidr: str | None = Field(
        default=None,
        pattern=r"^[0-9.]+/\d{1,2}$",
        description="the public address range netfleet's controller connects from (SSH to the "
        "instances); required for backing ssh, e.g. your address/32",
    )
    ami: str | None = Field(default=None, pattern=r"^ami-[0-9a-zA-Z]+$")
    image: Image | None = Field(
        default=None,
        description="al2023 (default: SSM public parameter), debian-12 or debian-13 (Debian's "
        "own AMIs, owner 136693071363, newest by name); or give `ami:` instead",
    )

    path: Literal["auto", "private", "public"] = Field(
        default="auto",
        description="the addresses hosts meet at: private (inside the VPC), public (through the "
        "internet gateway: seed 003's path, MTU 1500 and the gateway's limit); auto: private, "
        "public across regions",
    )

    @field_validator("region")
    @classmethod
    def _region(cls, v: str) -> str:
        if not REGION_RE.match(v):
            raise ValueError("an AWS region name such as us-east-1")
        return v

    @model_validator(mode="after")
    def _one_image(self) -> CloudSettings:
        if self.ami is not None and self.image is not None:
            raise LocatedError(
                f"`ami: {self.ami}` and `image: {self.image}` both choose the machine image: "
                "keep one (`image:` looks the newest AMI up in each region)",
                ("image",),
            )
        if self.availability_zone and not in_region(self.availability_zone, self.region):
            raise LocatedError(
                f"availability_zone {self.availability_zone} is not in region {self.region}: "
                f"use one of its zones ({self.region}a, {self.region}b, …)",
                ("availability_zone",),
            )
        return self

    @property
    def image_family(self) -> Image:
        """What the AMI is: ``al2023`` also for an explicit ``ami:`` (assumed Amazon Linux)."""
        return self.image or DEFAULT_IMAGE_FAMILY


def in_region(zone: str, region: str) -> bool:
    """An availability zone name is its region's name plus a letter (us-east-1a)."""
    return zone[:-1] == region


class SiteFields(_Strict):
    """Where one fleet (or host) runs, when not where the cloud block says."""

    region: str | None = Field(
        None, description="this fleet's region (placement cross-region); default: the block's"
    )
    availability_zone: str | None = Field(
        None,
        pattern=AZ_PATTERN,
        description="this fleet's zone (cross-az, cross-region, none); cross-az picks distinct "
        "zones for the fleets without one",
    )

    @field_validator("region")
    @classmethod
    def _region(cls, v: str | None) -> str | None:
        if v is not None and not REGION_RE.match(v):
            raise ValueError("an AWS region name such as eu-west-1")
        return v


class FleetSpec(SiteFields):
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


# -- where the fleets run: regions, zones, placement ------------------------------------------


@dataclass(frozen=True)
class Member:
    """One fleet (or written-out aws host) as :func:`check_sites` sees it."""

    loc: tuple[str | int, ...]  #: where it is written; its fields are ``loc + (field,)``
    name: str
    region: str | None
    zone: str | None


def regions_of(settings: CloudSettings, regions: Iterable[str | None]) -> list[str]:
    """The regions the fleets use (None: the block's): the block's first, then the others in
    the order the fleets name them."""
    used = [r or settings.region for r in regions]
    out = [settings.region] if settings.region in used else []
    for r in used:
        if r not in out:
            out.append(r)
    return out


def vpc_cidr_for(settings: CloudSettings, index: int) -> str:
    """The campaign VPC's CIDR in the ``index``-th region of :func:`regions_of`: ``vpc_cidr``
    (10.77.0.0/16) in the first, then 10.78.0.0/16, 10.79.0.0/16 … — distinct, so a peering
    or a rule naming another region's VPC never overlaps."""
    second = int(settings.vpc_cidr.split(".")[1]) + index
    return f"10.{second}.0.0/16"


def public_path(settings: CloudSettings, regions: int) -> bool:
    """Do the hosts meet at their public addresses (``path``; ``auto``: across regions)?"""
    return settings.path == "public" or (settings.path == "auto" and regions > 1)


def check_sites(settings: CloudSettings, members: list[Member]) -> None:
    """Refuse (LocatedError naming the field) what ``placement`` cannot hold."""
    p = settings.placement
    for m in members:
        region = m.region or settings.region
        if region != settings.region and p != "cross-region":
            raise LocatedError(
                f"{m.name!r} is in region {region}, but placement {p} keeps every fleet in "
                f"{settings.region}: use `placement: cross-region`, or drop its region",
                (*m.loc, "region"),
            )
        if m.zone and not in_region(m.zone, region):
            raise LocatedError(
                f"{m.name!r}: availability_zone {m.zone} is not in its region {region}",
                (*m.loc, "availability_zone"),
            )
        if m.zone and p in ("same-az", "cluster") and m.zone != settings.availability_zone:
            raise LocatedError(
                f"{m.name!r} names zone {m.zone}, but placement {p} puts every fleet in one "
                "zone: set availability_zone on the cloud block, or use `placement: cross-az`",
                (*m.loc, "availability_zone"),
            )
    regions = regions_of(settings, (m.region for m in members))
    if p == "cross-region" and len(regions) < 2:
        raise LocatedError(
            "placement cross-region needs fleets in at least two regions, all are in "
            f"{(regions or [settings.region])[0]}: give a fleet `region:` (e.g. eu-west-1)",
            ("placement",),
        )
    if p == "cross-region" and settings.ami:
        raise LocatedError(
            f"ami {settings.ami} exists in one region only: with placement cross-region use "
            "`image:` (al2023, debian-12, debian-13), looked up in each region",
            ("ami",),
        )
    if p in ("cross-az", "cross-region") and settings.subnet_id:
        raise LocatedError(
            f"subnet_id is one subnet in one zone: not with placement {p} (netfleet creates "
            "a VPC per region and a subnet per zone): leave it out",
            ("subnet_id",),
        )
    if p == "cross-az":
        if settings.availability_zone:
            raise LocatedError(
                "placement cross-az spreads the fleets over zones: give availability_zone per "
                "fleet (or none: netfleet picks distinct zones), not on the cloud block",
                ("availability_zone",),
            )
        if len(members) < 2:
            raise LocatedError(
                "placement cross-az needs at least two fleets (each gets its own zone)",
                ("placement",),
            )
        zones = {m.zone for m in members}
        if None not in zones and len(zones) < 2:
            raise LocatedError(
                f"placement cross-az, but every fleet names zone {members[-1].zone}: give them "
                "different zones, or leave them out (netfleet picks distinct ones)",
                (*members[-1].loc, "availability_zone"),
            )
    if settings.path == "private" and len(regions) > 1:
        raise LocatedError(
            f"path private, but the fleets are in {len(regions)} regions: without VPC peering "
            "hosts in different regions meet only at their public addresses: use `path: public` "
            "(or auto)",
            ("path",),
        )
    last = int(settings.vpc_cidr.split(".")[1]) + len(regions) - 1
    if last > 255:
        raise LocatedError(
            f"{len(regions)} regions need {len(regions)} VPC CIDRs from {settings.vpc_cidr} "
            f"upwards (10.x.0.0/16, x + 1 per region): pick a lower vpc_cidr",
            ("vpc_cidr",),
        )


# -- Fargate tiers (seed 000) ----------------------------------------------------------------


def _steps(lo: int, hi: int, step: int) -> tuple[int, ...]:
    return tuple(range(lo, hi + 1, step))


#: CPU units → legal task memory (MiB) on Fargate (Linux)
LEGAL_MEMORY: dict[int, tuple[int, ...]] = {
    256: (512, 1024, 2048),
    512: _steps(1024, 4096, 1024),
    1024: _steps(2048, 8192, 1024),
    2048: _steps(4096, 16384, 1024),
    4096: _steps(8192, 30720, 1024),
    8192: _steps(16384, 61440, 4096),
    16384: _steps(32768, 122880, 8192),
}
IPERF3_PORT = 5201
DEFAULT_IMAGE = "networkstatic/iperf3"  # a tag: fine for backing sim (never pulled)
#: an image pinned by its content digest
DIGEST_RE = re.compile(r"@sha256:[0-9a-f]{64}$")


def _gib(mib: int) -> str:
    return f"{mib / 1024:g} GB"


def legal_values(cpu: int) -> str:
    """The legal memory values of ``cpu``, as AWS's table writes them."""
    mem = LEGAL_MEMORY[cpu]
    if len(mem) <= 7:
        return ", ".join(f"{m}" for m in mem) + " MiB"
    return (
        f"{mem[0]}-{mem[-1]} MiB ({_gib(mem[0])} to {_gib(mem[-1])}) in steps of {mem[1] - mem[0]}"
    )


def check_pair(cpu: int, memory: int) -> str | None:
    """None when (cpu, memory) is a legal Fargate pair, else what is wrong and the legal values."""
    if cpu not in LEGAL_MEMORY:
        return (
            f"cpu {cpu} is not a Fargate CPU value: use one of {', '.join(map(str, LEGAL_MEMORY))}"
        )
    if memory not in LEGAL_MEMORY[cpu]:
        return f"memory {memory} MiB is not legal with cpu {cpu}: use {legal_values(cpu)}"
    return None


def tier_name(cpu: int, memory: int) -> str:
    """Short, namespace-safe (≤ 10 characters): f256-512m, f2048-16g, f16k-120g."""
    c = "16k" if cpu == 16384 else str(cpu)
    m = f"{memory}m" if memory % 1024 else f"{memory // 1024}g"
    return f"f{c}-{m}"


class TierSpec(BaseModel):
    """One Fargate size: ``cpu`` units (1024 = 1 vCPU) and ``memory`` MiB."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    cpu: int = Field(description="CPU units: 256, 512, 1024, 2048, 4096, 8192 or 16384")
    memory: int = Field(description="MiB; the legal values depend on cpu (AWS's table)")

    @model_validator(mode="after")
    def _legal(self) -> TierSpec:
        problem = check_pair(self.cpu, self.memory)
        if problem:
            raise ValueError(problem)
        return self

    @property
    def name(self) -> str:
        return tier_name(self.cpu, self.memory)

    @property
    def vcpu(self) -> float:
        return self.cpu / 1024

    @property
    def memory_gb(self) -> float:
        return self.memory / 1024


class FargateBlock(BaseModel):
    """The ``fargate:`` part of a cloud campaign: which tiers run an iperf3 server task."""

    model_config = ConfigDict(extra="forbid")
    tiers: list[TierSpec] = Field(min_length=1, max_length=40)
    image: str = Field(
        default=DEFAULT_IMAGE,
        pattern=r"^[a-z0-9][a-z0-9._/:@-]{0,199}$",
        description="a public image with iperf3 and coreutils `timeout` on its PATH",
    )
    port: int = Field(default=IPERF3_PORT, ge=1024, le=65535)

    @model_validator(mode="after")
    def _distinct(self) -> FargateBlock:
        names = [t.name for t in self.tiers]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"tiers listed twice: {', '.join(dup)}; list each cpu/memory once")
        return self


class CloudBlock(CloudSettings):
    """The ``cloud:`` block of a campaign."""

    provider: Literal["aws"] = "aws"
    backing: Literal["sim", "ssh"] = Field(
        description="required: sim: each instance is backed by a lab namespace shaped from its "
        "advertised figures (offline, needs root, loopback emulator only); ssh: the engines run "
        "on the instances over SSH (real machines, real bill)",
    )
    rate_scale: float = Field(0.05, gt=0, le=1, description="sim: lab rate = advertised × this")
    time_scale: float = Field(0.05, gt=0, le=1, description="sim: credit time × this")
    fleets: list[FleetSpec] = Field(default_factory=list)
    fargate: FargateBlock | None = Field(
        None,
        description="Fargate tiers: one iperf3 server task per tier (hosts named after the "
        "tier: f256-512m …), measured from an EC2 fleet in the same VPC and security group",
    )

    @model_validator(mode="after")
    def _reachable(self) -> CloudBlock:
        if self.backing == "ssh":
            problem = ssh_reach_problem(self.controller_cidr)
            if problem:
                raise LocatedError(problem, ("controller_cidr",))
            if self.fargate is not None and not DIGEST_RE.search(self.fargate.image):
                raise LocatedError(
                    f"the Fargate image {self.fargate.image!r} is a tag, which its publisher "
                    "can move: backing ssh runs it on AWS, so pin it by digest "
                    "(`image: NAME@sha256:<64 hex digits>`, from `docker buildx imagetools "
                    "inspect NAME` or your registry)",
                    ("fargate", "image"),
                )
        return self


def ssh_reach_problem(cidr: str | None) -> str | None:
    """Why SSH from the controller could not possibly reach the instances' public addresses
    with ``controller_cidr`` as the only source the security group admits (None: it can)."""
    import ipaddress

    fix = (
        "set cloud.controller_cidr to the public address this machine connects from, as /32 "
        "(the address `curl https://checkip.amazonaws.com` prints, then /32)"
    )
    if cidr is None:
        return f"backing ssh connects to the instances over SSH: controller_cidr is required: {fix}"
    try:
        net = ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return f"controller_cidr {cidr!r} is not an IPv4 network: {fix}"
    if net.is_loopback:
        return f"controller_cidr {cidr} is a loopback range: no SSH from outside can match: {fix}"
    if net.prefixlen == 0:
        return f"controller_cidr {cidr} admits SSH from the whole internet: {fix}"
    if not net.is_global:
        return (
            f"controller_cidr {cidr} is not a public range (private, shared or reserved): the "
            "instances are reached at their "
            f"public addresses, where SSH arrives from a public source: {fix}"
        )
    return None


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


class AwsHostSpec(SiteFields):
    """An EC2 instance (``instance_type``) or a Fargate task (``fargate: {cpu, memory}``, an
    iperf3 server) launched for this campaign and released when it ends."""

    kind: Literal["aws"]
    instance_type: str | None = Field(None, pattern=TYPE_RE)
    fargate: TierSpec | None = Field(None, description="a Fargate task of this size")
    role: Role = "peer"
    labels: dict[str, LabelValue] = Field(default_factory=dict)
    cloud: AwsSettings | None = Field(
        None, description="filled in from the campaign's `cloud:` block (do not write it)"
    )
    fleet: str | None = Field(
        None, description="filled in: the fleet this host comes from (do not write it)"
    )

    _labels = field_validator("labels")(_check_labels)

    @model_validator(mode="after")
    def _one_machine(self) -> AwsHostSpec:
        if (self.instance_type is None) == (self.fargate is None):
            raise ValueError(
                "an aws host is an EC2 instance (`instance_type: m5.large`) or a Fargate task "
                "(`fargate: {cpu: 256, memory: 512}`): give exactly one"
            )
        if self.fargate is not None and (self.region or self.availability_zone):
            raise ValueError(
                "a Fargate task runs in the cloud block's region and subnet: remove its "
                "region/availability_zone"
            )
        return self

    @property
    def machine(self) -> str:
        """The ``instance_type`` label: the EC2 type, or ``fargate-<cpu>-<memory>``."""
        if self.fargate is not None:
            return f"fargate-{self.fargate.cpu}-{self.fargate.memory}"
        assert self.instance_type is not None
        return self.instance_type


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
    if "backing" not in block:
        raise LocatedError(
            "the `cloud:` block must name its backing: `backing: sim` (a shaped lab namespace per "
            "instance, against a loopback AWS emulator only) or `backing: ssh` (the real "
            "instances over SSH: real machines, real bill)",
            ("cloud",),
        )
    settings = {k: v for k, v in block.items() if k != "fleets"}
    settings["campaign"] = data.get("campaign")
    fleets = block.get("fleets")
    members = [_member(("hosts", n), n, hosts[n]) for n in aws]
    for i, fleet in enumerate(fleets if isinstance(fleets, list) else []):
        if not isinstance(fleet, dict):
            continue
        try:
            spec = FleetSpec.model_validate(fleet)
        except ValueError:
            continue  # the cloud block's own validation names the field
        members.append(
            Member(("cloud", "fleets", i), spec.name, spec.region, spec.availability_zone)
        )
        site = {k: fleet[k] for k in ("region", "availability_zone") if fleet.get(k)}
        for name in spec.host_names():
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
                "fleet": spec.name,
                **site,
            }
            aws.append(name)
    _check_block_sites(block, [m for m in members if m is not None])
    fargate = block.get("fargate")
    tiers = fargate.get("tiers") if isinstance(fargate, dict) else None
    seen: set[str] = set()
    for i, raw in enumerate(tiers if isinstance(tiers, list) else []):
        try:
            tier = TierSpec.model_validate(raw)
        except ValueError:
            continue  # the cloud block's own validation names the field
        if tier.name in seen:
            continue  # FargateBlock says "listed twice"
        seen.add(tier.name)
        if tier.name in hosts:
            raise LocatedError(
                f"Fargate tier {tier.cpu}/{tier.memory} makes host {tier.name!r}, which is also "
                "under hosts: rename that host",
                ("cloud", "fargate", "tiers", i),
            )
        tier_host = {"kind": "aws", "fargate": {"cpu": tier.cpu, "memory": tier.memory}}
        hosts[tier.name] = {**tier_host, "role": "server"}
        aws.append(tier.name)
    for name in aws:
        if "cloud" not in hosts[name]:
            hosts[name] = {**hosts[name], "cloud": settings}
    return {**data, "hosts": hosts}


def _member(loc: tuple[str | int, ...], name: str, host: Any) -> Member | None:
    """A written-out EC2 host as a :class:`Member` (None: a Fargate task, or malformed — the
    host's own validation names the field)."""
    if not isinstance(host, dict) or host.get("fargate") is not None:
        return None
    region, zone = host.get("region"), host.get("availability_zone")
    if not isinstance(region, str | None) or not isinstance(zone, str | None):
        return None
    return Member(loc, name, region, zone)


def _check_block_sites(block: dict[str, Any], members: list[Member]) -> None:
    """:func:`check_sites` over the raw block, once its settings validate (else the block's
    own validation names the field); errors point into ``cloud:``."""
    try:
        settings = CloudSettings.model_validate(
            {k: v for k, v in block.items() if k in CloudSettings.model_fields}
        )
    except ValueError:
        return
    try:
        check_sites(settings, members)
    except LocatedError as exc:
        loc = exc.loc if exc.loc[0] in ("cloud", "hosts") else ("cloud", *exc.loc)
        raise LocatedError(str(exc), loc) from None
