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
   (``netfleet:lease``), its generated host key pinned in the campaign's known_hosts.

Steps 1-2 (and the sim lab, and the heartbeat of the dead-man switch:
:mod:`netfleet.cloud.aws.measure.expiry`) happen on the campaign's first acquire, for every
host :meth:`AwsProvider.prepare` named; the runner may then acquire the hosts in waves
(:mod:`netfleet.runner.waves`), each acquire launching its instances in parallel;

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
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netfleet import aws, text
from netfleet.cloud import backing, owner
from netfleet.cloud.aws import filters
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
from netfleet.cloud.aws.journal import Journal
from netfleet.cloud.aws.measure import expiry, spot
from netfleet.cloud.aws.plan import catalogue, costs, permissions, prices, quotas, safety
from netfleet.cloud.aws.plan.catalogue import InstanceInfo
from netfleet.cloud.bootstrap import userdata
from netfleet.cloud.journal import default_root
from netfleet.cloud.lifecycle import CloudProvider
from netfleet.cloud.release import give_back
from netfleet.cloud.seam import Machine, Price, Quota, Released, Scope
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
#: how long an acquire cancelled (Ctrl-C, SIGTERM) waits for its RunInstances calls in flight
#: to answer, so that the instances they made are released by id (a lookup by tag may not list
#: a just-launched instance yet)
LAUNCH_SETTLE_S = 120.0


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
    """What ``acquire`` leaves for ``bootstrap`` (one wave: this acquire's machines)."""

    settings: Any
    prov: Provisioner
    cs: CloudSpec
    log: LeaseLog
    launched: list[tuple[HostRequest, CloudHost, Lease]]
    tiers: list[tuple[HostRequest, TierHost, Lease]]


