"""Acquire a campaign's machines on EC2 and release them — every create journalled first.

Order, per region the fleets use (the cloud block's first; each step: intent record with the
region → fault points ``before:<step>`` and ``before:<step>@<region>`` → API call with the
deterministic client token and the campaign's tags → ``after:<step>`` / ``after:<step>@<region>``
→ created record): vpc (``10.77.0.0/16``, the next region ``10.78.0.0/16`` …), one subnet per
zone used there (public addresses mapped on launch), internet-gateway (then attached),
route-table (then the default route to the gateway and every subnet's association) — these
four only when the campaign makes its own VPC — security-group, key-pair (the same campaign key
in every region), placement-group (placement ``cluster`` only); with two or more regions each
security group then admits the other regions' VPC CIDRs. Then instance (one call per instance:
each has its own host key in its user-data), in its fleet's region and zone
(:meth:`Provisioner.sites`).
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError, WaiterError

from netfleet import aws
from netfleet.cloud import faults, owner
from netfleet.cloud.aws import retry
from netfleet.cloud.aws.acquire import images
from netfleet.cloud.aws.acquire.configstate import state_labels
from netfleet.cloud.aws.campaign import CloudSpec
from netfleet.cloud.aws.journal import Journal
from netfleet.cloud.aws.plan import catalogue, quotas, safety
from netfleet.cloud.aws.plan.catalogue import InstanceInfo
from netfleet.cloud.bootstrap import hostkeys, userdata
from netfleet.errors import EnvironmentProblem, InputError
from netfleet.spec.cloud import public_path

TAG_CAMPAIGN = owner.TAG_CAMPAIGN
TAG_OWNER = owner.TAG_OWNER
TAG_EXPIRES = owner.TAG_EXPIRES
TAG_TOKEN = owner.TAG_TOKEN
AMI_PARAMETER = images.AL2023_PARAMETER
#: inbound rules per security group, AWS's default quota (VPC L-0EA8095F)
SG_RULES_QUOTA = 60
#: how long RunInstances may stay throttled (after botocore's own retries) before the launch
#: is an error: the account's request rate is shared with everything else it runs
THROTTLE_BUDGET_S = retry.CREATE_BUDGET_S
#: RunInstances errors of one zone: another zone offering the type may have room
CAPACITY_ERRORS = frozenset({"InsufficientInstanceCapacity", "Unsupported"})
#: the region's quota: no zone helps
QUOTA_ERRORS = frozenset(
    {"VcpuLimitExceeded", "InstanceLimitExceeded", "MaxSpotInstanceCountExceeded"}
)
#: IMDSv2 only (a session token; the host's private key is in its user-data), and a hop limit
#: of 1: a container or a forwarded packet on the instance cannot fetch it
METADATA_OPTIONS = {
    "HttpTokens": "required",
    "HttpPutResponseHopLimit": 1,
    "HttpEndpoint": "enabled",
}


def resource_name(campaign: str) -> str:
    return f"netfleet-{campaign}"


@dataclass(frozen=True)
class CloudHost:
    """One acquired machine, ready for the SSH host kind (host key already pinned)."""

    name: str
    instance_id: str
    instance_type: str
    role: str
    private_ip: str
    public_ip: str | None
    user: str
    identity_file: Path
    known_hosts: Path
    labels: dict[str, str]
    region: str = ""
    az: str = ""


@dataclass(frozen=True)
class Site:
    """Where one fleet's instances run."""

    region: str
    az: str


@dataclass(frozen=True)
class Network:
    """What a campaign's instances in one region share (created by :meth:`Provisioner.prepare`):
    ``subnet_id``/``az`` are the region's first zone, ``subnets`` every zone used there."""

    vpc_id: str
    subnet_id: str
    sg_id: str
    az: str
    group: str | None
    region: str = ""
    subnets: dict[str, str] = field(default_factory=dict)
    cidr: str = ""
    #: the region's internet gateway and route table (None when it runs in a given
    #: ``subnet_id``)
    igw_id: str | None = None
    route_table_id: str | None = None
    #: path public: the managed prefix list holding every host's public /32
    prefix_list_id: str | None = None


def change_prefix_list(
    ec2: Any,
    plist: str,
    add: list[dict[str, str]] | None = None,
    remove: list[str] | None = None,
) -> None:
    """Add entries to / remove CIDRs from a managed prefix list, at its current version (a
    change in progress or a stale version is retried). A CIDR to remove that the list does
    not hold is passed over."""

    def change() -> None:
        found = ec2.describe_managed_prefix_lists(PrefixListIds=[plist])["PrefixLists"]
        kwargs: dict[str, Any] = {"AddEntries": add} if add else {}
        if remove:
            pages = ec2.get_paginator("get_managed_prefix_list_entries").paginate(
                PrefixListId=plist
            )
            held = {e["Cidr"] for page in pages for e in page.get("Entries", [])}
            gone = [{"Cidr": c} for c in remove if c in held]
            if gone:
                kwargs["RemoveEntries"] = gone
        if kwargs:
            ec2.modify_managed_prefix_list(
                PrefixListId=plist, CurrentVersion=found[0]["Version"], **kwargs
            )

    retry.call(change, retry_on=retry.NOT_YET | retry.IN_USE | retry.THROTTLED)


