"""Before netfleet creates anything in an AWS account: where the calls would go, and whether
the user agreed.

* :func:`target` decides from the endpoint configuration alone (``AWS_ENDPOINT_URL`` and its
  per-service forms, :mod:`netfleet.aws`), before any client exists, whether the calls would
  reach a real service: anything that is not a loopback address counts as real.
* :func:`check_backing`: ``backing: sim`` measures local namespaces, so it must never launch real
  instances: it is refused (exit 2) unless every endpoint is loopback. Built in, not opt-in.
* :func:`confirm`: on a real endpoint, print the account (STS GetCallerIdentity), the regions,
  what will be created and the cost estimate, then require ``--yes`` or an interactive yes.
  :func:`require_confirmed` is called by the provisioner before its first create, so a library
  caller that skipped :func:`confirm` is refused too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from netfleet import aws
from netfleet.cloud.aws.campaign import CloudSpec
from netfleet.cloud.aws.plan.prices import Estimate
from netfleet.errors import InputError
from netfleet.spec.cloud import AwsHostSpec
from netfleet.spec.models import CampaignSpec

#: the services a campaign may call (EC2, ECS for Fargate tiers, STS for the account)
SERVICES = ("ec2", "ecs", "sts")
#: and those a plan asks: prices (Price List API) and quotas (Service Quotas)
PLAN_SERVICES = (*SERVICES, "pricing", "service-quotas")
_confirmed: set[str] = set()


@dataclass(frozen=True)
class Target:
    """Where the calls go: ``real`` unless every service's endpoint is a loopback address."""

    real: bool
    endpoints: dict[str, str | None] = field(default_factory=dict)

    def where(self) -> str:
        urls = sorted({u or "AWS's public endpoints" for u in self.endpoints.values()})
        return ", ".join(urls) or "AWS's public endpoints"


def target(services: Sequence[str] = SERVICES) -> Target:
    """The decision, from the configuration only: no request is sent."""
    endpoints = {s: aws.endpoint_url(s) for s in services}
    real = any(u is None or not aws.is_loopback_url(u) for u in endpoints.values())
    return Target(real, endpoints)


def check_backing(backing: str, campaign: str, services: Sequence[str] = SERVICES) -> None:
    """``backing: sim`` only against a loopback emulator (InputError, exit 2, otherwise), for
    each of ``services``."""
    if backing != "sim":
        return
    where = target(services)
    if where.real:
        raise InputError(
            f"campaign {campaign!r} has backing: sim (lab namespaces stand in for the "
            f"instances), but its AWS endpoint is {where.where()}, not loopback: it would "
            "launch real instances and measure local namespaces",
            hint="point AWS_ENDPOINT_URL at a local emulator (http://127.0.0.1:PORT), or use "
            "backing: ssh to measure real instances",
        )


def account(region: str) -> str:
    """``account ARN`` of the credentials (STS GetCallerIdentity)."""
    who = aws.client("sts", region).get_caller_identity()
    return f"{who.get('Account', '?')} ({who.get('Arn', '?')})"


def launch_lines(
    cs: CloudSpec,
    est: Estimate,
    who: str,
    fargate_tasks: int = 0,
    switch_minutes: float | None = None,
) -> list[str]:
    """What a launch will create, where, for whom and at what estimated cost, and when the
    instances power themselves off: ``switch_minutes`` after launch when the switch follows a
    plan (``netfleet run``), else the block's ``expires_after_minutes`` (``cloud up``)."""
    by_region: dict[str, list[str]] = {}
    for f in cs.fleets:
        by_region.setdefault(cs.region_of(f), []).append(f"{f.count} × {f.instance_type}")
    count = cs.instance_count
    lines = [
        f"account: {who}",
        f"regions: {', '.join(cs.regions)}",
        f"campaign {cs.campaign}: {count} instance{'s' if count != 1 else ''} "
        f"({cs.market}) — "
        + "; ".join(f"{r}: {', '.join(types)}" for r, types in by_region.items()),
    ]
    shared = "security group, key pair" if cs.subnet_id else "VPC, subnet(s), internet gateway, "
    shared += "" if cs.subnet_id else "route table, security group, managed prefix list, key pair"
    if cs.placement == "cluster":
        shared += ", placement group"
    lines.append(f"per region: {shared}")
    if fargate_tasks:
        lines.append(f"Fargate: one ECS cluster, {fargate_tasks} task definitions and tasks")
    cost = "unknown (no price for " + ", ".join(est.unknown) + ")" if est.usd is None else None
    switch = (
        f"every instance powers itself off after {cs.expires_after_minutes:g} min "
        "(expires_after_minutes)"
        if switch_minutes is None
        else f"every instance powers itself off {switch_minutes:.0f} min after launch (the "
        "plan's end plus a margin), pushed on by netfleet's heartbeat while it runs"
    )
    lines.append(f"estimated cost: {cost or f'${est.usd:.4f}'} for {est.hours_each:.2f} h each")
    lines.append(switch)
    return lines


def confirm(
    cs: CloudSpec,
    est: Estimate,
    *,
    yes: bool,
    ask: Callable[[str], bool] | None,
    say: Callable[[str], None],
    fargate_tasks: int = 0,
    switch_minutes: float | None = None,
) -> None:
    """On a real endpoint: show the account, regions, resources and cost (and the dead-man
    switch, ``switch_minutes`` when it follows a plan: :func:`launch_lines`), then require ``yes``
    or ``ask(question)`` answering True (``ask`` None: no terminal to ask on). On loopback:
    nothing to confirm."""
    where = target()
    if where.real:
        who = account(cs.region)
        for line in launch_lines(cs, est, who, fargate_tasks, switch_minutes):
            say(line)
        if not yes:
            if ask is None:
                raise InputError(
                    f"campaign {cs.campaign!r} would create billable resources on "
                    f"{where.where()} and there is no terminal to ask: not confirmed",
                    hint="read the lines above and pass --yes to launch",
                )
            if not ask(f"create these resources in account {who}?"):
                raise InputError(
                    f"campaign {cs.campaign!r}: launch not confirmed, nothing was created",
                    hint="answer yes, or pass --yes",
                )
    _confirmed.add(cs.campaign)


def require_confirmed(campaign: str) -> None:
    """Refuse the first create on a real endpoint that :func:`confirm` did not clear."""
    where = target()
    if where.real and campaign not in _confirmed:
        raise InputError(
            f"campaign {campaign!r}: creating resources on {where.where()} was not confirmed",
            hint="call netfleet.cloud.aws.plan.safety.confirm (the CLI does: it shows the account, "
            "regions and cost, then asks or takes --yes) before launching",
        )


def check_campaign(spec: CampaignSpec, services: Sequence[str] = SERVICES) -> None:
    """:func:`check_backing` for a campaign spec's ``cloud:`` block (its aws hosts carry it)."""
    for host in spec.hosts.values():
        if isinstance(host, AwsHostSpec) and host.cloud is not None:
            check_backing(host.cloud.backing, host.cloud.campaign, services)
            return
