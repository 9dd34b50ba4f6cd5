"""Tearing down a campaign's Fargate tiers: tasks stopped (right after the instances were
asked to terminate), then — once the instances are gone — task definitions deregistered, the
execution role and log group deleted and the cluster deleted. A campaign whose journal recorded
none of these may be torn down under a policy without ECS, IAM or logs permissions
(:func:`unless_denied`).

Everything is found by name *and* tag: the cluster is ``netfleet-<campaign>``, the task
definition families ``netfleet-<campaign>-<tier>``; a resource is touched only if it carries the
campaign's tag (a family prefix of campaign ``a`` also matches campaign ``a-b``: the tag decides).
moto keeps a deleted cluster (``INACTIVE``) and a deregistered task definition (``INACTIVE``)
visible, as AWS does for a while: only non-``INACTIVE`` ones count as remaining.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any, TypeVar

from botocore.exceptions import ClientError, WaiterError

from netfleet import aws
from netfleet.cloud import faults, owner
from netfleet.cloud.aws import retry
from netfleet.cloud.aws.acquire import fargate_exec
from netfleet.cloud.journal import CAMPAIGN_RE
from netfleet.cloud.owner import TAG_CAMPAIGN, TAG_EXPIRES, TAG_INSTALLATION

Note = Callable[[str, str], None]
T = TypeVar("T")
STOP_REASON = "netfleet teardown"


def cluster_name(campaign: str) -> str:
    """The campaign's ECS cluster (``netfleet-<campaign>``)."""
    return f"netfleet-{campaign}"


def _tags(items: list[dict[str, str]] | None) -> dict[str, str]:
    return {t["key"]: t["value"] for t in items or []}


def _ours(tags: list[dict[str, str]] | None, campaign: str, installation: str | None) -> bool:
    """The campaign's tag and (unless None: any owner) the installation's."""
    return owner.ours(_tags(tags), campaign, installation)


def _chunks(items: list[str], n: int = 100) -> Iterator[list[str]]:
    for i in range(0, len(items), n):
        yield items[i : i + n]


def our_cluster(ecs: Any, campaign: str, installation: str | None) -> dict[str, Any] | None:
    """The campaign's cluster if it exists, is not deleted and carries the tags."""
    resp = ecs.describe_clusters(clusters=[cluster_name(campaign)], include=["TAGS"])
    for c in resp.get("clusters", []):
        if c.get("status") != "INACTIVE" and _ours(c.get("tags"), campaign, installation):
            return dict(c)
    return None


def tasks(ecs: Any, campaign: str, installation: str | None) -> list[dict[str, Any]]:
    """The campaign's tasks (tagged) in its cluster that are not yet STOPPED."""
    cluster = our_cluster(ecs, campaign, installation)
    if cluster is None:
        return []
    arns: set[str] = set()
    for desired in ("RUNNING", "STOPPED"):  # AWS lists RUNNING only unless asked
        pages = ecs.get_paginator("list_tasks").paginate(
            cluster=cluster["clusterArn"], desiredStatus=desired
        )
        for page in pages:
            arns.update(page.get("taskArns", []))
    out: list[dict[str, Any]] = []
    for chunk in _chunks(sorted(arns)):
        found = ecs.describe_tasks(cluster=cluster["clusterArn"], tasks=chunk, include=["TAGS"])
        for t in found.get("tasks", []):
            if t.get("lastStatus") != "STOPPED" and _ours(t.get("tags"), campaign, installation):
                out.append(dict(t))
    return out


def wait_stopped(ecs: Any, campaign: str, arns: list[str], *, poll_s: float, wait_s: float) -> None:
    """boto3's TasksStopped waiter over the tasks just asked to stop (a task AWS no longer
    knows, MISSING, is gone). Errors are left to the caller's check of what is still running
    (:func:`tasks`), which also sees tasks this process did not stop."""
    for chunk in _chunks(arns):
        with contextlib.suppress(WaiterError):
            retry.wait(
                ecs.get_waiter("tasks_stopped"),
                cluster=cluster_name(campaign),
                tasks=chunk,
                budget_s=wait_s,
                delay_s=poll_s,
                max_delay_s=10.0,
                retry_on=retry.THROTTLED,
                gone_on={retry.MISSING},
            )


def stop_tasks(ecs: Any, campaign: str, installation: str | None) -> list[str]:
    """Ask every live task of the campaign to stop; returns their ARNs."""
    live = tasks(ecs, campaign, installation)
    for t in live:
        if t.get("desiredStatus") != "STOPPED":
            ecs.stop_task(cluster=t["clusterArn"], task=t["taskArn"], reason=STOP_REASON)
    return [str(t["taskArn"]) for t in live]