def subnet_cidr(vpc_cidr: str, index: int) -> str:
    """The ``index``-th /24 of a 10.x.0.0/16."""
    return vpc_cidr.replace(".0.0/16", f".{index}.0/24")


#: how long a launched instance may take to reach ``running``
RUNNING_BUDGET_S = 600.0


def _state_of(resp: dict[str, Any] | None) -> str:
    """The instance state in a waiter's last DescribeInstances answer (or the error it got)."""
    resp = resp or {}
    for res in resp.get("Reservations", []):
        for inst in res.get("Instances", []):
            return str(inst.get("State", {}).get("Name", "unknown"))
    return retry.answered(resp) or "unknown"


#: burstable families launched in credit mode ``standard`` (never billed beyond the hourly price)
CREDIT_FAMILIES = frozenset({"t2", "t3", "t3a", "t4g"})


@dataclass
class Provisioner:
    spec: CloudSpec
    state_root: Path
    now: dt.datetime = field(default_factory=lambda: dt.datetime.now(dt.UTC))
    poll_s: float = 0.2
    #: mixed into every client token: a later session of the same campaign gets new resources
    #: (AWS answers a repeated RunInstances token with the first, by then terminated, instance)
    session: str = ""

    def __post_init__(self) -> None:
        self.journal = Journal(self.state_root, self.spec.campaign)
        self.installation = owner.installation(self.state_root)
        #: key pair and placement group: names are unique per region, so they carry the
        #: installation (two installations may run campaigns of one name)
        self.name = f"{resource_name(self.spec.campaign)}-{self.installation[:8]}"
        self.identity = self.journal.dir / "id_ed25519"
        self.known_hosts = self.journal.dir / "known_hosts"
        #: the cloud block's region's network (Fargate tiers run there)
        self.network: Network | None = None
        #: region → its network
        self.networks: dict[str, Network] = {}
        #: fleet index → where its instances run
        self.sites: list[Site] = []
        self._pinned = hostkeys.KnownHosts(self.known_hosts)
        #: instances launch in parallel threads (a wave): one prefix-list change at a time
        #: (each needs the list's current version), one zone fallback at a time (it may
        #: create a subnet and moves the sites) — the rest of a launch is not serialized
        self._prefix_lock = threading.Lock()
        self._zone_lock = threading.Lock()
        self.ec2 = aws.client("ec2", self.spec.region)
        self._clients: dict[str, Any] = {}
        #: region → RunInstances' own client (:meth:`launch_client`)
        self._launch_clients: dict[str, Any] = {}
        self._clients_lock = threading.Lock()
        self._amis: dict[tuple[str, str], str] = {}
        self.expires_at = self.now + dt.timedelta(minutes=self.spec.expires_after_minutes)
        self.catalogue: dict[str, InstanceInfo] = {}
        #: region → instances launched there (a same-az fleet moves zones only before them)
        self._launched: dict[str, int] = {}
        #: hosts meet at their public addresses (path public, or auto across regions)
        self.public = public_path(self.spec, len(self.spec.regions))
        #: what the user should know about where things went (printed by the caller)
        self.notes: list[str] = []

    # -- helpers ---------------------------------------------------------------------------
    def client(self, region: str) -> Any:
        """The EC2 client of ``region`` (``self.ec2`` for the block's)."""
        if region == self.spec.region:
            return self.ec2
        if region not in self._clients:
            self._clients[region] = aws.client("ec2", region)
        return self._clients[region]

    def launch_client(self, region: str) -> Any:
        """RunInstances' own EC2 client in ``region``. botocore retries a zone's capacity error
        (HTTP 500) as if it were transient, and every retry spends the client's retry quota
        (a bucket per client): after a few full zones a shared client would answer the
        campaign's next throttled call at once, raw. Here that spend stays with the launches,
        whose throttling :meth:`_run_somewhere` retries itself."""
        with self._clients_lock:
            if region not in self._launch_clients:
                self._launch_clients[region] = aws.client("ec2", region)
            return self._launch_clients[region]

    def tags(self, token: str) -> list[dict[str, str]]:
        return [
            {"Key": TAG_CAMPAIGN, "Value": self.spec.campaign},
            {"Key": TAG_OWNER, "Value": self.spec.owner},
            {"Key": owner.TAG_INSTALLATION, "Value": self.installation},
            {"Key": owner.TAG_SESSION, "Value": self.session or "-"},
            {"Key": TAG_EXPIRES, "Value": self.expires_at.strftime("%Y-%m-%dT%H:%M:%SZ")},
            {"Key": TAG_TOKEN, "Value": token},
            {"Key": "Name", "Value": resource_name(self.spec.campaign)},
        ]

    def tag_spec(self, resource_type: str, token: str) -> list[dict[str, Any]]:
        return [{"ResourceType": resource_type, "Tags": self.tags(token)}]

    def _step(self, kind: str, key: str, create: Any, region: str | None = None) -> str:
        region = region or self.spec.region
        key = f"{key}#{self.session}" if self.session else key
        token = self.journal.intent(kind, region, key)
        faults.point(f"before:{kind}")
        faults.point(f"before:{kind}@{region}")
        rid = str(create(token))
        faults.point(f"after:{kind}")
        faults.point(f"after:{kind}@{region}")
        self.journal.created(kind, region, key, rid)
        return rid

    # -- acquire ---------------------------------------------------------------------------
    def acquire(self) -> list[CloudHost]:
        """The networks, then every fleet's instances (``netfleet cloud up``)."""
        self.prepare()
        hosts = []
        seen: dict[str, int] = {}
        for index, fleet in enumerate(self.spec.fleets):
            base = fleet.name or f"{fleet.role}-{fleet.instance_type.replace('.', '-')}"
            for _ in range(fleet.count):
                n = seen[base] = seen.get(base, -1) + 1
                hosts.append(
                    self.launch(f"{base}-{n}", fleet.role, fleet.instance_type, fleet=index)
                )
        faults.point("after:acquire")
        return hosts

    def prepare(self) -> None:
        """Look the types up in each region, place the fleets (:meth:`place`), then create what
        the instances of each region share: VPC, subnets, internet gateway and route table,
        security group, key pair and (placement ``cluster``) a placement group; with several
        regions, each security group admits the other regions' VPC CIDRs."""
        spec = self.spec
        safety.require_confirmed(spec.campaign)
        self._check_rule_quota()
        for region in spec.regions:
            types = {f.instance_type for f in spec.fleets if spec.region_of(f) == region}
            found = catalogue.describe(self.client(region), sorted(types))
            unknown = types - set(found)
            if unknown:
                raise EnvironmentProblem(f"unknown instance types in {region}: {sorted(unknown)}")
            self.catalogue.update(found)
            self._check_virtualization(region, types)
        self.sites = self.place()
        client_key = hostkeys.generate(resource_name(spec.campaign))
        hostkeys.write_private(self.identity, client_key)
        for region in spec.regions:
            self.networks[region] = self._prepare_region(region, client_key)
        if len(self.networks) > 1:
            self._admit_other_regions()
        self.network = self.networks.get(spec.region)
        self._pinned.reset()

    def _prepare_region(self, region: str, client_key: hostkeys.KeyPair) -> Network:
        spec, ec2 = self.spec, self.client(region)
        zones = sorted({s.az for s in self.sites if s.region == region})
        cidr = spec.vpc_cidr_in(region)
        igw_id: str | None = None
        rtb_id: str | None = None
        if spec.subnet_id:  # one region, one zone (check_sites)
            subnets = {zones[0]: spec.subnet_id}
            vpc_id = ec2.describe_subnets(SubnetIds=[spec.subnet_id])["Subnets"][0]["VpcId"]
        else:
            vpc_id = self._step("vpc", "main", lambda t: self._create_vpc(ec2, cidr, t), region)
            subnets = {}
            for i, az in enumerate(zones):
                subnets[az] = self._step(
                    "subnet",
                    "main" if i == 0 else az,
                    lambda t, az=az, i=i: self._create_subnet(
                        ec2, vpc_id, subnet_cidr(cidr, i), az, t
                    ),
                    region,
                )
            igw_id, rtb_id = self._internet_route(region, vpc_id, list(subnets.values()))
        sg_id = self._step(
            "security-group", "main", lambda t: self._create_sg(ec2, vpc_id, t), region
        )
        self._step(
            "key-pair",
            "main",
            lambda t: ec2.import_key_pair(
                KeyName=self.name,
                PublicKeyMaterial=client_key.public_openssh.encode(),
                TagSpecifications=self.tag_spec("key-pair", t),
            )["KeyName"],
            region,
        )
        group = self._placement_group(region) if spec.placement == "cluster" else None
        plist = self._admit_prefix_list(ec2, sg_id, region) if self.public else None
        return Network(
            vpc_id,
            subnets[zones[0]],
            sg_id,
            zones[0],
            group,
            region,
            subnets,
            cidr,
            igw_id=igw_id,
            route_table_id=rtb_id,
            prefix_list_id=plist,
        )

    def _check_rule_quota(self) -> None:
        """A security group admits 60 inbound rules by default, and a referenced prefix list
        counts as many as its maximum entries: refuse before anything exists when the group
        cannot hold them."""
        spec = self.spec
        rules = 1 + (1 if spec.controller_cidr else 0) + len(spec.regions) - 1
        if self.public:
            rules += spec.instance_count
        if rules > SG_RULES_QUOTA:
            raise EnvironmentProblem(
                f"campaign {spec.campaign!r}: its security group would need {rules} inbound "
                f"rules ({spec.instance_count} public host addresses through the prefix list, "
                f"which counts its size), above the default {SG_RULES_QUOTA} rules per "
                "security group",
                hint="raise the quota in Service Quotas: VPC L-0EA8095F (Inbound or outbound "
                "rules per security group), or run fewer hosts, or path: private in one region",
            )

    def _admit_prefix_list(self, ec2: Any, sg_id: str, region: str) -> str:
        """The region's managed prefix list (tagged, journalled; room for every host of the
        campaign) and the one rule that admits it: hosts meet at public addresses, which the
        group's reference to itself does not match."""
        size = max(1, self.spec.instance_count)
        plist = self._step(
            "prefix-list",
            "main",
            lambda t: ec2.create_managed_prefix_list(
                PrefixListName=self.name,
                MaxEntries=size,
                AddressFamily="IPv4",
                TagSpecifications=self.tag_spec("prefix-list", t),
                ClientToken=t,
            )["PrefixList"]["PrefixListId"],
            region,
        )
        rule = {"IpProtocol": "-1", "PrefixListIds": [{"PrefixListId": plist}]}
        retry.not_yet(
            partial(ec2.authorize_security_group_ingress, GroupId=sg_id, IpPermissions=[rule])
        )
        return str(plist)

    def _admit_other_regions(self) -> None:
        """Across regions a security group cannot name another region's group: each admits
        the other regions' campaign VPC CIDRs (distinct by construction: 10.77, 10.78, …),
        the path a VPC peering would take; instances' public addresses are added at launch."""
        for region, net in self.networks.items():
            others = [n for r, n in self.networks.items() if r != region and n.cidr]
            if not others:
                continue
            rule = {
                "IpProtocol": "-1",
                "IpRanges": [
                    {"CidrIp": n.cidr, "Description": f"netfleet VPC in {n.region}"} for n in others
                ],
            }
            ec2 = self.client(region)
            retry.not_yet(
                partial(
                    ec2.authorize_security_group_ingress, GroupId=net.sg_id, IpPermissions=[rule]
                )
            )

    def _check_virtualization(self, region: str, types: set[str]) -> None:
        """Refuse, before anything is created, a type that cannot boot the image: netfleet's
        images are HVM, and a type whose SupportedVirtualizationTypes lacks the image's (t1.micro:
        paravirtual only) makes RunInstances answer InvalidParameterCombination mid-study."""
        ec2 = self.client(region)
        wanted = "hvm"
        if self.spec.ami:
            imgs = ec2.describe_images(ImageIds=[self.spec.ami]).get("Images", [])
            wanted = str(imgs[0].get("VirtualizationType", "hvm")) if imgs else "hvm"
        found = ec2.describe_instance_types(InstanceTypes=sorted(types))["InstanceTypes"]
        bad = {
            str(t["InstanceType"]): "/".join(t.get("SupportedVirtualizationTypes") or [])
            for t in found
            if wanted not in (t.get("SupportedVirtualizationTypes") or [wanted])
        }
        if bad:
            image = f"ami {self.spec.ami}" if self.spec.ami else f"image {self.spec.image_family}"
            raise InputError(
                f"campaign {self.spec.campaign!r}: "
                + ", ".join(f"{t} boots only {v} images" for t, v in sorted(bad.items()))
                + f"; the {image} is {wanted}: RunInstances would refuse it "
                "(InvalidParameterCombination)",
                hint="drop those types, or use their current-generation successors "
                "(t1.micro → t2.micro/t3.micro), or run them in a campaign of their own with a "
                f"{'/'.join(sorted(set(bad.values())))} `ami:`",
            )

    def place(self) -> list[Site]:
        """Each fleet's region and zone. A zone given (the fleet's, or the block's in its
        region) is kept; ``cross-az`` gives every other fleet (hosts of one name together)
        the least used zone of its region that offers its type; otherwise a region's fleets
        share one zone: the first (by name) offering all of its types."""
        spec = self.spec
        chosen: dict[str, Site] = {}
        used: dict[str, list[str]] = {}
        for i, f in enumerate(spec.fleets):
            region = spec.region_of(f)
            block_az = spec.availability_zone if region == spec.region else None
            az = f.availability_zone or block_az or self._subnet_zone()
            if az and spec.group(i) not in chosen:
                chosen[spec.group(i)] = Site(region, az)
                used.setdefault(region, []).append(az)
        for i, f in enumerate(spec.fleets):
            group, region = spec.group(i), spec.region_of(f)
            if group in chosen:
                continue
            if spec.placement == "cross-az":
                types = {
                    x.instance_type for j, x in enumerate(spec.fleets) if spec.group(j) == group
                }
                taken = used.get(region, [])
                az = min(self._zones(region, types), key=lambda z: (taken.count(z), z))
            else:
                types = {x.instance_type for x in spec.fleets if spec.region_of(x) == region}
                offered = self._zones(region, types, strict=spec.placement == "cluster")
                if not offered:  # no zone offers them all: this fleet's type decides
                    offered = self._zones(region, {f.instance_type})
                    self._note_split(region, types)
                az = next((z for z in used.get(region, []) if z in offered), offered[0])
            chosen[group] = Site(region, az)
            used.setdefault(region, []).append(az)
        sites = [chosen[spec.group(i)] for i in range(len(spec.fleets))]
        if spec.placement == "cross-az" and len({s.az for s in sites}) < 2:
            raise EnvironmentProblem(
                f"placement cross-az: only zone {sites[0].az} of {spec.region} offers "
                f"{', '.join(sorted({f.instance_type for f in spec.fleets}))}",
                hint="pick types every zone offers, or use placement: same-az",
            )
        return sites

    def _subnet_zone(self) -> str | None:
        """The zone of a given ``subnet_id`` (its instances must be launched there)."""
        if not self.spec.subnet_id:
            return None
        found = self.ec2.describe_subnets(SubnetIds=[self.spec.subnet_id])["Subnets"]
        return str(found[0]["AvailabilityZone"])

    def _note_split(self, region: str, types: set[str]) -> None:
        note = (
            f"no zone of {region} offers all of {', '.join(sorted(types))}: each fleet goes to "
            "the first zone offering its type (its hosts' availability_zone label says which; "
            "traffic between zones crosses them)"
        )
        if note not in self.notes:
            self.notes.append(note)

    def _zones(self, region: str, types: set[str], strict: bool = True) -> list[str]:
        """The region's available zones (by name) where every one of ``types`` is offered
        (DescribeInstanceTypeOfferings); all of them if the API lists no offering at all.
        None fits: an error, or (not ``strict``) no zone."""
        ec2 = self.client(region)
        zones = sorted(
            z["ZoneName"]
            for z in ec2.describe_availability_zones()["AvailabilityZones"]
            if z.get("State", "available") == "available"
        )
        offered: dict[str, set[str]] = {}
        pages = ec2.get_paginator("describe_instance_type_offerings").paginate(
            LocationType="availability-zone",
            Filters=[{"Name": "instance-type", "Values": sorted(types)}],
        )
        for page in pages:
            for o in page.get("InstanceTypeOfferings", []):
                offered.setdefault(o["Location"], set()).add(o["InstanceType"])
        if not offered:
            return zones
        fit = [z for z in zones if types <= offered.get(z, set())]
        if not fit and strict:
            raise EnvironmentProblem(
                f"no zone of {region} offers all of {', '.join(sorted(types))}",
                hint="split the types over fleets with their own availability_zone "
                "(placement: none or cross-az), or pick other types",
            )
        return fit

    def launch(
        self,
        name: str,
        role: str,
        instance_type: str,
        extra_tags: dict[str, str] | None = None,
        fleet: int | None = None,
        tools: Sequence[str] = (),
        answered: Callable[[str], None] | None = None,
    ) -> CloudHost:
        """One instance of fleet ``fleet`` (its region and zone; None: the block's region's
        first zone) with its own generated host key, pinned in known_hosts once it runs; its
        user-data installs ``tools`` (what its runs use; empty: every engine's). ``answered``
        is told the instance id as soon as RunInstances answers, before the wait for
        ``running`` (an acquire cancelled meanwhile releases it by id; it may raise to stop)."""
        if not self.networks:
            raise EnvironmentProblem("launch before prepare: no network for the instances")
        site = self.sites[fleet] if fleet is not None else None
        net = self.networks[site.region if site else self.spec.region]
        az = site.az if site else net.az
        info = self.catalogue[instance_type]
        ami = self._ami(info, net.region)
        host_key = hostkeys.generate(name)
        user_data = userdata.render(
            host_key, self.spec.expires_after_minutes, self.spec.image_family, tools or None
        )
        zones = [az]  # where it was tried, the last where it runs
        iid = self._step(
            "instance",
            name,
            lambda t: self._run_somewhere(info, ami, net, zones, user_data, t, extra_tags, fleet),
            net.region,
        )
        self._launched[net.region] = self._launched.get(net.region, 0) + 1
        if answered is not None:
            answered(iid)
        host = self._wait_host(iid, name, role, info, net.region, zones[-1])
        self._pinned.pin([host.private_ip, host.public_ip or ""], host_key.public_openssh)
        if host.public_ip:
            self._admit_address(host)
        return host

    def _run_somewhere(
        self,
        info: InstanceInfo,
        ami: str,
        net: Network,
        zones: list[str],
        user_data: str,
        token: str,
        extra_tags: dict[str, str] | None,
        fleet: int | None,
    ) -> str:
        """RunInstances in ``zones[-1]``; on a capacity error, again in another zone that
        offers the type (appended to ``zones``) while the placement allows; a quota error is
        an error naming the quota (another zone would not help).

        Each answer is handled as what it says, whatever came before it: botocore retries a
        capacity error (HTTP 500) and throttling (503) alike, so its last attempt may end
        throttled after nine answers of no capacity — throttling is retried as throttling
        (:data:`retry.THROTTLED`, up to :data:`THROTTLE_BUDGET_S`) and the zone's answer read
        again. No AWS error leaves here raw: each is an :class:`EnvironmentProblem` (exit 4)
        naming the code and the fix."""
        while True:
            az = zones[-1]
            attempt = token if len(zones) == 1 else f"{token}-{az}"  # a new request per zone
            run = partial(
                self._run_instance, info, ami, net, az, user_data, attempt, extra_tags or {}
            )
            try:
                return retry.call(run, retry_on=retry.THROTTLED, budget_s=THROTTLE_BUDGET_S)
            except ClientError as exc:
                code = retry.code(exc)
                if code in QUOTA_ERRORS:
                    raise self._quota_error(info, net.region, exc) from None
                if code not in CAPACITY_ERRORS:
                    raise _launch_error(info.instance_type, az, net.region, exc) from None
                with self._zone_lock:
                    other = self._fallback_zone(net, info.instance_type, zones, fleet)
                if other is None:
                    raise EnvironmentProblem(
                        f"no capacity for {info.instance_type} in {', '.join(zones)} "
                        f"({net.region}): {code}",
                        hint="try again later, another type, or placement: none (any zone)",
                    ) from None
                zones.append(other)

    def _quota_error(self, info: InstanceInfo, region: str, exc: Exception) -> EnvironmentProblem:
        found = quotas.quota_of(info.instance_type, self.spec.market)
        quota = "the family's vCPU quota" if found is None else f"{found[0]} ({found[1]})"
        return EnvironmentProblem(
            f"the account's vCPU quota in {region} does not allow another {info.instance_type}: "
            f"{exc}",
            hint=f"ask for a higher quota in Service Quotas: EC2 {quota} (other families have "
            "their own), or launch fewer or smaller instances",
        )

    def _fallback_zone(
        self, net: Network, instance_type: str, tried: list[str], fleet: int | None
    ) -> str | None:
        """Another zone of ``net``'s region offering ``instance_type``, with a subnet there —
        the one the fleet was already moved to, if a parallel launch moved it — or None: a
        given subnet, every offering zone tried, or (same-az, cluster) instances already
        running in the zone the others must share."""
        spec = self.spec
        shared = spec.placement in ("same-az", "cluster")
        moved = self.sites[fleet] if fleet is not None else None
        if moved is not None and moved.region == net.region and moved.az not in tried:
            # a launch alongside (a wave's instances run in parallel) found no capacity in the
            # same zone first and moved this fleet: follow it
            return moved.az
        if spec.subnet_id or (shared and self._launched.get(net.region)):
            return None
        left = [z for z in self._zones(net.region, {instance_type}) if z not in tried]
        if not left:
            return None
        az = left[0]
        if az not in net.subnets:
            ec2, i = self.client(net.region), len(net.subnets)
            net.subnets[az] = self._step(
                "subnet",
                az,
                lambda t: self._create_subnet(ec2, net.vpc_id, subnet_cidr(net.cidr, i), az, t),
                net.region,
            )
            if net.route_table_id:
                rtb, sid = net.route_table_id, net.subnets[az]
                retry.not_yet(lambda: ec2.associate_route_table(RouteTableId=rtb, SubnetId=sid))
        group = spec.group(fleet) if fleet is not None else None
        for i, site in enumerate(self.sites):  # later instances go where this one went
            same = shared or spec.group(i) == group
            if site.region == net.region and site.az in tried and same:
                self.sites[i] = Site(net.region, az)
        return az

    def _admit_address(self, host: CloudHost) -> None:
        """Hosts meeting at their public addresses (path public; across regions, no peering):
        the host's /32 joins every region's prefix list (one version at a time: a change in
        progress or a stale version is retried)."""
        if not self.public:
            return
        entry = {"Cidr": f"{host.public_ip}/32", "Description": f"netfleet host {host.name}"}
        for region, net in self.networks.items():
            if net.prefix_list_id is None:
                continue
            with self._prefix_lock:  # only the change: the launches and waits run in parallel
                change_prefix_list(self.client(region), net.prefix_list_id, add=[entry])

    def _placement_group(self, region: str | None = None) -> str:
        """A cluster placement group named after the campaign (moto lacks the API: Stubber)."""
        name = self.name
        ec2 = self.client(region or self.spec.region)

        def create(token: str) -> str:
            ec2.create_placement_group(
                GroupName=name,
                Strategy="cluster",
                TagSpecifications=self.tag_spec("placement-group", token),
            )
            return name

        return self._step("placement-group", "main", create, region)

    def _ami(self, info: InstanceInfo, region: str) -> str:
        """``ami:`` as given, else the image's AMI for the type's architecture in ``region``
        (looked up once per region and architecture)."""
        if self.spec.ami:
            return self.spec.ami
        arch = images.architecture(info.architectures)
        if (region, arch) not in self._amis:
            image = self.spec.image_family
            self._amis[(region, arch)] = images.resolve(self.client(region), image, arch)
        return self._amis[(region, arch)]

    def _create_vpc(self, ec2: Any, cidr: str, token: str) -> str:
        vpc = ec2.create_vpc(CidrBlock=cidr, TagSpecifications=self.tag_spec("vpc", token))["Vpc"][
            "VpcId"
        ]
        retry.not_yet(
            lambda: ec2.modify_vpc_attribute(VpcId=vpc, EnableDnsHostnames={"Value": True})
        )
        return str(vpc)

    def _create_subnet(self, ec2: Any, vpc_id: str, cidr: str, az: str, token: str) -> str:
        subnet = ec2.create_subnet(
            VpcId=vpc_id,
            CidrBlock=cidr,
            AvailabilityZone=az,
            TagSpecifications=self.tag_spec("subnet", token),
        )["Subnet"]["SubnetId"]
        # instances get a public address: reachable over SSH, and able to fetch packages
        retry.not_yet(
            lambda: ec2.modify_subnet_attribute(
                SubnetId=subnet, MapPublicIpOnLaunch={"Value": True}
            )
        )
        return str(subnet)

    def _internet_route(self, region: str, vpc_id: str, subnets: list[str]) -> tuple[str, str]:
        """An internet gateway attached to the region's campaign VPC and a route table with
        the default route through it, associated with every subnet of the region.
        CreateInternetGateway takes no client token (a kill before its ``created`` record is
        recovered by tag); CreateRouteTable does."""
        ec2 = self.client(region)
        igw_id = self._step(
            "internet-gateway",
            "main",
            lambda t: ec2.create_internet_gateway(
                TagSpecifications=self.tag_spec("internet-gateway", t)
            )["InternetGateway"]["InternetGatewayId"],
            region,
        )
        retry.not_yet(lambda: ec2.attach_internet_gateway(InternetGatewayId=igw_id, VpcId=vpc_id))
        rtb_id = self._step(
            "route-table",
            "main",
            lambda t: ec2.create_route_table(
                VpcId=vpc_id, ClientToken=t, TagSpecifications=self.tag_spec("route-table", t)
            )["RouteTable"]["RouteTableId"],
            region,
        )
        retry.not_yet(
            lambda: ec2.create_route(
                RouteTableId=rtb_id, DestinationCidrBlock="0.0.0.0/0", GatewayId=igw_id
            )
        )
        for subnet_id in subnets:
            retry.not_yet(
                partial(ec2.associate_route_table, RouteTableId=rtb_id, SubnetId=subnet_id)
            )
        return igw_id, rtb_id

    def _create_sg(self, ec2: Any, vpc_id: str, token: str) -> str:
        sg = ec2.create_security_group(
            GroupName=resource_name(self.spec.campaign),
            Description="netfleet campaign: own hosts and the controller only",
            VpcId=vpc_id,
            TagSpecifications=self.tag_spec("security-group", token),
        )["GroupId"]
        rules: list[dict[str, Any]] = [{"IpProtocol": "-1", "UserIdGroupPairs": [{"GroupId": sg}]}]
        if self.spec.controller_cidr:  # backing ssh: the controller's SSH (required there)
            rules.append(
                {
                    "IpProtocol": "tcp",
                    "FromPort": 22,
                    "ToPort": 22,
                    "IpRanges": [{"CidrIp": self.spec.controller_cidr}],
                }
            )
        retry.not_yet(lambda: ec2.authorize_security_group_ingress(GroupId=sg, IpPermissions=rules))
        return str(sg)

    def _run_instance(
        self,
        info: InstanceInfo,
        ami: str,
        net: Network,
        az: str,
        user_data: str,
        token: str,
        extra_tags: dict[str, str],
    ) -> str:
        placement: dict[str, str] = {"AvailabilityZone": az}
        if net.group:
            placement["GroupName"] = net.group
        kwargs: dict[str, Any] = {}
        if self.spec.market == "spot":
            kwargs["InstanceMarketOptions"] = {
                "MarketType": "spot",
                "SpotOptions": {
                    "SpotInstanceType": "one-time",
                    "InstanceInterruptionBehavior": "terminate",
                },
            }
        extra = [{"Key": k, "Value": v} for k, v in extra_tags.items()]
        tags = [
            {"ResourceType": kind, "Tags": self.tags(token) + extra}
            for kind in ("instance", "volume")
        ]
        if self.spec.market == "spot":
            tags += self.tag_spec("spot-instances-request", token)
        if info.instance_type.split(".")[0] in CREDIT_FAMILIES:
            # T3/T3a/T4g launch "unlimited" by default: a run above baseline would bill
            # surplus credits the estimate does not count (seed 002's T2s were standard)
            kwargs["CreditSpecification"] = {"CpuCredits": "standard"}
        resp = self.launch_client(net.region).run_instances(
            ImageId=ami,
            InstanceType=info.instance_type,
            MinCount=1,
            MaxCount=1,
            KeyName=self.name,
            SubnetId=net.subnets.get(az, net.subnet_id),
            SecurityGroupIds=[net.sg_id],
            Placement=placement,
            ClientToken=token,
            InstanceInitiatedShutdownBehavior="terminate",
            MetadataOptions=METADATA_OPTIONS,
            UserData=user_data,
            TagSpecifications=tags,
            **kwargs,
        )
        return str(resp["Instances"][0]["InstanceId"])

    def _wait_host(
        self, iid: str, name: str, role: str, info: InstanceInfo, region: str, az: str
    ) -> CloudHost:
        ec2 = self.client(region)
        try:  # boto3's InstanceRunning (it retries InvalidInstanceID.NotFound after the launch)
            retry.wait(
                ec2.get_waiter("instance_running"),
                InstanceIds=[iid],
                budget_s=RUNNING_BUDGET_S,
                delay_s=self.poll_s,
                max_delay_s=5.0,
            )
        except retry.WaitTimedOut as exc:
            raise EnvironmentProblem(
                f"instance {iid} ({name}) is still {_state_of(exc.last_response)} after "
                f"{RUNNING_BUDGET_S:.0f} s: waited for it to be running",
                hint=f"look at it: aws ec2 describe-instances --instance-ids {iid}",
            ) from None
        except WaiterError as exc:
            raise EnvironmentProblem(
                f"instance {iid} ({name}) is {_state_of(exc.last_response)}, not running"
            ) from None
        found = retry.not_yet(lambda: ec2.describe_instances(InstanceIds=[iid]))
        inst = found["Reservations"][0]["Instances"][0]
        labels = {
            **info.labels(),
            "role": role,
            "instance_id": iid,
            "region": region,
            "availability_zone": az,
            "image": self.spec.ami or self.spec.image_family,
            **state_labels(ec2, inst, az),  # zone ID, bandwidth weighting (issue 28)
        }
        return CloudHost(
            name=name,
            instance_id=iid,
            instance_type=info.instance_type,
            role=role,
            private_ip=inst.get("PrivateIpAddress", ""),
            public_ip=inst.get("PublicIpAddress"),
            user=images.FAMILIES[self.spec.image_family].user,
            identity_file=self.identity,
            known_hosts=self.known_hosts,
            labels=labels,
            region=region,
            az=az,
        )

    # -- release ---------------------------------------------------------------------------
    def release(self) -> dict[str, int]:
        """Tear everything down in every region the journal names (and the campaign's), then
        verify nothing remains — for tests and bench/: the product gives back through
        :func:`netfleet.cloud.release.give_back` (a campaign scope runs this same ``destroy``)."""
        from netfleet.cloud.aws.release.teardown import destroy

        return destroy(
            self.state_root, self.spec.campaign, poll_s=self.poll_s, regions=self.spec.regions
        )


def _launch_error(instance_type: str, az: str, region: str, exc: Exception) -> EnvironmentProblem:
    """RunInstances' answer other than capacity or quota, as an error with its fix (exit 4):
    throttling that outlived :data:`THROTTLE_BUDGET_S`, or what AWS refused."""
    code = retry.code(exc) if isinstance(exc, ClientError) else type(exc).__name__
    where = f"{instance_type} in {az} ({region})"
    if code in retry.THROTTLED:
        return EnvironmentProblem(
            f"AWS kept throttling the launch of {where}: {code} for "
            f"{THROTTLE_BUDGET_S:.0f} s after botocore's own retries",
            hint="the account's EC2 request rate is shared with everything else it runs: wait "
            "a few minutes and run again (`netfleet run --resume` keeps the runs already "
            "done), or launch fewer at once (`concurrency:`)",
        )
    return EnvironmentProblem(
        f"AWS refused to launch {where}: {exc}",
        hint=f"AWS's error code {code} says why: fix what it names in the cloud block "
        "(type, image, zone) or the account, then run again",
    )
