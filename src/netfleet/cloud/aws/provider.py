"""``kind: aws`` hosts for ``netfleet run``: AWS behind the provider seam
(:class:`AwsCloud`, :mod:`netfleet.cloud.seam`), driven by the provider-neutral lifecycle
(:class:`AwsProvider` = :class:`netfleet.cloud.lifecycle.CloudProvider` on it).

An *owning* provider (see docs/hosts.md). ``catalogue`` and ``price`` (plan) run the spec's
checks and the permission probes first, then look the types up; ``acquire``, for one campaign,

1. reaps expired leftovers of any campaign by tag, in the campaign's regions (``cloud reap``);
2. journals a ``network`` lease, then creates, in each region its fleets use, VPC, subnets,
   internet gateway and route table, security group, key pair (and a placement group) through
   :class:`~netfleet.cloud.aws.acquire.provision.Provisioner`, whose own intent journal
   (``<state>/<campaign>/journal.jsonl``) records every create before it happens;
3. per host: journals an ``instance`` lease, launches the instance tagged with the lease id
   (``netfleet:lease``), its generated host key pinned in the campaign's known_hosts;

then ``bootstrap``:

4. backing ``sim``: journals a ``sim-lab`` lease and brings up a lab with one namespace per
   instance shaped from its advertised figures (``netfleet_sim.instances``); the runner's hosts
   are those namespaces, labelled from DescribeInstanceTypes. Backing ``ssh``: the runner's
   hosts are the instances over SSH with the pinned host keys, once each is ready
   (:mod:`netfleet.cloud.bootstrap.ready`: sshd with that key, cloud-init finished).

Fargate tiers (hosts with ``fargate: {cpu, memory}``, from ``cloud.fargate.tiers``): after the
instances, one ``task`` lease per tier is journalled, then the cluster, task definitions and
tasks are created (:mod:`netfleet.cloud.aws.acquire.fargate`; each task tagged with its lease
id); with backing ``sim`` each task gets a namespace in the same lab, shaped like its tier
(``netfleet_sim.fargate``); with backing ``ssh`` each task is a standing iperf3 server
at its ENI address (:func:`task_host`, :mod:`netfleet.hosts.standing`), measured from a client
on EC2, its side of the test read through ``--get-server-output``.

``release`` (:func:`netfleet.cloud.release.give_back` calls it: the one release path) works,
for a lease, from the campaign journal's record alone: a task is stopped (and waited
for) only if it carries the campaign's and the lease's tags, and instances of this session wait
until this session's tasks are stopped; an instance is terminated
only if it still carries the campaign's and the lease's tags; the network lease runs the
ordered teardown (``cloud destroy``) and counts what remains; the lab is taken down only if its
state directory holds the lease id. A campaign scope is ``cloud destroy``, an expired scope
``cloud reap --delete`` (:mod:`netfleet.cloud.aws.release.teardown`). While hosts are in use a
:class:`~netfleet.cloud.aws.measure.spot.Watcher` notices instances EC2 reclaims; runs on
them are recorded as interrupted.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netfleet import aws
from netfleet.cloud import backing, owner
from netfleet.cloud.aws.acquire.fargate import (
    IPERF3_PORT,
    FargateBlock,
    FargateTiers,
    TierHost,
    TierSpec,
    cluster_name,
    require_client_in,
)
from netfleet.cloud.aws.acquire.provision import CloudHost, Provisioner
from netfleet.cloud.aws.campaign import CloudSpec
from netfleet.cloud.aws.measure import spot
from netfleet.cloud.aws.plan import catalogue, permissions, prices, safety
from netfleet.cloud.aws.plan.catalogue import InstanceInfo
from netfleet.cloud.bootstrap import userdata
from netfleet.cloud.journal import Journal, default_root
from netfleet.cloud.lifecycle import CloudProvider
from netfleet.cloud.release import give_back
from netfleet.cloud.seam import Machine, Price, Released, Scope
from netfleet.errors import EnvironmentProblem, HostError, InputError, LabError
from netfleet.hosts.base import Host, Process
from netfleet.hosts.netns import NetnsHost
from netfleet.hosts.provider import HostRequest, Lease, LeaseLog
from netfleet.hosts.ssh import SshHost
from netfleet.hosts.standing import StandingServerHost
from netfleet.spec.cloud import public_path

TAG_LEASE = "netfleet:lease"
#: how long an instance's release waits for this session's tasks to be stopped first
TASKS_FIRST_S = 900.0


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
    tasks: dict[str, tuple[TierSpec, float]] = field(default_factory=dict)  #: arn → (tier, t0)
    tasks_held_s: list[tuple[TierSpec, float]] = field(default_factory=list)


@dataclass
class _Session:
    """What ``acquire`` leaves for ``bootstrap`` (one campaign per provider call)."""

    settings: Any
    prov: Provisioner
    cs: CloudSpec
    log: LeaseLog
    launched: list[tuple[HostRequest, CloudHost, Lease]]
    tiers: list[tuple[HostRequest, TierHost, Lease]]


class AwsCloud:
    """AWS behind the provider seam (:class:`netfleet.cloud.seam.Cloud`)."""

    name = "aws"

    def __init__(self, state_root: Path | None = None, poll_s: float = 0.2) -> None:
        self.state_root = state_root
        self.poll_s = poll_s
        self.gone: dict[str, str] = {}
        self.watchers: list[spot.Watcher | spot.NoticeProbe] = []
        self.bills: list[Bill] = []
        self._sim_by_id: dict[str, list[SimInstanceHost]] = {}
        #: instance type → advertised (baseline, peak) Gbit/s, and the lab's rate scale (sim)
        self.advertised: dict[str, tuple[float | None, float | None]] = {}
        self.rate_scale = 1.0
        #: task leases of this session not yet released (instances are released after them)
        self._live_tasks: set[str] = set()
        self._tasks_settled = asyncio.Event()
        self._session: _Session | None = None
        #: the requests (names and specs) whose checks and permission probes passed, and
        #: their CloudSpec: plan's probes are not sent again by the acquire that follows
        self._checked: tuple[list[tuple[str, Any]], CloudSpec] | None = None

    def root(self) -> Path:
        return self.state_root or default_root()

    # -- plan ------------------------------------------------------------------------------
    def _cloud_spec(self, requests: list[HostRequest]) -> CloudSpec:
        """The spec's checks, none of which calls AWS, then the launch plan of the EC2 hosts."""
        settings = requests[0].spec.cloud
        if settings is None or any(r.spec.cloud != settings for r in requests):
            raise HostError("aws hosts of one campaign must share its cloud block")
        userdata.check_images(requests)  # an engine the image cannot install: before launch
        task_reqs = [r for r in requests if r.spec.fargate is not None]
        requests = [r for r in requests if r.spec.fargate is None]
        if task_reqs and not requests:
            raise InputError(
                f"campaign {settings.campaign!r}: Fargate tiers need an EC2 client in the same "
                "VPC and security group",
                hint="add a fleet to the cloud block, e.g. "
                "{name: client, instance_type: c5.large, role: client}",
            )
        safety.check_backing(settings.backing, settings.campaign)  # before any AWS call
        cs = CloudSpec.of_hosts(settings, [r.spec for r in requests])
        if task_reqs:
            require_client_in(cs)
        return cs

    def _checked_spec(self, requests: list[HostRequest]) -> CloudSpec:
        """:meth:`_cloud_spec`, then the permission probes (denied actions: before anything
        is created) — once per set of requests."""
        key = [(r.name, r.spec) for r in requests]
        if self._checked is not None and self._checked[0] == key:
            return self._checked[1]
        self._checked = None
        cs = self._cloud_spec(requests)
        tasks = any(r.spec.fargate is not None for r in requests)
        permissions.require(cs, fargate=tasks)
        self._checked = (key, cs)
        return cs

    def catalogue(self, requests: Sequence[HostRequest]) -> dict[str, InstanceInfo]:
        """DescribeInstanceTypes of the EC2 types, in each region that launches them (after
        the spec's checks and the permission probes)."""
        cs = self._checked_spec(list(requests))
        found: dict[str, InstanceInfo] = {}
        for region in cs.regions:
            types = {f.instance_type for f in cs.fleets if cs.region_of(f) == region}
            got = catalogue.describe(aws.client("ec2", region), sorted(types))
            if types - set(got):
                raise EnvironmentProblem(
                    f"unknown instance types in {region}: {sorted(types - set(got))}"
                )
            found.update(got)
        return found

    def price(self, requests: Sequence[HostRequest], hours: float) -> Price:
        """These requests' EC2 instances for ``hours`` at the dated table's on-demand prices
        (offline; the plan commands' fuller estimate — spot, the Price List API, Fargate, the
        bill's other lines — is :mod:`netfleet.cloud.aws.plan.costs`)."""
        table = prices.load(self.root())
        ec2 = [r for r in requests if r.spec.fargate is None]
        if not ec2:  # Fargate tasks only: priced by the plan commands
            return Price(0.0, table.source)
        cs = CloudSpec.of_hosts(ec2[0].spec.cloud, [r.spec for r in ec2])
        usd, unknown = 0.0, []
        for fleet in cs.fleets:
            hourly = table.ec2_hourly(cs.region_of(fleet), fleet.instance_type)
            if hourly is None:
                unknown.append(fleet.instance_type)
            else:
                usd += hourly * fleet.count * hours
        return Price(None if unknown else usd, table.source, tuple(sorted(set(unknown))))

    # -- acquire ---------------------------------------------------------------------------
    async def acquire(self, requests: list[HostRequest], log: LeaseLog) -> list[Machine]:
        cs = self._checked_spec(requests)
        self._checked = None  # a later acquire (another campaign) checks again
        settings = requests[0].spec.cloud
        task_reqs = [r for r in requests if r.spec.fargate is not None]
        requests = [r for r in requests if r.spec.fargate is None]
        root = self.root()
        now = dt.datetime.now(dt.UTC)
        await give_back(self, Scope.expired_before(now, cs.regions))
        base = {"campaign": cs.campaign, "region": cs.region, "state_root": str(root)}
        where = {"kind": "network", **base, "regions": cs.regions}
        net = log.intent(self.name, "network", where)
        prov = Provisioner(cs, root, poll_s=self.poll_s, session=net.id[:8])
        prov.prepare()
        log.acquired(net)  # a reference: state_root + campaign locate the cloud journal
        bills = {region: Bill(cs.market, region) for region in cs.regions}  # priced per region
        self.bills.extend(bills.values())
        for itype, info in prov.catalogue.items():
            self.advertised[itype] = (info.baseline_gbps, info.peak_gbps)
        self.rate_scale = settings.rate_scale if settings.backing == "sim" else 1.0
        launched: list[tuple[HostRequest, CloudHost, Lease]] = []
        for index, req in enumerate(requests):  # of_hosts: fleet ``index`` is this host
            await asyncio.sleep(0)  # let Ctrl-C / SIGTERM in between launches
            region = prov.sites[index].region
            lease = log.intent(self.name, req.name, {"kind": "instance", **base, "region": region})
            host = prov.launch(
                req.name, req.spec.role, req.spec.machine, {TAG_LEASE: lease.id}, fleet=index
            )
            bills[region].started[host.instance_id] = (host.instance_type, time.monotonic())
            lease = Lease(
                lease.id, lease.provider, lease.host, {**lease.resource, "id": host.instance_id}
            )
            log.acquired(lease)
            launched.append((req, host, lease))
        await asyncio.sleep(0)
        tiers = (
            self._tasks(settings, prov, task_reqs, log, base, bills[cs.region]) if task_reqs else []
        )
        self._session = _Session(settings, prov, cs, log, launched, tiers)
        return [Machine(req, lease, h) for req, h, lease in launched] + [
            Machine(req, lease, th) for req, th, lease in tiers
        ]

    # -- bootstrap -------------------------------------------------------------------------
    async def bootstrap(self, machines: list[Machine]) -> list[Host]:
        """The instances as hosts (a lab namespace each with backing ``sim``, SSH once ready
        with ``ssh``), the tiers as standing servers; then the spot watchers."""
        session = self._session
        mine = [lease.id for _, _, lease in [*session.launched, *session.tiers]] if session else []
        if session is None or [m.lease.id for m in machines] != mine:
            raise HostError("aws: bootstrap of machines this acquire did not return")
        settings, prov, cs, log = session.settings, session.prov, session.cs, session.log
        launched, tiers = session.launched, session.tiers
        # path public (seed 003), or auto across regions (no peering): public addresses
        public = public_path(settings, len(cs.regions))
        extra = {
            "market": cs.market,
            "placement": cs.placement,
            "backing": settings.backing,
            "path": "public" if public else "private",
        }
        if settings.backing == "sim":
            hosts = self._sim_hosts(settings, prov, launched, tiers, log, extra, public)
        else:
            ssh_hosts = [self._ssh_host(req, h, extra, public) for req, h, _ in launched]
            await _all_ready(ssh_hosts)
            port = settings.fargate.port if settings.fargate else IPERF3_PORT
            private = {**extra, "path": "private"}  # a task is met at its ENI's private address
            tasks = [task_host(req, th, port, private) for req, th, _ in tiers]
            hosts = [*ssh_hosts, *tasks]
        for region in cs.regions:  # one watcher per region: DescribeInstances is regional
            watcher = spot.Watcher(
                prov.client(region),
                [h.instance_id for _, h, _ in launched if h.region == region],
                self._reclaimed,
                sim=settings.backing == "sim",
                every_s=1.0 if settings.backing == "sim" else 15.0,
            )
            watcher.start()
            self.watchers.append(watcher)
        if settings.backing == "ssh" and cs.market == "spot":  # the two-minute notice
            probe = spot.NoticeProbe(
                [(h.instance_id, h) for h in hosts if isinstance(h, CloudSshHost)],
                self._reclaimed,
            )
            probe.start()
            self.watchers.append(probe)
        self._session = None
        return hosts

    def _tasks(
        self,
        settings: Any,
        prov: Provisioner,
        reqs: list[HostRequest],
        log: LeaseLog,
        base: dict[str, str],
        bill: Bill,
    ) -> list[tuple[HostRequest, TierHost, Lease]]:
        """One ``task`` lease per tier, journalled before the tiers are launched together."""
        given = settings.fargate
        sizes: list[TierSpec] = [r.spec.fargate for r in reqs]
        try:  # the same tier under two host names is refused
            block = FargateBlock(
                tiers=sizes, **({"image": given.image, "port": given.port} if given else {})
            )
        except ValueError as exc:  # pydantic's ValidationError is one
            raise InputError(f"campaign {settings.campaign!r}: Fargate tiers: {exc}") from None
        where = {"kind": "task", "cluster": cluster_name(settings.campaign), **base}
        pairs = zip(reqs, sizes, strict=True)
        leases = {t.name: log.intent(self.name, r.name, where) for r, t in pairs}
        tags = {name: {TAG_LEASE: lease.id} for name, lease in leases.items()}
        self._live_tasks.update(lease.id for lease in leases.values())
        self._tasks_settled.clear()
        made = FargateTiers(prov, block, task_tags=tags).acquire()
        out = []
        for req, th in zip(reqs, made, strict=True):
            intent = leases[th.name]
            lease = Lease(
                intent.id, intent.provider, intent.host, {**intent.resource, "id": th.task_arn}
            )
            log.acquired(lease)
            bill.tasks[th.task_arn] = (th.tier, time.monotonic())
            out.append((req, th, lease))
        return out

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
        tiers: list[tuple[HostRequest, TierHost, Lease]],
        log: LeaseLog,
        extra: dict[str, str],
        public: bool = False,
    ) -> list[Host]:
        from netfleet import lab

        simlab, fargate_sim = backing.sim("labs"), backing.sim("fargate")
        lab_spec = backing.sim("instances").lab_spec

        lab_name, lab_dir = simlab.new_lab(prov.state_root, prov.spec.campaign)
        where = {"kind": "sim-lab", "lab": lab_name, "state_dir": str(lab_dir)}
        lease = log.intent(self.name, "sim-lab", where)
        simlab.claim(
            lab_dir,
            lease.id,
            region=prov.spec.region,
            expires_at=prov.expires_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        )
        log.acquired(lease)
        members = [
            (f"h{i}", prov.catalogue[h.instance_type], {**h.labels, **extra, "host": req.name})
            for i, (req, h, _) in enumerate(launched, start=1)
        ]
        private = {**extra, "path": "private"}  # a task is met at its ENI's private address
        tasks = {  # lab host = the tier's name (≤ 10 characters), shaped like seed 000's tier
            th.name: fargate_sim.lab_host(th, settings.rate_scale, {**private, "host": req.name})
            for req, th, _ in tiers
        }
        try:
            spec = lab_spec(
                lab_name,
                members,
                rate_scale=settings.rate_scale,
                time_scale=settings.time_scale,
                extra_hosts=tasks,
                public_path=public,
            )
        except ValueError as exc:  # pydantic's ValidationError is one
            raise LabError(
                f"cannot shape the simulated instances: {exc}",
                hint="change cloud.rate_scale / cloud.time_scale, or use backing: ssh",
            ) from None
        state = lab.up(spec, lab_dir)
        hosts: list[Host] = []
        self._sim_by_id = {}
        shorts = [(r, short) for (r, _, _), (short, _, _) in zip(launched, members, strict=True)]
        ids = {req.name: h.instance_id for req, h, _ in launched}
        for req, short in shorts + [(req, th.name) for req, th, _ in tiers]:
            lh = state.hosts[short]
            labels = {
                **{k: v for k, v in lh.labels.items() if k != "host"},
                "sim_rate_scale": f"{settings.rate_scale:g}",
                **req.spec.labels,
            }
            if req.name not in ids:  # a Fargate task: nothing reclaims it
                task = NetnsHost(
                    name=req.name, address=lh.address, labels=labels, namespace=lh.namespace
                )
                hosts.append(task)
                continue
            host = SimInstanceHost(
                name=req.name,
                address=(lh.public_address or lh.address) if public else lh.address,
                labels=labels,
                namespace=lh.namespace,
                instance_id=ids[req.name],
                gone=self.gone,
            )
            self._sim_by_id.setdefault(host.instance_id, []).append(host)
            hosts.append(host)
        return hosts

    def _ssh_host(
        self, req: HostRequest, h: CloudHost, extra: dict[str, str], public: bool = False
    ) -> CloudSshHost:
        return CloudSshHost(
            name=req.name,
            address=(h.public_ip or h.private_ip) if public else h.private_ip,
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

    async def release(self, scope: Scope) -> Released:
        """A lease (by its kind, below), a campaign (``cloud destroy``: from the intent journal
        and the tags, then counted) or the expired campaigns (``cloud reap --delete``)."""
        from netfleet.cloud.aws.release.teardown import destroy, reap

        if scope.lease is not None:
            return Released(await self._release_lease(scope.lease))
        if scope.campaign is not None:
            left = await asyncio.to_thread(
                destroy, self.root(), scope.campaign, poll_s=self.poll_s, regions=[*scope.regions]
            )
            return Released("released", remaining=left)
        now = scope.now or dt.datetime.now(dt.UTC)
        found = await asyncio.to_thread(
            reap,
            self.root(),
            [*scope.regions],
            now,
            delete=True,
            poll_s=self.poll_s,
            all_owners=scope.all_owners,
        )
        return Released("released", found=found)

    async def _release_lease(self, lease: Lease) -> str:
        kind = lease.resource.get("kind")
        # hosts are released one by one as their last run ends (HostPool.release_early): the
        # spot watcher keeps watching the others until the campaign's network goes
        if kind == "network":
            await self._stop_watchers()
        if kind == "task":
            try:
                return await asyncio.to_thread(self._release_task, lease)
            finally:
                self._live_tasks.discard(lease.id)
                if not self._live_tasks:
                    self._tasks_settled.set()
        if kind == "instance":
            if self._live_tasks:  # tasks first: the client goes after the servers it measured
                # not released by this pool in time: the network lease stops them anyway
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._tasks_settled.wait(), TASKS_FIRST_S)
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
        me = owner.installation(Path(res["state_root"]))
        found = _instance(ec2, iid) if iid else _instance_by_lease(ec2, campaign, me, lease.id)
        if found is None or found["State"]["Name"] == "terminated":
            self._billed(iid)
            return "gone"
        tags = {t["Key"]: t["Value"] for t in found.get("Tags", [])}
        what = f"instance {found['InstanceId']}"
        _check_owned(what, tags, campaign, me, lease.id, "terminate")
        ec2.terminate_instances(InstanceIds=[found["InstanceId"]])

        def terminated() -> bool:
            got = _instance(ec2, found["InstanceId"])
            return got is None or got["State"]["Name"] == "terminated"

        self._wait(terminated, f"instance {found['InstanceId']} is not terminating", 900, 10.0)
        Journal(Path(res["state_root"]), campaign).deleted("instance", region, found["InstanceId"])
        self._billed(found["InstanceId"])
        return "released"

    def _wait(self, done: Any, what: str, limit_s: float, max_delay: float) -> None:
        deadline, delay = time.monotonic() + limit_s, self.poll_s
        while not done():
            if time.monotonic() > deadline:
                raise EnvironmentProblem(what)
            time.sleep(delay)
            delay = min(delay * 2, max_delay)

    def _billed(self, iid: str | None) -> None:
        for bill in self.bills:
            if iid in bill.started:
                itype, t0 = bill.started.pop(iid)
                bill.held_s.append((itype, time.monotonic() - t0))
            if iid in bill.tasks:
                tier, t0 = bill.tasks.pop(iid)
                bill.tasks_held_s.append((tier, time.monotonic() - t0))

    def _release_task(self, lease: Lease) -> str:
        """Stop the lease's task if it carries the campaign's and the lease's tags; wait for
        STOPPED (its ENI holds the security group and subnet)."""
        from netfleet.cloud.aws.release.fargate_teardown import STOP_REASON

        res = lease.resource
        arn, cluster = res.get("id"), str(res.get("cluster"))
        campaign, region = str(res.get("campaign")), str(res.get("region"))
        ecs = aws.client("ecs", region)
        me = owner.installation(Path(res["state_root"]))
        found = _task(ecs, cluster, arn) if arn else _task_by_lease(ecs, cluster, lease.id)
        if found is None or found.get("lastStatus") == "STOPPED":
            self._billed(arn)
            return "gone"
        tags = {t["key"]: t["value"] for t in found.get("tags", [])}
        task_arn = str(found["taskArn"])
        _check_owned(f"task {task_arn}", tags, campaign, me, lease.id, "stop")
        if found.get("desiredStatus") != "STOPPED":
            ecs.stop_task(cluster=cluster, task=task_arn, reason=STOP_REASON)

        def stopped() -> bool:
            got = _task(ecs, cluster, task_arn)
            return got is None or got.get("lastStatus") == "STOPPED"

        self._wait(stopped, f"Fargate task {task_arn} is not stopping", 600, 5.0)
        self._billed(task_arn)
        return "released"

    def _release_network(self, lease: Lease) -> str:
        from netfleet.cloud.aws.release.teardown import destroy

        res = lease.resource
        root, campaign = Path(res["state_root"]), str(res["campaign"])
        journal = Journal(root, campaign)
        if not journal.exists() or not journal.read().live():
            return "gone"
        regions = res.get("regions")
        regions = [str(r) for r in regions] if isinstance(regions, list) else []
        destroy(
            root,
            campaign,
            poll_s=self.poll_s,
            regions=[str(res["region"]), *regions],
            sim_labs=False,  # the sim-lab lease releases its own lab
        )
        return "released"