def definitions(ecs: Any, campaign: str, installation: str | None) -> list[str]:
    """ACTIVE task definitions (every revision) of the campaign's families, tag-checked."""
    out: list[str] = []
    fams = ecs.get_paginator("list_task_definition_families").paginate(
        familyPrefix=f"{cluster_name(campaign)}-", status="ACTIVE"
    )
    for page in fams:
        for fam in page.get("families", []):
            revs = ecs.get_paginator("list_task_definitions").paginate(
                familyPrefix=fam, status="ACTIVE"
            )
            for rpage in revs:
                for arn in rpage.get("taskDefinitionArns", []):
                    desc = ecs.describe_task_definition(taskDefinition=arn, include=["TAGS"])
                    if _ours(desc.get("tags"), campaign, installation):
                        out.append(str(arn))
    return out


def deregister_definitions(ecs: Any, campaign: str, installation: str | None, note: Note) -> None:
    """Deregister the campaign's task definitions."""
    for arn in definitions(ecs, campaign, installation):
        retry.ignore_missing(partial(ecs.deregister_task_definition, taskDefinition=arn))
        note("task-definition", arn)


def delete_exec_role_and_logs(
    ecs: Any, campaign: str, installation: str | None, note: Note
) -> None:
    """The tasks' execution role and log group (:mod:`netfleet.cloud.aws.acquire.fargate_exec`)."""
    region = ecs.meta.region_name
    fargate_exec.delete(
        aws.client("iam", region), aws.client("logs", region), campaign, installation, note
    )
    faults.point("teardown:after-task-definitions")


def delete_cluster(ecs: Any, campaign: str, installation: str | None, note: Note) -> None:
    """Delete the campaign's cluster (retrying while AWS still counts tasks in it)."""
    cluster = our_cluster(ecs, campaign, installation)
    if cluster is not None:
        arn = str(cluster["clusterArn"])
        retry.ignore_missing(partial(retry.in_use, partial(ecs.delete_cluster, cluster=arn)))
        note("ecs-cluster", arn)
    faults.point("teardown:after-cluster")


def remaining(ecs: Any, campaign: str, installation: str | None = None) -> dict[str, int | None]:
    """Per ECS resource type (and the tasks' execution role and log group), how many of the
    campaign's are still live; None where the caller may not look (AccessDenied: a policy
    for EC2-only campaigns holds no ECS, IAM or logs permission)."""
    region = ecs.meta.region_name
    iam, logs = aws.client("iam", region), aws.client("logs", region)
    out: dict[str, int | None] = {"iam-roles": None, "log-groups": None}
    with contextlib.suppress(Denied):
        out.update(_denied_is(lambda: fargate_exec.remaining(iam, logs, campaign, installation)))
    for kind, count in (
        ("tasks", lambda: len(tasks(ecs, campaign, installation))),
        ("task-definitions", lambda: len(definitions(ecs, campaign, installation))),
        ("clusters", lambda: 0 if our_cluster(ecs, campaign, installation) is None else 1),
    ):
        try:
            out[kind] = _denied_is(count)
        except Denied:
            out[kind] = None
    return out


#: what AWS answers a call the caller's policy does not allow
DENIED = frozenset(
    {"AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "UnauthorizedException"}
)


class Denied(Exception):
    """A call the caller's policy does not allow (one of :data:`DENIED`)."""


def _denied_is(fn: Callable[[], T]) -> T:
    """``fn()``, its AccessDenied raised as :class:`Denied`."""
    try:
        return fn()
    except ClientError as exc:
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if retry.code(exc) in DENIED or status == 403:  # 403: Forbidden, whatever the body
            raise Denied(str(exc)) from exc
        raise


def unless_denied(fn: Callable[[], T], default: T, *, recorded: bool) -> T:
    """``fn()``; when the policy denies it and the campaign's journal ``recorded`` nothing of
    this kind (an EC2-only campaign under a policy without ECS, IAM or logs), ``default``."""
    try:
        return _denied_is(fn)
    except Denied:
        if recorded:
            raise
        return default


def expired(ecs: Any, stamp: str, installation: str | None = None) -> dict[str, str]:
    """campaign → expires-at of live netfleet clusters whose ``expires-at`` is before ``stamp``
    (a campaign that only has Fargate tiers left is still found by reap)."""
    arns: list[str] = []
    for page in ecs.get_paginator("list_clusters").paginate():
        arns += [
            a for a in page.get("clusterArns", []) if a.rsplit("/", 1)[-1].startswith("netfleet-")
        ]
    out: dict[str, str] = {}
    for chunk in _chunks(arns):
        for c in ecs.describe_clusters(clusters=chunk, include=["TAGS"]).get("clusters", []):
            tags = _tags(c.get("tags"))
            campaign, exp = tags.get(TAG_CAMPAIGN, ""), tags.get(TAG_EXPIRES)
            if c.get("status") == "INACTIVE" or exp is None or exp >= stamp:
                continue
            if installation is not None and tags.get(TAG_INSTALLATION) != installation:
                continue
            if CAMPAIGN_RE.match(campaign) and c.get("clusterName") == cluster_name(campaign):
                out[campaign] = exp
    return out