@dataclass
class _Network:
    """What every acquire of one campaign shares (waves: several acquires): made by the first,
    given back with the network lease — the provisioner, the bills, each host's fleet, the sim
    lab (a namespace for every instance the campaign will launch), the heartbeat."""

    settings: Any
    prov: Provisioner
    base: dict[str, str]
    bills: dict[str, Bill]
    index: dict[str, int]  #: host name → its fleet in ``prov.spec``
    extra: dict[str, str]
    public: bool
    lab: Any = None  #: backing sim: the lab's state
    shorts: dict[str, str] = field(default_factory=dict)  #: host name → lab host (sim)
    heartbeat: Any = None


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
        #: what each acquire leaves for its bootstrap, by the acquire's lease ids (waves may
        #: acquire at once)
        self._sessions: dict[tuple[str, ...], _Session] = {}
        #: every aws host the campaign will ask for, the plan's expected wall time (prepare)
        self._planned: list[HostRequest] = []
        self._expected_s: float | None = None
        self._net: _Network | None = None
        #: held while the campaign's network is made: concurrent first acquires (two wave
        #: groups) make it once; made lazily, on the running loop
        self._net_lock: asyncio.Lock | None = None
        #: the first acquire's failure to make the network: the others do not try again
        self._net_failed: BaseException | None = None
        self._ssh_hosts: list[CloudSshHost] = []
        #: the prefix lists' changes of this process's releases, one at a time
        self._prefix_lock = threading.Lock()
        #: the requests (names and specs) whose checks and permission probes passed, and
        #: their CloudSpec: plan's probes are not sent again by the acquire that follows
        self._checked: tuple[list[tuple[str, Any]], CloudSpec] | None = None
        #: ``netfleet run``: the hosts and the priced plan (waves) the run follows
        #: (:meth:`follow`): ``price`` and ``quota`` answer for it
        self._following: tuple[frozenset[str], costs.Priced] | None = None

    def root(self) -> Path:
        return self.state_root or default_root()

    @property
    def expires_at(self) -> dt.datetime | None:
        """When the campaign's machines power themselves off (its network's ``expires-at``
        stamp); None before the first acquire made the network."""
        return None if self._net is None else self._net.prov.expires_at

    def prepare(self, requests: list[HostRequest], expected_s: float | None) -> None:
        """A new campaign: every aws host it will ask for (its acquires may come in waves)
        and the plan's expected wall time (the dead-man switch follows it)."""
        self._planned = list(requests)
        self._expected_s = expected_s
        self._checked = None  # its permissions are probed again, at its first plan or acquire
        beat = None if self._net is None else self._net.heartbeat
        if beat is not None and beat.task is not None:  # an earlier campaign's network stayed open
            beat.task.cancel()
        self._net = None
        self._net_lock = None
        self._net_failed = None
        self._ssh_hosts = []

    def _whole(self, requests: list[HostRequest]) -> list[HostRequest]:
        """The campaign's hosts when ``requests`` are some of them (a wave: the spec's checks
        hold for the campaign — a cross-az wave of one fleet is no error), else ``requests``."""
        names = {r.name for r in self._planned}
        return self._planned if requests and all(r.name in names for r in requests) else requests

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
        is created) — once per campaign: a wave's requests stand for the campaign's hosts
        (:meth:`_whole`), so the first wave's probes hold for the later ones (each wave probed
        again: ~17 calls to AWS a wave, and a denial after the first wave's launch is no longer
        "before anything is created"); :meth:`prepare` of the next campaign forgets them."""
        requests = self._whole(requests)
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

    def follow(self, hosts: Sequence[str], priced: costs.Priced) -> None:
        """``netfleet run``: the campaign's aws hosts and the priced plan the run follows
        (:func:`netfleet.cloud.aws.runs.plan_cost`: its waves, spot, Fargate tasks, the bill's
        other lines): :meth:`price` and :meth:`quota` of those hosts answer for it."""
        self._following = (frozenset(hosts), priced)

    def _followed(self, requests: Sequence[HostRequest]) -> costs.Priced | None:
        found = self._following
        return found[1] if found and {r.name for r in requests} == found[0] else None

    def price(self, requests: Sequence[HostRequest], hours: float) -> Price:
        """The plan ``netfleet run`` follows (:meth:`follow`): its estimate, and the most
        instances it holds at once — its waves' peak, or the shared instances and the largest
        job when a job does not fit ``--max-instances`` even alone. Otherwise these requests'
        EC2 instances for ``hours`` at the dated table's on-demand prices (offline; the plan
        commands' fuller estimate — spot, the Price List API, Fargate, the bill's other lines
        — is :mod:`netfleet.cloud.aws.plan.costs`)."""
        planned = self._followed(requests)
        if planned is not None:
            est, plan = planned.estimate, planned.waves.plan
            return Price(
                est.usd,
                costs.PRICE_SOURCE if est.unknown else prices.load(self.root()).source,
                tuple(est.unknown),
                est.subtotal,
                machines=max(est.instances, plan.least_instances),
            )
        table = prices.load(self.root())
        ec2 = [r for r in requests if r.spec.fargate is None]
        if not ec2:  # Fargate tasks only: priced by the plan commands
            return Price(0.0, table.source)
        region = ec2[0].spec.cloud.region  # (a wave of one cross-az fleet is no CloudSpec)
        usd, unknown = 0.0, []
        for req in ec2:  # this acquire's (a wave's) instances
            hourly = table.ec2_hourly(req.spec.region or region, req.spec.machine)
            if hourly is None:
                unknown.append(req.spec.machine)
            else:
                usd += hourly * hours
        return Price(
            None if unknown else usd, table.source, tuple(sorted(set(unknown))), subtotal=usd
        )

    def quota(self, requests: Sequence[HostRequest]) -> Quota:
        """The plan ``netfleet run`` follows (:meth:`follow`): the jobs that fit no quota even
        alone (its waves keep the rest within the vCPU and Fargate quotas as read; the reads'
        notes are in its table). Otherwise the EC2 vCPU quotas of these requests' instances
        (:mod:`~.plan.quotas`)."""
        planned = self._followed(requests)
        if planned is not None:
            return Quota(tuple(planned.waves.plan.blocked))
        found = quotas.check_campaign(self._cloud_spec(list(requests)))
        return Quota(tuple(found.over), tuple(found.notes))

    # -- acquire ---------------------------------------------------------------------------
    async def acquire(self, requests: list[HostRequest], log: LeaseLog) -> list[Machine]:
        """One wave: the first acquire of a campaign makes what its hosts share (the network,
        for every host ``prepare`` named); each launches its own instances in parallel."""
        cs = self._checked_spec(requests)
        settings = requests[0].spec.cloud
        whole = [r for r in self._whole(requests) if r.spec.fargate is None]  # = cs.fleets
        task_reqs = [r for r in requests if r.spec.fargate is not None]
        requests = [r for r in requests if r.spec.fargate is None]
        net = await self._campaign_network(cs, settings, whole, task_reqs, log)
        prov, bills, base = net.prov, net.bills, net.base
        leases = [
            log.intent(self.name, r.name, {"kind": "instance", **base,
                                            "region": prov.sites[net.index[r.name]].region})
            for r in requests
        ]  # fmt: skip

        ids: dict[str, str] = {}  # lease id → instance id, as each RunInstances answers
        stopping = threading.Event()

        def launch(req: HostRequest, lease: Lease) -> CloudHost:
            def answered(iid: str) -> None:
                ids[lease.id] = iid
                if stopping.is_set():  # cancelled meanwhile: no wait for running
                    raise _LaunchStopped(iid)

            if stopping.is_set():
                raise _LaunchStopped(None)
            return prov.launch(
                req.name, req.spec.role, req.spec.machine, {TAG_LEASE: lease.id},
                fleet=net.index[req.name], tools=req.tools, answered=answered,
            )  # fmt: skip

        jobs = [
            asyncio.ensure_future(asyncio.to_thread(launch, r, lease))
            for r, lease in zip(requests, leases, strict=True)
        ]
        try:
            made = await _all_launched(jobs)
        except asyncio.CancelledError:
            # RunInstances calls in flight still make their instances: wait for their answers
            # (bounded) and give the pool their ids, so it releases them by id
            stopping.set()
            await asyncio.wait(jobs, timeout=LAUNCH_SETTLE_S)
            for job in jobs:  # retrieved: stopped launches are no error of their own
                if job.done() and not job.cancelled():
                    job.exception()
            for lease in leases:
                if lease.id in ids:
                    res = {**lease.resource, "id": ids[lease.id]}
                    log.acquired(Lease(lease.id, lease.provider, lease.host, res))
            raise
        launched: list[tuple[HostRequest, CloudHost, Lease]] = []
        for req, lease, host in zip(requests, leases, made, strict=True):
            bills[host.region].started[host.instance_id] = (host.instance_type, time.monotonic())
            lease = Lease(
                lease.id, lease.provider, lease.host, {**lease.resource, "id": host.instance_id}
            )
            log.acquired(lease)
            launched.append((req, host, lease))
        await asyncio.sleep(0)
        tiers = (
            self._tasks(settings, prov, task_reqs, log, base, bills[cs.region]) if task_reqs else []
        )
        machines = [Machine(req, lease, h) for req, h, lease in launched] + [
            Machine(req, lease, th) for req, th, lease in tiers
        ]
        key = tuple(m.lease.id for m in machines)
        self._sessions[key] = _Session(settings, prov, cs, log, launched, tiers)
        return machines

    async def _campaign_network(
        self,
        cs: CloudSpec,
        settings: Any,
        whole: list[HostRequest],
        task_reqs: list[HostRequest],
        log: LeaseLog,
    ) -> _Network:
        """The campaign's network, made by the first acquire while the others wait for it
        (two wave groups acquiring at once made two VPCs, and the second overwrote the
        campaign's key pair and SSH key)."""
        if self._net_lock is None:
            self._net_lock = asyncio.Lock()
        async with self._net_lock:
            if self._net_failed is not None:
                raise HostError(
                    f"aws: campaign {cs.campaign!r}: its network could not be made "
                    f"({self._net_failed}): no hosts launched for this wave"
                )
            if self._net is not None:
                if task_reqs:
                    raise HostError(
                        "aws: Fargate tasks are acquired with the campaign's first hosts"
                    )
                return self._net
            try:
                self._net = await self._network(cs, settings, whole, log)
            except BaseException as exc:
                self._net_failed = exc
                raise
            return self._net

    async def _network(
        self, cs: CloudSpec, settings: Any, hosts: list[HostRequest], log: LeaseLog
    ) -> _Network:
        """The campaign's first acquire: reap expired leftovers, journal the network lease and
        create the networks of every region its hosts use; the dead-man switch from the plan."""
        if self._expected_s is not None:  # the switch follows the plan (25.3), not the fixed one
            minutes = expiry.switch_s(self._expected_s, _scale(settings)) / 60
            cs = cs.model_copy(update={"expires_after_minutes": minutes})
        root = self.root()
        now = dt.datetime.now(dt.UTC)
        await give_back(self, Scope.expired_before(now, cs.regions))
        base = {"campaign": cs.campaign, "region": cs.region, "state_root": str(root)}
        where = {"kind": "network", **base, "regions": cs.regions}
        net = log.intent(self.name, "network", where)
        prov = Provisioner(cs, root, poll_s=self.poll_s, session=net.id[:8])
        await asyncio.to_thread(prov.prepare)
        for note in prov.notes:  # where the fleets went, when it is not where asked
            print(f"note: {text.line(note)}", file=sys.stderr)
        log.acquired(net)  # a reference: state_root + campaign locate the cloud journal
        bills = {region: Bill(cs.market, region) for region in cs.regions}  # priced per region
        self.bills.extend(bills.values())
        for itype, info in prov.catalogue.items():
            self.advertised[itype] = (info.baseline_gbps, info.peak_gbps)
        self.rate_scale = settings.rate_scale if settings.backing == "sim" else 1.0
        # path public (seed 003), or auto across regions (no peering): public addresses
        public = public_path(settings, len(cs.regions))
        extra = {
            "market": cs.market,
            "placement": cs.placement,
            "backing": settings.backing,
            "path": "public" if public else "private",
        }
        index = {r.name: i for i, r in enumerate(hosts)}  # of_hosts: fleet i is host i
        return _Network(settings, prov, base, bills, index, extra, public)

    def _start_heartbeat(self, net: _Network) -> None:
        """The plan's dead-man switch, pushed on while this controller lives (issue 25.3)."""
        if self._expected_s is None:
            return
        prov = net.prov
        sim = net.settings.backing == "sim"
        loop = asyncio.get_running_loop()
        tasks = any(r.spec.fargate is not None for r in self._planned)
        net.heartbeat = expiry.start(
            {r: prov.client(r) for r in prov.spec.regions},
            prov.spec.campaign,
            prov.now,
            self._expected_s,
            sim=sim,
            scale=_scale(net.settings),
            rearm=None if sim else expiry.rearm_over_ssh(lambda: list(self._ssh_hosts), loop),
            installation=prov.installation,  # not another installation's same-named campaign
            ecs={prov.spec.region: aws.client("ecs", prov.spec.region)} if tasks else None,
        )

    # -- bootstrap -------------------------------------------------------------------------
    async def bootstrap(self, machines: list[Machine]) -> list[Host]:
        """The instances as hosts (a lab namespace each with backing ``sim``, SSH once ready
        with ``ssh``), the tiers as standing servers; then the spot watchers."""
        session = self._sessions.pop(tuple(m.lease.id for m in machines), None)
        if session is None:
            raise HostError("aws: bootstrap of machines this acquire did not return")
        settings, prov, cs, log = session.settings, session.prov, session.cs, session.log
        launched, tiers = session.launched, session.tiers
        net = self._net
        assert net is not None
        extra, public = net.extra, net.public
        if settings.backing == "sim":
            if net.lab is None:
                self._sim_lab(net, tiers, log)
            hosts = self._sim_hosts(net, launched, tiers)
        else:
            ssh_hosts = [self._ssh_host(req, h, extra, public) for req, h, _ in launched]
            await _all_ready(ssh_hosts)
            self._ssh_hosts += ssh_hosts
            port = settings.fargate.port if settings.fargate else IPERF3_PORT
            private = {**extra, "path": "private"}  # a task is met at its ENI's private address
            tasks = [task_host(req, th, port, private) for req, th, _ in tiers]
            hosts = [*ssh_hosts, *tasks]
        if net.heartbeat is None:  # the first wave ready (another may have been first)
            self._start_heartbeat(net)
        for region in cs.regions:  # one watcher per region: DescribeInstances is regional
            ids = [h.instance_id for _, h, _ in launched if h.region == region]
            if not ids:  # this wave launched nothing there
                continue
            watcher = spot.Watcher(
                prov.client(region),
                ids,
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

    def _sim_lab(
        self, net: _Network, tiers: list[tuple[HostRequest, TierHost, Lease]], log: LeaseLog
    ) -> None:
        """Backing sim: one lab for the campaign, a namespace for every instance it will
        launch (waves included: a namespace costs nothing) and for the first wave's tiers."""
        from netfleet import lab

        settings, prov, extra = net.settings, net.prov, net.extra
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
        members = []
        for name, i in net.index.items():
            fleet, site = prov.spec.fleets[i], prov.sites[i]
            info = prov.catalogue[fleet.instance_type]
            labels = {**info.labels(), "role": fleet.role, "region": site.region,
                      "availability_zone": site.az}  # fmt: skip
            net.shorts[name] = f"h{i + 1}"
            members.append((net.shorts[name], info, {**labels, **extra, "host": name}))
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
                public_path=net.public,
            )
        except ValueError as exc:  # pydantic's ValidationError is one
            raise LabError(
                f"cannot shape the simulated instances: {exc}",
                hint="change cloud.rate_scale / cloud.time_scale, or use backing: ssh",
            ) from None
        net.lab = lab.up(spec, lab_dir)

    def _sim_hosts(
        self,
        net: _Network,
        launched: list[tuple[HostRequest, CloudHost, Lease]],
        tiers: list[tuple[HostRequest, TierHost, Lease]],
    ) -> list[Host]:
        """This wave's instances and tiers as their lab namespaces, labelled from the launch
        (instances first, as their machines)."""
        state, scale = net.lab, f"{net.settings.rate_scale:g}"
        hosts: list[Host] = []
        for req, h, _ in launched:
            lh = state.hosts[net.shorts[req.name]]
            labels = {
                **{k: v for k, v in lh.labels.items() if k != "host"},
                **h.labels,
                **net.extra,
                "sim_rate_scale": scale,
                **req.spec.labels,
            }
            host = SimInstanceHost(
                name=req.name,
                address=(lh.public_address or lh.address) if net.public else lh.address,
                labels=labels,
                namespace=lh.namespace,
                instance_id=h.instance_id,
                gone=self.gone,
            )
            self._sim_by_id.setdefault(host.instance_id, []).append(host)
            hosts.append(host)
        for req, th, _ in tiers:  # a Fargate task: nothing reclaims it
            lh = state.hosts[th.name]
            labels = {
                **{k: v for k, v in lh.labels.items() if k != "host"},
                "sim_rate_scale": scale,
                **req.spec.labels,
            }
            hosts.append(
                NetnsHost(name=req.name, address=lh.address, labels=labels, namespace=lh.namespace)
            )
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
            if self._net is not None and self._net.heartbeat is not None:
                await self._net.heartbeat.stop()
            self._net = None
        if kind == "task":
            try:
                return await asyncio.to_thread(self._release_task, lease)
            finally:
                self._live_tasks.discard(lease.id)
                if not self._live_tasks:
                    self._tasks_settled.set()
        if kind == "instance":  # no more re-arms for it
            gone = lease.resource.get("id")
            self._ssh_hosts = [h for h in self._ssh_hosts if h.instance_id != gone]
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
        if found.get("PublicIpAddress"):  # its address goes back to AWS's pool: not admitted
            self._unadmit(Path(res["state_root"]), campaign, str(found["PublicIpAddress"]))

        def terminated() -> bool:
            got = _instance(ec2, found["InstanceId"])
            return got is None or got["State"]["Name"] == "terminated"

        self._wait(terminated, f"instance {found['InstanceId']} is not terminating", 900, 10.0)
        Journal(Path(res["state_root"]), campaign).deleted("instance", region, found["InstanceId"])
        self._billed(found["InstanceId"])
        return "released"

    def _unadmit(self, root: Path, campaign: str, address: str) -> None:
        """A released host's public /32 out of the campaign's prefix lists (every region's):
        the address returns to AWS's pool, and the next waves' security groups must not admit
        whoever gets it."""
        from netfleet.cloud.aws.acquire.provision import change_prefix_list

        journal = Journal(root, campaign)
        if not journal.exists():
            return
        for rec in journal.read().live():
            if rec.kind == "prefix-list" and rec.id:
                with self._prefix_lock:  # releases run in parallel: one version at a time
                    change_prefix_list(
                        aws.client("ec2", rec.region), rec.id, remove=[f"{address}/32"]
                    )

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
    :class:`AwsCloud` — one campaign network for all of its hosts, made by the first acquire;
    the runner may acquire them in waves (several acquires, ``waves``), each wave's instances
    in one call (``batch_size`` 0), launched in parallel."""

    name = "aws"
    batch_size = 0
    waves = True
    cloud: AwsCloud

    def __init__(self, state_root: Path | None = None, poll_s: float = 0.2) -> None:
        super().__init__(AwsCloud(state_root, poll_s))

    def prepare(self, requests: list[HostRequest], expected_s: float | None) -> None:
        self.cloud.prepare(requests, expected_s)


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


class _LaunchStopped(Exception):
    """A launch of a cancelled acquire, stopped before RunInstances or right after its answer."""


async def _all_launched(jobs: Sequence[asyncio.Future[CloudHost]]) -> list[CloudHost]:
    """Launch together (one thread each); the first failure is raised after every launch has
    come back — each recorded its lease before it began, so the pool releases what exists.
    Cancelled, it leaves ``jobs`` running (their threads go on): the caller waits for them."""
    got = await asyncio.gather(*(asyncio.shield(j) for j in jobs), return_exceptions=True)
    hosts = []
    for outcome in got:
        if isinstance(outcome, BaseException):
            raise outcome
        hosts.append(outcome)
    return hosts


def _scale(settings: Any) -> float:
    """The sim's time scale (its switch and beats are scaled like its credits); 1 on AWS."""
    return float(settings.time_scale) if settings.backing == "sim" else 1.0


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
            *filters.owned(campaign, installation),
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