class AwsProvider(CloudProvider):
    """``kind: aws`` hosts: the provider-neutral lifecycle (:class:`CloudProvider`) on
    :class:`AwsCloud` — one campaign network for all of its hosts (``batch_size`` 0)."""

    name = "aws"
    batch_size = 0
    cloud: AwsCloud

    def __init__(self, state_root: Path | None = None, poll_s: float = 0.2) -> None:
        super().__init__(AwsCloud(state_root, poll_s))


def task_host(
    req: HostRequest, th: TierHost, port: int, extra: dict[str, str]
) -> StandingServerHost:
    """A Fargate task as the runner's host (``backing: ssh``): a standing iperf3 server at the
    task's ENI address, which the client on EC2 reaches inside the VPC; netfleet runs nothing
    in it (:mod:`netfleet.hosts.standing`)."""
    from netfleet.cloud.aws.acquire.fargate import server_command

    return StandingServerHost(
        name=req.name,
        address=th.private_ip,
        labels={**th.labels, **extra, **req.spec.labels},
        server_argv=server_command(port),
        server_port=port,
        what=f"Fargate task {th.task_arn}",
    )


async def _all_ready(hosts: list[CloudSshHost]) -> None:
    """Wait until every instance is ready over SSH (:mod:`.ready`), together; the first that
    fails stops the others' waits and is raised."""
    from netfleet.cloud.bootstrap.ready import wait_ready

    tasks = [asyncio.ensure_future(wait_ready(h, h.instance_id)) for h in hosts]
    if not tasks:
        return
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        for task in done:
            task.result()
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _check_owned(
    what: str, tags: dict[str, str], campaign: str, installation: str, lease_id: str, verb: str
) -> None:
    """Release only what carries the campaign's, this installation's and the lease's tags."""
    if not owner.ours(tags, campaign, installation) or tags.get(TAG_LEASE) != lease_id:
        raise HostError(
            f"{what} does not carry campaign {campaign!r}, this installation "
            f"({installation}) and lease {lease_id}: not netfleet's to {verb}, left alone"
        )


