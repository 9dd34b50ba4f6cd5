"""Fargate tiers on ECS (seed 000): one iperf3 server task per CPU/memory tier.

Order, each create journalled first (intent → fault point ``before:<kind>`` → API call →
``after:<kind>`` → created), after the campaign's network exists (:class:`Provisioner`):
``ecs-cluster`` (``netfleet-<campaign>``), one ``task-definition`` per tier (family
``netfleet-<campaign>-<tier>``, awsvpc, the iperf3 server container), one ``task`` per tier
(``run_task`` with the campaign's subnet and security group and the journal's deterministic
``clientToken``). The server's address comes from the task's ENI attachment. Every resource
carries the campaign's tags. The container runs ``timeout <expires> iperf3 --server``: when the
campaign's deadline passes the container exits, the task stops and billing ends, whether or not
the controller is still alive (the dead man's switch of a task).

The legal CPU/memory pairs are checked here, before anything is created: AWS's table
(docs.aws.amazon.com/AmazonECS/latest/developerguide/task-cpu-memory-error.html).
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from botocore.exceptions import WaiterError

from netfleet import aws
from netfleet.cloud import faults
from netfleet.cloud.aws import retry
from netfleet.cloud.aws.acquire import fargate_exec
from netfleet.cloud.aws.campaign import CloudSpec
from netfleet.cloud.aws.plan import costs, prices
from netfleet.cloud.aws.release.fargate_teardown import cluster_name
from netfleet.errors import EnvironmentProblem, InputError
from netfleet.spec.cloud import (
    DEFAULT_IMAGE,
    IPERF3_PORT,
    LEGAL_MEMORY,
    FargateBlock,
    TierSpec,
    check_pair,
    legal_values,
    tier_name,
)

if TYPE_CHECKING:
    from netfleet.cloud.aws.acquire.provision import Provisioner

__all__ = [  # the pure models live in the spec layer (a campaign's `cloud.fargate:` block)
    "DEFAULT_IMAGE",
    "IPERF3_PORT",
    "LEGAL_MEMORY",
    "FargateBlock",
    "TierSpec",
    "check_pair",
    "cluster_name",
    "legal_values",
    "tier_name",
]

T = TypeVar("T")
#: how long RunTask is retried while Fargate has no capacity (AWS: "try again later")
CAPACITY_S = 120.0
#: RunTask's failure reasons that mean "no Fargate capacity here, now"
CAPACITY_WORDS = ("Capacity is unavailable",)


class FargateCampaign(CloudSpec):
    """A cloud campaign with Fargate tiers: :class:`CloudSpec` (the EC2 client fleet, network,
    deadlines) plus a ``fargate:`` block."""

    fargate: FargateBlock


def load_campaign(path: str | Path) -> FargateCampaign:
    """Load a ``*.cloud.yaml`` with a ``fargate:`` block; errors name the file, field and line."""
    from netfleet.spec.yamlsrc import load_model

    return load_model(FargateCampaign, path, what="cloud campaign")


def require_client_in(cs: CloudSpec) -> None:
    """Tiers run in the cloud block's region: an EC2 fleet must be there to measure them."""
    if cs.region not in cs.regions:
        raise InputError(
            f"campaign {cs.campaign!r}: Fargate tiers run in {cs.region} (the cloud block's "
            f"region), but no EC2 fleet is there ({', '.join(cs.regions)})",
            hint=f"leave one fleet (the client) in {cs.region}",
        )


def tier(cpu: int, memory: int, *, source: str = "<tiers>", where: str = "tiers") -> TierSpec:
    """A checked tier for callers outside a YAML file; the error names the source and field."""
    problem = check_pair(cpu, memory)
    if problem:
        raise InputError(
            f"{source}: {where}: {problem}",
            hint="AWS's table: 256 → 512/1024/2048; 512 → 1-4 GB; 1024 → 2-8 GB; 2048 → 4-16 GB "
            "and 4096 → 8-30 GB in 1 GB steps; 8192 → 16-60 GB in 4 GB steps; 16384 → 32-120 GB "
            "in 8 GB steps",
        )
    return TierSpec(cpu=cpu, memory=memory)


