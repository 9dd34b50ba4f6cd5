"""``kind: aws`` hosts for ``netfleet run``: the AWS provider on the host lifecycle.

An *owning* provider (see docs/hosts.md): for one campaign it

1. reaps expired leftovers of any campaign by tag, in the campaign's region (``cloud reap``);
2. journals a ``network`` lease, then creates VPC, subnet, security group, key pair (and a
   placement group) through :class:`~netfleet.cloud.provision.Provisioner`, whose own intent
   journal (``<state>/<campaign>/journal.jsonl``) records every create before it happens;
3. per host: journals an ``instance`` lease, launches the instance tagged with the lease id
   (``netfleet:lease``), its generated host key pinned in the campaign's known_hosts;
4. backing ``sim``: journals a ``sim-lab`` lease and brings up a lab with one namespace per
   instance shaped from its advertised figures (:mod:`netfleet.cloud.sim`); the runner's hosts
   are those namespaces, labelled from DescribeInstanceTypes. Backing ``ssh``: the runner's
   hosts are the instances over SSH with the pinned host keys.

``release_lease`` works from the campaign journal's record alone: an instance is terminated
only if it still carries the campaign's and the lease's tags; the network lease runs the
ordered teardown (``cloud destroy``) and counts what remains; the lab is taken down only if its
state directory holds the lease id. While hosts are in use a :class:`~netfleet.cloud.spot.
Watcher` notices instances EC2 reclaims; runs on them are recorded as interrupted.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netfleet import aws
from netfleet.cloud import spot
from netfleet.cloud.campaign import CloudSpec
from netfleet.cloud.journal import Journal, default_root
from netfleet.cloud.provision import TAG_CAMPAIGN, CloudHost, Provisioner
from netfleet.errors import EnvironmentProblem, HostError, LabError
from netfleet.hosts.base import Host, Process
from netfleet.hosts.netns import NetnsHost
from netfleet.hosts.provider import Acquired, HostRequest, Lease, LeaseLog, Provider
from netfleet.hosts.ssh import SshHost

TAG_LEASE = "netfleet:lease"


class _Reclaimable:
    """A host backed by an EC2 instance that EC2 may take away (spot)."""

    name: str
    instance_id: str
    gone: dict[str, str]

    def lost(self) -> str | None:
        return self.gone.get(self.instance_id)

    async def start(self, argv: list[str]) -> Process:
        why = self.lost()
        if why:
            raise HostError(f"host {self.name}: {why}")
        return await super().start(argv)  # type: ignore[misc]


@dataclass
class SimInstanceHost(_Reclaimable, NetnsHost):
    """An instance simulated by a lab namespace (backing ``sim``)."""

    instance_id: str = ""
    gone: dict[str, str] = field(default_factory=dict, repr=False)


@dataclass
class CloudSshHost(_Reclaimable, SshHost):
    """An instance reached over SSH with its pinned host key (backing ``ssh``)."""

    instance_id: str = ""
    gone: dict[str, str] = field(default_factory=dict, repr=False)


@dataclass
class Bill:
    """What a session launched, for the cost line: instance type → seconds it was held."""

    market: str
    region: str
    started: dict[str, tuple[str, float]] = field(default_factory=dict)  #: id → (type, t0)
    held_s: list[tuple[str, float]] = field(default_factory=list)  #: (type, seconds)


class AwsProvider(Provider):
    name = "aws"
    owns_resources = True
    batch_size = 0  # one campaign network for all of them

    def __init__(self, state_root: Path | None = None, poll_s: float = 0.2) -> None:
        self.state_root = state_root
        self.poll_s = poll_s
        self.gone: dict[str, str] = {}
        self.watchers: list[spot.Watcher] = []
        self.bills: list[Bill] = []
        self._sim_by_id: dict[str, list[SimInstanceHost]] = {}
        #: instance type → advertised (baseline, peak) Gbit/s, and the lab's rate scale (sim)
        self.advertised: dict[str, tuple[float | None, float | None]] = {}
        self.rate_scale = 1.0

    def root(self) -> Path:
        return self.state_root or default_root()

    # -- acquire ---------------------------------------------------------------------------
    async def acquire(self, requests: list[HostRequest], log: LeaseLog) -> list[Acquired]:
        settings = requests[0].spec.cloud
        if settings is None or any(r.spec.cloud != settings for r in requests):
            raise HostError("aws hosts of one campaign must share its cloud block")
        cs = CloudSpec.of_hosts(settings, [(r.spec.instance_type, r.spec.role) for r in requests])
        root = self.root()
        from netfleet.cloud.teardown import reap

        reap(root, [cs.region], dt.datetime.now(dt.UTC), delete=True, poll_s=self.poll_s)
        base = {"campaign": cs.campaign, "region": cs.region, "state_root": str(root)}
        net = log.intent(self.name, "network", {"kind": "network", **base})
        prov = Provisioner(cs, root, poll_s=self.poll_s, session=net.id[:8])
        prov.prepare()
        assert prov.network is not None
        log.acquired(Lease(net.id, net.provider, net.host, {**net.resource, **_ids(prov)}))
        bill = Bill(cs.market, cs.region)
        self.bills.append(bill)
        for itype, info in prov.catalogue.items():
            self.advertised[itype] = (info.baseline_gbps, info.peak_gbps)
        self.rate_scale = settings.rate_scale if settings.backing == "sim" else 1.0
        launched: list[tuple[HostRequest, CloudHost, Lease]] = []
        for req in requests:
            await asyncio.sleep(0)  # let Ctrl-C / SIGTERM in between launches
            lease = log.intent(self.name, req.name, {"kind": "instance", **base})
            host = prov.launch(
                req.name, req.spec.role, req.spec.instance_type, {TAG_LEASE: lease.id}
            )
            bill.started[host.instance_id] = (host.instance_type, time.monotonic())
            lease = Lease(
                lease.id, lease.provider, lease.host, {**lease.resource, "id": host.instance_id}
            )
            log.acquired(lease)
            launched.append((req, host, lease))
        extra = {"market": cs.market, "placement": cs.placement, "backing": settings.backing}
        if settings.backing == "sim":
            hosts = self._sim_hosts(settings, prov, launched, log, extra)
        else:
            hosts = [self._ssh_host(req, h, extra) for req, h, _ in launched]
        watcher = spot.Watcher(
            prov.ec2,
            [h.instance_id for _, h, _ in launched],
            self._reclaimed,
            sim=settings.backing == "sim",
            every_s=1.0 if settings.backing == "sim" else 15.0,
        )
        watcher.start()
        self.watchers.append(watcher)
        return [
            Acquired(host, self, lease) for host, (_, _, lease) in zip(hosts, launched, strict=True)
        ]

    def _reclaimed(self, instance_id: str, reason: str) -> None:
        """EC2 took ``instance_id``: note it, and in the sim stop what runs in its namespace
        (the machine is gone, and so are its processes)."""
        self.gone[instance_id] = reason
        from netfleet.lab import netns

        for host in self._sim_by_id.get(instance_id, []):
            netns.stop_processes(host.namespace, grace=0.5)

    def _sim_hosts(
        self,
        settings: Any,
        prov: Provisioner,
        launched: list[tuple[HostRequest, CloudHost, Lease]],
        log: LeaseLog,
        extra: dict[str, str],
    ) -> list[Host]:
        from netfleet import lab
        from netfleet.cloud.sim import lab_spec

        lab_name = "nf" + os.urandom(4).hex()
        lab_dir = prov.journal.dir / "sim" / lab_name
        where = {"kind": "sim-lab", "lab": lab_name, "state_dir": str(lab_dir)}
        lease = log.intent(self.name, "sim-lab", where)
        lab_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        (lab_dir / "owner").write_text(lease.id)
        log.acquired(lease)
        members = [
            (f"h{i}", prov.catalogue[h.instance_type], {**h.labels, **extra, "host": req.name})
            for i, (req, h, _) in enumerate(launched, start=1)
        ]
        try:
            spec = lab_spec(
                lab_name, members, rate_scale=settings.rate_scale, time_scale=settings.time_scale
            )
        except ValueError as exc:  # pydantic's ValidationError is one
            raise LabError(
                f"cannot shape the simulated instances: {exc}",
                hint="change cloud.rate_scale / cloud.time_scale, or use backing: ssh",
            ) from None
        state = lab.up(spec, lab_dir)
        hosts: list[Host] = []
        self._sim_by_id = {}
        for (req, h, _), (short, _, _) in zip(launched, members, strict=True):
            lh = state.hosts[short]
            sim_labels = {
                **{k: v for k, v in lh.labels.items() if k != "host"},
                "sim_rate_scale": f"{settings.rate_scale:g}",
                **req.spec.labels,
            }
            host = SimInstanceHost(
                name=req.name,
                address=lh.address,
                labels=sim_labels,
                namespace=lh.namespace,
                instance_id=h.instance_id,
                gone=self.gone,
            )
            self._sim_by_id.setdefault(h.instance_id, []).append(host)
            hosts.append(host)
        return hosts

    def _ssh_host(self, req: HostRequest, h: CloudHost, extra: dict[str, str]) -> Host:
        return CloudSshHost(
            name=req.name,
            address=h.private_ip,
            labels={**h.labels, **extra, **req.spec.labels},
            ssh_address=h.public_ip,
            user=h.user,
            key=str(h.identity_file),
            known_hosts=str(h.known_hosts),
            instance_id=h.instance_id,
            gone=self.gone,
        )

    # -- release ---------------------------------------------------------------------------
    async def _stop_watchers(self) -> None:
        for w in self.watchers:
            await w.stop()
        self.watchers = []

    async def release_lease(self, lease: Lease) -> str:
        await self._stop_watchers()
        kind = lease.resource.get("kind")
        if kind == "instance":
            return await asyncio.to_thread(self._release_instance, lease)
        if kind == "network":
            return await asyncio.to_thread(self._release_network, lease)
        if kind == "sim-lab":
            return await asyncio.to_thread(_release_lab, lease)
        raise HostError(f"aws lease {lease.id}: unknown resource kind {kind!r}: left alone")

    def _release_instance(self, lease: Lease) -> str:
        res = lease.resource
        iid = res.get("id")
        campaign, region = str(res.get("campaign")), str(res.get("region"))
        ec2 = aws.client("ec2", region)
        found = _instance(ec2, iid) if iid else _instance_by_lease(ec2, campaign, lease.id)
        if found is None or found["State"]["Name"] == "terminated":
            self._billed(iid)
            return "gone"
        tags = {t["Key"]: t["Value"] for t in found.get("Tags", [])}
        if tags.get(TAG_CAMPAIGN) != campaign or tags.get(TAG_LEASE) != lease.id:
            raise HostError(
                f"instance {found['InstanceId']} does not carry campaign {campaign!r} and lease "
                f"{lease.id}: not netfleet's to terminate, left alone"
            )
        ec2.terminate_instances(InstanceIds=[found["InstanceId"]])
        deadline, delay = time.monotonic() + 900, self.poll_s
        while (got := _instance(ec2, found["InstanceId"])) and got["State"]["Name"] != "terminated":
            if time.monotonic() > deadline:
                raise EnvironmentProblem(f"instance {found['InstanceId']} is not terminating")
            time.sleep(delay)
            delay = min(delay * 2, 10.0)
        Journal(Path(res["state_root"]), campaign).deleted("instance", region, found["InstanceId"])
        self._billed(found["InstanceId"])
        return "released"

    def _billed(self, iid: str | None) -> None:
        for bill in self.bills:
            if iid in bill.started:
                itype, t0 = bill.started.pop(iid)
                bill.held_s.append((itype, time.monotonic() - t0))

    def _release_network(self, lease: Lease) -> str:
        from netfleet.cloud.teardown import destroy

        res = lease.resource
        root, campaign = Path(res["state_root"]), str(res["campaign"])
        journal = Journal(root, campaign)
        if not journal.exists() or not journal.read().live():
            return "gone"
        destroy(root, campaign, poll_s=self.poll_s, regions=[str(res["region"])])
        return "released"


def _release_lab(lease: Lease) -> str:
    from netfleet import lab

    res = lease.resource
    lab_dir = Path(res["state_dir"])
    owner = lab_dir / "owner"
    if not owner.exists():
        return "gone"
    if owner.read_text().strip() != lease.id:
        raise HostError(f"{lab_dir} is not lease {lease.id}'s lab: left alone")
    lab.down(str(res["lab"]), lab_dir)
    shutil.rmtree(lab_dir)
    return "released"


def _ids(prov: Provisioner) -> dict[str, Any]:
    net = prov.network
    assert net is not None
    return {"vpc": net.vpc_id, "subnet": net.subnet_id, "security_group": net.sg_id}


def _instance(ec2: Any, iid: str) -> dict[str, Any] | None:
    from botocore.exceptions import ClientError

    try:
        resp = ec2.describe_instances(InstanceIds=[iid])
    except ClientError as exc:
        if "NotFound" in str(exc.response.get("Error", {}).get("Code", "")):
            return None
        raise
    for res in resp["Reservations"]:
        for inst in res["Instances"]:
            return dict(inst)
    return None


def _instance_by_lease(ec2: Any, campaign: str, lease_id: str) -> dict[str, Any] | None:
    """Killed between RunInstances and the journal's ``acquired``: find it by its tags."""
    resp = ec2.describe_instances(
        Filters=[
            {"Name": f"tag:{TAG_CAMPAIGN}", "Values": [campaign]},
            {"Name": f"tag:{TAG_LEASE}", "Values": [lease_id]},
        ]
    )
    for res in resp["Reservations"]:
        for inst in res["Instances"]:
            if inst["State"]["Name"] != "terminated":
                return dict(inst)
    return None