def _release_lab(lease: Lease) -> str:
    """The lease's lab, after ``netfleet_sim.labs.take_down``'s checks (``owner`` = the lease)."""
    return backing.sim("labs").take_down(Path(str(lease.resource["state_dir"])), lease.id)


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


def _instance_by_lease(
    ec2: Any, campaign: str, installation: str, lease_id: str
) -> dict[str, Any] | None:
    """Killed between RunInstances and the journal's ``acquired``: find it by its tags."""
    resp = ec2.describe_instances(
        Filters=[
            *owner.filters(campaign, installation),
            {"Name": f"tag:{TAG_LEASE}", "Values": [lease_id]},
        ]
    )
    for res in resp["Reservations"]:
        for inst in res["Instances"]:
            if inst["State"]["Name"] != "terminated":
                return dict(inst)
    return None


def _task(ecs: Any, cluster: str, arn: str) -> dict[str, Any] | None:
    from botocore.exceptions import ClientError

    try:
        resp = ecs.describe_tasks(cluster=cluster, tasks=[arn], include=["TAGS"])
    except ClientError as exc:
        if "NotFound" in str(exc.response.get("Error", {}).get("Code", "")):
            return None
        raise
    for task in resp.get("tasks", []):
        return dict(task)
    return None


def _task_by_lease(ecs: Any, cluster: str, lease_id: str) -> dict[str, Any] | None:
    """Killed between RunTask and the journal's ``acquired``: find the task by its lease tag."""
    from botocore.exceptions import ClientError

    arns: list[str] = []
    try:
        for desired in ("RUNNING", "STOPPED"):
            arns += ecs.list_tasks(cluster=cluster, desiredStatus=desired).get("taskArns", [])
    except ClientError as exc:
        if "NotFound" in str(exc.response.get("Error", {}).get("Code", "")):
            return None  # no cluster: no task
        raise
    for i in range(0, len(arns), 100):
        found = ecs.describe_tasks(cluster=cluster, tasks=arns[i : i + 100], include=["TAGS"])
        for task in found.get("tasks", []):
            tags = {t["key"]: t["value"] for t in task.get("tags", [])}
            if tags.get(TAG_LEASE) == lease_id and task.get("lastStatus") != "STOPPED":
                return dict(task)
    return None