# -- prices ---------------------------------------------------------------------------------


def hourly(table: prices.PriceTable, region: str, t: TierSpec) -> float | None:
    """Fargate bills vCPU-hours and GB-hours: vcpu × $/vCPU-h + GB × $/GB-h."""
    rate = table.fargate.get(region)
    if not rate or "vcpu_hour" not in rate or "gb_hour" not in rate:
        return None
    return t.vcpu * rate["vcpu_hour"] + t.memory_gb * rate["gb_hour"]


def estimate(
    table: prices.PriceTable,
    region: str,
    tiers: list[TierSpec],
    duration_minutes: float,
    overhead_minutes: float = 3.0,
) -> prices.Estimate:
    """tasks × (duration + start/stop overhead) × tier price; ``instances`` counts tasks.

    Fargate bills per second with a one-minute minimum, like EC2 Linux."""
    hours = max(duration_minutes + overhead_minutes, prices.MIN_BILLED_S / 60) / 60
    total, unknown = 0.0, []
    for t in tiers:
        price = hourly(table, region, t)
        if price is None:
            unknown.append(f"fargate {t.name}")
        else:
            total += price * hours
    return prices.Estimate(
        len(tiers), None if unknown else round(total, 4), unknown, hours, subtotal=round(total, 4)
    )


# -- provisioning ---------------------------------------------------------------------------


@dataclass(frozen=True)
class TierHost:
    """One running tier: the contract the run integration consumes (see docs/cloud.md)."""

    name: str  #: lab host name, also the tier's name (f2048-4g)
    tier: TierSpec
    task_arn: str
    private_ip: str  #: the task's address on AWS (ENI attachment)
    labels: dict[str, str] = field(default_factory=dict)


def ecs_tags(prov: Provisioner, token: str) -> list[dict[str, str]]:
    """The campaign's tags (EC2's ``Key``/``Value``) in ECS's spelling (``key``/``value``)."""
    return [{"key": t["Key"], "value": t["Value"]} for t in prov.tags(token)]


def network(prov: Provisioner) -> tuple[str, str]:
    """The campaign's subnet and security group in the cloud block's region (where the tiers
    run), from the spec and the intent journal."""
    subnets, group = subnets_and_group(prov)
    return subnets[0], group


def subnets_and_group(prov: Provisioner) -> tuple[list[str], str]:
    """The campaign's subnets in the cloud block's region — the one tasks are started in first
    (the given ``subnet_id``, else the last the campaign made), then the others, where a task
    goes when Fargate has no capacity in the first one's zone — and its security group."""
    region = prov.spec.region
    live = [r for r in prov.journal.read().live() if r.id and r.region == region]
    made = {r.kind: r.id for r in live}
    subnet = prov.spec.subnet_id or made.get("subnet")
    group = made.get("security-group")
    if not subnet or not group:
        raise EnvironmentProblem(
            f"campaign {prov.spec.campaign!r} has no subnet/security group yet",
            hint="acquire the campaign's network (Provisioner.acquire) before the Fargate tiers",
        )
    others = [] if prov.spec.subnet_id else [r.id for r in live if r.kind == "subnet"]
    return [subnet, *dict.fromkeys(s for s in others if s and s != subnet)], group


def family(campaign: str, t: TierSpec) -> str:
    return f"netfleet-{campaign}-{t.name}"


def server_command(port: int) -> list[str]:
    """What the task's container runs (under ``timeout``): a standing iperf3 server whose JSON
    reports the client fetches with ``--get-server-output`` (one cannot exec into a task)."""
    return ["iperf3", "--server", "--json", "--port", str(port)]


