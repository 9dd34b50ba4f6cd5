"""Acquire a campaign's machines on EC2 and release them — every create journalled first.

Order (each step: intent record → fault point ``before:<step>`` → API call with the
deterministic client token and the campaign's tags → fault point ``after:<step>`` → created
record): vpc, subnet (public addresses mapped on launch), internet-gateway (then attached),
route-table (then the default route to the gateway and the subnet's association) — these four
only when the campaign makes its own VPC — security-group, key-pair, placement-group
(placement ``cluster`` only), instance (one call per instance: each has its own host key in its
user-data).
"""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netfleet import aws, durable
from netfleet.cloud import catalogue, faults, hostkeys, userdata
from netfleet.cloud.campaign import CloudSpec
from netfleet.cloud.catalogue import InstanceInfo
from netfleet.cloud.journal import Journal
from netfleet.errors import EnvironmentProblem

TAG_CAMPAIGN = "netfleet:campaign"
TAG_OWNER = "netfleet:owner"
TAG_EXPIRES = "netfleet:expires-at"
TAG_TOKEN = "netfleet:token"  # noqa: S105 - a tag key, not a secret
AMI_PARAMETER = {
    "x86_64": "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64",
    "arm64": "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-arm64",
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


@dataclass(frozen=True)
class Network:
    """What a campaign's instances share (created by :meth:`Provisioner.prepare`)."""

    vpc_id: str
    subnet_id: str
    sg_id: str
    az: str
    group: str | None
    #: the campaign's internet gateway (None when it runs in a given ``subnet_id``)
    igw_id: str | None = None


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
        self.identity = self.journal.dir / "id_ed25519"
        self.known_hosts = self.journal.dir / "known_hosts"
        self.network: Network | None = None
        self._pinned: list[str] = []
        self.ec2 = aws.client("ec2", self.spec.region)
        self.expires_at = self.now + dt.timedelta(minutes=self.spec.expires_after_minutes)
        self.catalogue: dict[str, InstanceInfo] = {}

    # -- helpers ---------------------------------------------------------------------------
    def tags(self, token: str) -> list[dict[str, str]]:
        return [
            {"Key": TAG_CAMPAIGN, "Value": self.spec.campaign},
            {"Key": TAG_OWNER, "Value": self.spec.owner},
            {"Key": TAG_EXPIRES, "Value": self.expires_at.strftime("%Y-%m-%dT%H:%M:%SZ")},
            {"Key": TAG_TOKEN, "Value": token},
            {"Key": "Name", "Value": resource_name(self.spec.campaign)},
        ]

    def tag_spec(self, resource_type: str, token: str) -> list[dict[str, Any]]:
        return [{"ResourceType": resource_type, "Tags": self.tags(token)}]

    def _step(self, kind: str, key: str, create: Any) -> str:
        region = self.spec.region
        token = self.journal.intent(kind, region, f"{key}#{self.session}" if self.session else key)
        faults.point(f"before:{kind}")
        rid = str(create(token))
        faults.point(f"after:{kind}")
        self.journal.created(kind, region, f"{key}#{self.session}" if self.session else key, rid)
        return rid

    # -- acquire ---------------------------------------------------------------------------
    def acquire(self) -> list[CloudHost]:
        """The network, then every fleet's instances (``netfleet cloud up``)."""
        self.prepare()
        hosts = []
        for fleet in self.spec.fleets:
            for i in range(fleet.count):
                name = f"{fleet.role}-{fleet.instance_type.replace('.', '-')}-{i}"
                hosts.append(self.launch(name, fleet.role, fleet.instance_type))
        faults.point("after:acquire")
        return hosts

    def prepare(self) -> None:
        """Look the types up, then create what the instances share: VPC, subnet, security
        group, key pair and (placement ``cluster``) a placement group."""
        spec = self.spec
        self.catalogue = catalogue.describe(self.ec2, [f.instance_type for f in spec.fleets])
        unknown = {f.instance_type for f in spec.fleets} - set(self.catalogue)
        if unknown:
            raise EnvironmentProblem(f"unknown instance types in {spec.region}: {sorted(unknown)}")
        az = spec.availability_zone or self._first_az()
        igw_id = None
        if spec.subnet_id:
            subnet_id = spec.subnet_id
            vpc_id = self.ec2.describe_subnets(SubnetIds=[subnet_id])["Subnets"][0]["VpcId"]
        else:
            vpc_id = self._step("vpc", "main", self._create_vpc)
            subnet_id = self._step("subnet", "main", lambda t: self._create_subnet(vpc_id, az, t))
            igw_id = self._internet_route(vpc_id, subnet_id)
        sg_id = self._step("security-group", "main", lambda t: self._create_sg(vpc_id, t))
        client_key = hostkeys.generate(resource_name(spec.campaign))
        hostkeys.write_private(self.identity, client_key)
        self._step(
            "key-pair",
            "main",
            lambda t: self.ec2.import_key_pair(
                KeyName=resource_name(spec.campaign),
                PublicKeyMaterial=client_key.public_openssh.encode(),
                TagSpecifications=self.tag_spec("key-pair", t),
            )["KeyName"],
        )
        group = self._placement_group() if spec.placement == "cluster" else None
        self.network = Network(vpc_id, subnet_id, sg_id, az, group, igw_id)
        self._pinned = []

    def launch(
        self, name: str, role: str, instance_type: str, extra_tags: dict[str, str] | None = None
    ) -> CloudHost:
        """One instance with its own generated host key, pinned in known_hosts once it runs."""
        net = self.network
        if net is None:
            raise EnvironmentProblem("launch before prepare: no network for the instances")
        info = self.catalogue[instance_type]
        ami = self.spec.ami or self._ami(info)
        host_key = hostkeys.generate(name)
        iid = self._step(
            "instance",
            name,
            lambda t: self._run_instance(info, ami, net, host_key, t, extra_tags or {}),
        )
        host = self._wait_host(iid, name, role, info, self.identity, self.known_hosts)
        self._pinned.append(hostkeys.known_hosts_line(host.private_ip, host_key.public_openssh))
        if host.public_ip:
            self._pinned.append(hostkeys.known_hosts_line(host.public_ip, host_key.public_openssh))
        durable.atomic_write(self.known_hosts, ("\n".join(self._pinned) + "\n").encode())
        return host

    def _placement_group(self) -> str:
        """A cluster placement group named after the campaign (moto lacks the API: Stubber)."""
        name = resource_name(self.spec.campaign)

        def create(token: str) -> str:
            self.ec2.create_placement_group(
                GroupName=name,
                Strategy="cluster",
                TagSpecifications=self.tag_spec("placement-group", token),
            )
            return name

        return self._step("placement-group", "main", create)

    def _first_az(self) -> str:
        zones = self.ec2.describe_availability_zones()["AvailabilityZones"]
        return str(sorted(z["ZoneName"] for z in zones)[0])

    def _ami(self, info: InstanceInfo) -> str:
        arch = "x86_64" if "x86_64" in info.architectures else "arm64"
        ssm = aws.client("ssm", self.spec.region)
        return str(ssm.get_parameter(Name=AMI_PARAMETER[arch])["Parameter"]["Value"])

    def _create_vpc(self, token: str) -> str:
        vpc = self.ec2.create_vpc(
            CidrBlock=self.spec.vpc_cidr, TagSpecifications=self.tag_spec("vpc", token)
        )["Vpc"]["VpcId"]
        self.ec2.modify_vpc_attribute(VpcId=vpc, EnableDnsHostnames={"Value": True})
        return str(vpc)

    def _create_subnet(self, vpc_id: str, az: str, token: str) -> str:
        subnet = self.ec2.create_subnet(
            VpcId=vpc_id,
            CidrBlock=self.spec.vpc_cidr.replace("/16", "/24"),
            AvailabilityZone=az,
            TagSpecifications=self.tag_spec("subnet", token),
        )["Subnet"]["SubnetId"]
        # instances get a public address: reachable over SSH, and able to fetch packages
        self.ec2.modify_subnet_attribute(SubnetId=subnet, MapPublicIpOnLaunch={"Value": True})
        return str(subnet)

    def _internet_route(self, vpc_id: str, subnet_id: str) -> str:
        """An internet gateway attached to the campaign's VPC and a route table with the
        default route through it, associated with the subnet. CreateInternetGateway takes no
        client token (a kill before its ``created`` record is recovered by tag);
        CreateRouteTable does."""
        igw_id = self._step(
            "internet-gateway",
            "main",
            lambda t: self.ec2.create_internet_gateway(
                TagSpecifications=self.tag_spec("internet-gateway", t)
            )["InternetGateway"]["InternetGatewayId"],
        )
        self.ec2.attach_internet_gateway(InternetGatewayId=igw_id, VpcId=vpc_id)
        rtb_id = self._step(
            "route-table",
            "main",
            lambda t: self.ec2.create_route_table(
                VpcId=vpc_id, ClientToken=t, TagSpecifications=self.tag_spec("route-table", t)
            )["RouteTable"]["RouteTableId"],
        )
        self.ec2.create_route(
            RouteTableId=rtb_id, DestinationCidrBlock="0.0.0.0/0", GatewayId=igw_id
        )
        self.ec2.associate_route_table(RouteTableId=rtb_id, SubnetId=subnet_id)
        return igw_id

    def _create_sg(self, vpc_id: str, token: str) -> str:
        sg = self.ec2.create_security_group(
            GroupName=resource_name(self.spec.campaign),
            Description="netfleet campaign: own hosts and the controller only",
            VpcId=vpc_id,
            TagSpecifications=self.tag_spec("security-group", token),
        )["GroupId"]
        self.ec2.authorize_security_group_ingress(
            GroupId=sg,
            IpPermissions=[
                {"IpProtocol": "-1", "UserIdGroupPairs": [{"GroupId": sg}]},
                {
                    "IpProtocol": "tcp",
                    "FromPort": 22,
                    "ToPort": 22,
                    "IpRanges": [{"CidrIp": self.spec.controller_cidr}],
                },
            ],
        )
        return str(sg)

    def _run_instance(
        self,
        info: InstanceInfo,
        ami: str,
        net: Network,
        host_key: hostkeys.KeyPair,
        token: str,
        extra_tags: dict[str, str],
    ) -> str:
        placement: dict[str, str] = {"AvailabilityZone": net.az}
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
        resp = self.ec2.run_instances(
            ImageId=ami,
            InstanceType=info.instance_type,
            MinCount=1,
            MaxCount=1,
            KeyName=resource_name(self.spec.campaign),
            SubnetId=net.subnet_id,
            SecurityGroupIds=[net.sg_id],
            Placement=placement,
            ClientToken=token,
            InstanceInitiatedShutdownBehavior="terminate",
            UserData=userdata.render(host_key, self.spec.expires_after_minutes),
            TagSpecifications=tags,
            **kwargs,
        )
        return str(resp["Instances"][0]["InstanceId"])

    def _wait_host(
        self,
        iid: str,
        name: str,
        role: str,
        info: InstanceInfo,
        identity: Path,
        known_hosts: Path,
    ) -> CloudHost:
        deadline = time.monotonic() + 600
        delay = self.poll_s
        while True:
            inst = self.ec2.describe_instances(InstanceIds=[iid])["Reservations"][0]["Instances"][0]
            state = inst["State"]["Name"]
            if state == "running":
                break
            if state in ("shutting-down", "terminated", "stopped"):
                raise EnvironmentProblem(f"instance {iid} ({name}) is {state}, not running")
            if time.monotonic() > deadline:
                raise EnvironmentProblem(
                    f"instance {iid} ({name}) is still {state} after 600 s: waited for it to "
                    "be running",
                    hint=f"look at it: aws ec2 describe-instances --instance-ids {iid}",
                )
            time.sleep(delay)
            delay = min(delay * 2, 5.0)
        labels = {**info.labels(), "role": role, "instance_id": iid, "region": self.spec.region}
        return CloudHost(
            name=name,
            instance_id=iid,
            instance_type=info.instance_type,
            role=role,
            private_ip=inst.get("PrivateIpAddress", ""),
            public_ip=inst.get("PublicIpAddress"),
            user="ec2-user",
            identity_file=identity,
            known_hosts=known_hosts,
            labels=labels,
        )

    # -- release ---------------------------------------------------------------------------
    def release(self) -> dict[str, int]:
        """Tear everything down (from the journal + tags) and verify nothing remains."""
        from netfleet.cloud.teardown import destroy

        return destroy(self.state_root, self.spec.campaign, poll_s=self.poll_s)
