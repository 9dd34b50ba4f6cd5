"""``schema`` and ``plan``: look at a campaign before running it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from netfleet.plan.summary import Plan
    from netfleet.spec.models import CampaignSpec


def schema(*, lab: bool = False) -> dict[str, Any]:
    """The JSON Schema of a campaign spec (or, with ``lab``, of a lab file)."""
    if lab:
        from netfleet.lab import lab_schema

        return lab_schema()
    from netfleet.spec import spec_schema

    return spec_schema()


def plan(
    spec: str | os.PathLike[str],
    *,
    cost: bool = True,
    max_runs: int | None = None,
    results: str | None = None,
) -> Plan:
    """Expand a campaign spec into its runs and estimate the wall time. Runs nothing.
    ``Plan.refill`` says which burstable hosts a burst test would use within their refill time
    after their last traffic (the campaign journals under ``results``, else the spec's or the
    default results root: :func:`netfleet.runner.bucket.refill_warnings`). With
    ``cost``, a campaign with cloud hosts also gets what launching them would cost
    (``Plan.cost``; spot prices are asked of AWS) — refused
    (:class:`~netfleet.errors.InputError`) for ``backing: sim`` unless every endpoint is
    loopback, as ``run`` is: no connection leaves the machine. ``max_runs``: the most runs the
    campaign may plan (default NETFLEET_MAX_RUNS, else 1,000,000; counted before expanding)."""
    from netfleet.api._paths import results_url
    from netfleet.spec import load_spec
    from netfleet.store import open_root

    campaign = load_spec(Path(spec), max_runs=max_runs)
    journals = open_root(results_url(results, campaign.results)).journal_root
    return with_refill(plan_of(campaign, cost=cost), journals)


def with_refill(planned: Plan, journals: Path) -> Plan:
    """``planned`` with its :attr:`Plan.refill` lines, from the campaign journals under the
    results root ``journals`` (what ``plan`` and ``run --dry-run`` say)."""
    from dataclasses import replace

    from netfleet.runner.bucket import refill_warnings
    from netfleet.runner.journal import recent_traffic

    traffic = recent_traffic(journals)
    refill = refill_warnings(planned.runs, planned.host_labels, traffic) if traffic else []
    return replace(planned, refill=refill)


def plan_of(spec: CampaignSpec, *, cost: bool = False) -> Plan:
    """:func:`plan` of a loaded spec."""
    from dataclasses import replace

    from netfleet.plan import estimate_seconds, expand
    from netfleet.plan.summary import Plan
    from netfleet.runner.scheduler import Limits, estimate_wall_seconds

    runs = expand(spec)
    limits = Limits.of(spec)
    est = (
        estimate_wall_seconds(runs, limits)
        if limits.concurrency > 1
        else estimate_seconds(spec, runs)
    )
    from netfleet.hosts.netns import planned_labels

    labels = {name: planned_labels(h, None) for name, h in spec.hosts.items()}
    the_plan = Plan(spec, list(runs), limits.concurrency, est, host_labels=labels)
    if cost and is_cloud(spec):  # what launching would cost
        from netfleet.cloud.aws.plan import safety
        from netfleet.cloud.aws.runs import plan_cost

        # the rule `run` follows, before any client exists: backing sim asks only a loopback
        # emulator (else the plan's look-ups would reach AWS: credentials, EC2, pricing)
        safety.check_campaign(spec, safety.PLAN_SERVICES)

        priced = plan_cost(spec, est, runs=the_plan.runs)  # the waves and stop bounds
        if priced is not None:
            the_plan = replace(the_plan, cost=priced.table)
    return the_plan


def is_cloud(spec: CampaignSpec) -> bool:
    """Whether the campaign launches cloud machines (hosts of kind ``aws``)."""
    return any(h.kind == "aws" for h in spec.hosts.values())