def container_definition(
    t: TierSpec, block: FargateBlock, seconds: int, logs: tuple[str, str] | None = None
) -> dict[str, Any]:
    """The iperf3 server; ``timeout`` ends it (and so the task) at the campaign's deadline;
    ``logs`` (log group, region): its output goes to CloudWatch Logs (awslogs)."""
    program, *args = server_command(block.port)
    extra: dict[str, Any] = {}
    if logs is not None:
        group, region = logs
        extra["logConfiguration"] = {
            "logDriver": "awslogs",
            "options": {
                "awslogs-group": group,
                "awslogs-region": region,
                "awslogs-stream-prefix": t.name,
            },
        }
    return {
        **extra,
        "name": "iperf3",
        "image": block.image,
        "essential": True,
        "memory": t.memory,  # moto's run_task needs it per container; AWS accepts ≤ task memory
        "entryPoint": ["timeout", str(seconds), program],
        "command": args,
        "portMappings": [{"containerPort": block.port, "protocol": "tcp"}],
    }


@dataclass
class FargateTiers:
    """Launch ``block``'s tiers inside ``prov``'s campaign (same journal, tags, network)."""

    prov: Provisioner
    block: FargateBlock
    wait_s: float = 600.0
    #: how long a just-created execution role may be refused before it is an error
    iam_settle_s: float = retry.IAM_SETTLE_S
    #: how long RunTask is retried (round the campaign's subnets) while Fargate has no capacity
    capacity_s: float = CAPACITY_S
    #: tier name → extra tags for its task (``netfleet run``: the host lease's id)
    task_tags: dict[str, dict[str, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.ecs = aws.client("ecs", self.prov.spec.region)
        self.campaign = self.prov.spec.campaign
        # in the campaign's own VPC the task reaches the image registry through the internet
        # gateway, which needs a public address (no NAT); in a given subnet: its own routes
        net = self.prov.network
        self.public_ip = net is not None and net.igw_id is not None
        # the dead man's switch ends the server at the campaign's expires-at (at least 60 s)
        left = self.prov.expires_at - dt.datetime.now(dt.UTC)
        self.seconds = max(60, int(left.total_seconds()))
        self.role_arn: str | None = None
        self.logs: tuple[str, str] | None = None

    def _step(self, kind: str, key: str, create: Any) -> str:
        """The provisioner's step: intent, fault points, create, created record."""
        return self.prov._step(kind, key, create)

    def acquire(self) -> list[TierHost]:
        subnets, group = subnets_and_group(self.prov)
        region = self.prov.spec.region
        self.role_arn, log_group = fargate_exec.create(
            aws.client("iam", region),
            aws.client("logs", region),
            self.prov.name,
            self.prov.tags,
            self._step,
        )
        self.logs = (log_group, region)
        cluster = self._step(
            "ecs-cluster",
            "main",
            lambda t: self.ecs.create_cluster(
                clusterName=cluster_name(self.campaign), tags=ecs_tags(self.prov, t)
            )["cluster"]["clusterArn"],
        )
        launched: list[tuple[TierSpec, str]] = []
        for t in self.block.tiers:
            definition = self._step(
                "task-definition",
                t.name,
                lambda tok, t=t: self._settled(f"tier {t.name}", partial(self._register, t, tok)),
            )
            arn = self._step(
                "task",
                t.name,
                lambda tok, d=definition, t=t: self._run(
                    cluster, d, subnets, group, tok, self.task_tags.get(t.name, {})
                ),
            )
            launched.append((t, arn))
        hosts = [self._wait_running(cluster, t, arn) for t, arn in launched]
        faults.point("after:acquire-tiers")
        return hosts

    def _register(self, t: TierSpec, token: str) -> str:
        resp = self.ecs.register_task_definition(
            family=family(self.campaign, t),
            networkMode="awsvpc",
            requiresCompatibilities=["FARGATE"],
            cpu=str(t.cpu),
            memory=str(t.memory),
            executionRoleArn=self.role_arn,
            containerDefinitions=[container_definition(t, self.block, self.seconds, self.logs)],
            tags=ecs_tags(self.prov, token),
        )
        return str(resp["taskDefinition"]["taskDefinitionArn"])

    def _settled(self, what: str, fn: Callable[[], T]) -> T:
        """``fn()`` (RegisterTaskDefinition, RunTask with the execution role just created),
        again while IAM has not settled (``iam:PassRole`` denied, "unable to assume the
        role") for up to ``iam_settle_s``; a refusal that outlasts it is an error naming the
        permission."""
        from botocore.exceptions import ClientError

        try:
            return retry.call(
                fn,
                retry_on=retry.THROTTLED,
                also=retry.iam_settling,
                budget_s=self.iam_settle_s,
                first_delay=min(1.0, self.iam_settle_s / 8),
                max_delay=10.0,
            )
        except ClientError as exc:
            if not retry.iam_settling(exc):
                raise
            raise EnvironmentProblem(
                f"{what}: the task execution role {self.role_arn} was still refused after "
                f"{self.iam_settle_s:.0f} s: {exc}",
                hint="allow iam:PassRole on arn:aws:iam::*:role/netfleet/* with "
                "iam:PassedToService ecs-tasks.amazonaws.com (docs/iam-policy.json), then run "
                "again; `netfleet cloud destroy CAMPAIGN` releases what was made",
            ) from None

    def _run(
        self,
        cluster: str,
        definition: str,
        subnets: list[str],
        group: str,
        token: str,
        extra: dict[str, str] | None = None,
    ) -> str:
        """RunTask in ``subnets[0]``; while Fargate answers that it has no capacity, again
        (backing off, for up to ``capacity_s``) in the next subnet, round the campaign's
        subnets — each attempt a new request (client token)."""
        tags = ecs_tags(self.prov, token)
        tags += [{"key": k, "value": v} for k, v in (extra or {}).items()]
        deadline = time.monotonic() + self.capacity_s
        delay, attempt, tried = min(2.0, self.capacity_s / 8), 0, []
        while True:
            subnet = subnets[attempt % len(subnets)]
            tried.append(subnet)
            resp = self._settled(
                f"task of {definition}",
                partial(
                    self.ecs.run_task,
                    cluster=cluster,
                    taskDefinition=definition,
                    launchType="FARGATE",
                    count=1,
                    clientToken=token if attempt == 0 else f"{token}-{attempt}",
                    networkConfiguration={
                        "awsvpcConfiguration": {
                            "subnets": [subnet],
                            "securityGroups": [group],
                            "assignPublicIp": "ENABLED" if self.public_ip else "DISABLED",
                        }
                    },
                    tags=tags,
                    startedBy="netfleet",
                ),
            )
            if resp.get("tasks"):
                return str(resp["tasks"][0]["taskArn"])
            reasons = "; ".join(str(f.get("reason")) for f in resp.get("failures", []))
            capacity = any(w in reasons for w in CAPACITY_WORDS)
            if not capacity or time.monotonic() + delay > deadline:
                where = f" (tried {len(tried)} times in {', '.join(dict.fromkeys(tried))})"
                raise EnvironmentProblem(
                    f"run_task placed no task for {definition}: {reasons}"
                    + (where if capacity else ""),
                    hint="Fargate has no capacity there now: try again later, or another "
                    "region or tier"
                    if capacity
                    else None,
                )
            attempt += 1
            time.sleep(delay)
            delay = min(delay * 2, 20.0)

    def _wait_running(self, cluster: str, t: TierSpec, arn: str) -> TierHost:
        try:  # boto3's TasksRunning; a task just started may be MISSING for a moment: retried
            retry.wait(
                self.ecs.get_waiter("tasks_running"),
                cluster=cluster,
                tasks=[arn],
                budget_s=self.wait_s,
                delay_s=self.prov.poll_s,
                max_delay_s=5.0,
            )
        except retry.WaitTimedOut as exc:
            status = _status(exc.last_response)
            raise EnvironmentProblem(
                f"Fargate task {t.name} still {status} after {self.wait_s:.0f} s of waiting"
            ) from None
        except WaiterError as exc:
            found = (exc.last_response or {}).get("tasks") or [{}]
            raise EnvironmentProblem(
                f"Fargate task {t.name} is {_status(exc.last_response)}, not RUNNING: "
                f"{found[0].get('stoppedReason') or 'no reason given'}"
            ) from None
        resp = retry.call(lambda: self.ecs.describe_tasks(cluster=cluster, tasks=[arn]))
        task = (resp.get("tasks") or [{}])[0]
        return TierHost(
            name=t.name,
            tier=t,
            task_arn=arn,
            private_ip=eni_address(task),
            labels={
                "instance_type": f"fargate-{t.cpu}-{t.memory}",
                "cloud": "aws",
                "service": "fargate",
                "cpu_units": str(t.cpu),
                "vcpu": f"{t.vcpu:g}",
                "memory_mib": str(t.memory),
                "region": self.prov.spec.region,
                "task_arn": arn,
                "burstable": "false",
            },
        )


def _status(resp: dict[str, Any] | None) -> str:
    """The task's ``lastStatus`` in a waiter's last DescribeTasks answer, or how DescribeTasks
    answered for a task it does not know (yet): its failure reason (MISSING)."""
    resp = resp or {}
    found = resp.get("tasks") or []
    if found:
        return str(found[0].get("lastStatus", "unknown"))
    reasons = sorted({str(f.get("reason", "?")) for f in resp.get("failures", [])})
    return "/".join(reasons) or retry.answered(resp) or "MISSING"


def eni_address(task: dict[str, Any]) -> str:
    """The private IPv4 address from the task's ElasticNetworkInterface attachment."""
    for att in task.get("attachments", []):
        if att.get("type") == "ElasticNetworkInterface":
            for d in att.get("details", []):
                if d.get("name") == "privateIPv4Address":
                    return str(d["value"])
    raise EnvironmentProblem(f"task {task.get('taskArn')} has no ENI address (awsvpc)")


def acquire_tiers(prov: Provisioner, block: FargateBlock) -> list[TierHost]:
    """Launch one iperf3 server task per tier in ``prov``'s campaign (after ``prov.acquire()``).

    Torn down by ``prov.release()`` / ``netfleet cloud destroy`` (tasks first)."""
    return FargateTiers(prov, block).acquire()


# -- what a session held (the cost line of `netfleet run`) ----------------------------------


def billed(
    table: prices.PriceTable, region: str, held: list[tuple[TierSpec, float]]
) -> tuple[float | None, float, float]:
    """(USD or None without a Fargate price for ``region``, vCPU-hours, GB-hours) for tasks
    held (tier, seconds): per-second billing with the one-minute minimum."""
    vcpu_h = sum(t.vcpu * max(s, prices.MIN_BILLED_S) / 3600 for t, s in held)
    gb_h = sum(t.memory_gb * max(s, prices.MIN_BILLED_S) / 3600 for t, s in held)
    rate = table.fargate.get(region) or {}
    if "vcpu_hour" not in rate or "gb_hour" not in rate:
        return None, vcpu_h, gb_h
    return vcpu_h * rate["vcpu_hour"] + gb_h * rate["gb_hour"], vcpu_h, gb_h


def rates(table: prices.PriceTable, region: str) -> str:
    """``$0.04048/vCPU-h, $0.004445/GB-h (eu-west-1)`` or why there is none."""
    rate = table.fargate.get(region) or {}
    if "vcpu_hour" not in rate or "gb_hour" not in rate:
        return f"no Fargate price for {region}"
    return f"${rate['vcpu_hour']:g}/vCPU-h, ${rate['gb_hour']:g}/GB-h ({region})"


def cost_line(
    table: prices.PriceTable,
    region: str,
    held: list[tuple[TierSpec, float]],
    estimate_usd: float | None,
) -> str:
    """One line: what the session's Fargate tasks were held for and what that costs."""
    usd = costs.usd
    total, vcpu_h, gb_h = billed(table, region, held)
    what = "unknown (" + rates(table, region) + ")" if total is None else usd(total) + " USD"
    est = "" if estimate_usd is None else f"; estimated before launch: {usd(estimate_usd)}"
    return (
        f"fargate: {len(held)} tasks held {sum(s for _, s in held) / 60:.1f} min in all, "
        f"{vcpu_h:.4f} vCPU-h + {gb_h:.4f} GB-h billed (per second, "
        f"{prices.MIN_BILLED_S:g} s minimum) at {rates(table, region)} = {what}{est}; "
        f"prices: {table.source}, as of {table.as_of}"
    )
