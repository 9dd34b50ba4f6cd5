"""What a Fargate task needs to start and be diagnosed on AWS: an execution role and a log group.

Without an execution role a task cannot pull from a private registry nor write logs; without
logs a task that stops leaves only its ``stoppedReason``. Per campaign (created before the task
definitions, journalled, tagged like everything else — campaign, installation, session):

* ``iam-role`` ``netfleet-<campaign>-<id8>-ecs`` under the path ``/netfleet/``, trusted by
  ``ecs-tasks.amazonaws.com``, with one inline policy: what AWS's managed
  ``AmazonECSTaskExecutionRolePolicy`` grants (ECR pulls, log streams and events), the logs part
  narrowed to this campaign's log group;
* ``log-group`` ``/netfleet/<campaign>-<id8>`` (retention 7 days), which each container's
  ``awslogs`` driver writes to.

Both are deleted by teardown only when found under netfleet's path/prefix *and* carrying the
campaign's and the installation's tags. IAM is global: the role is found from any region.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from typing import Any

from netfleet.cloud import owner
from netfleet.cloud.aws import retry

POLICY_NAME = "netfleet-task-execution"
ROLE_PATH = "/netfleet/"
LOG_PREFIX = "/netfleet/"
RETENTION_DAYS = 7
TRUST = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"Service": "ecs-tasks.amazonaws.com"},
            "Action": "sts:AssumeRole",
        }
    ],
}
Step = Callable[[str, str, Callable[[str], str]], str]


def exec_policy(log_group: str) -> dict[str, Any]:
    """The execution role's inline policy: image pulls (ECR, which a public Docker Hub image
    does not need but a private one does) and writing to ``log_group`` only."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Action": [
                    "ecr:GetAuthorizationToken",
                    "ecr:BatchCheckLayerAvailability",
                    "ecr:GetDownloadUrlForLayer",
                    "ecr:BatchGetImage",
                ],
                "Resource": "*",
            },
            {
                "Effect": "Allow",
                "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
                "Resource": f"arn:aws:logs:*:*:log-group:{log_group}:*",
            },
        ],
    }


def role_name(name: str) -> str:
    """``name``: the provisioner's ``netfleet-<campaign>-<id8>``."""
    return f"{name}-ecs"


def log_group_name(name: str) -> str:
    return LOG_PREFIX + name.removeprefix("netfleet-")


def create(
    iam: Any, logs: Any, name: str, tags: Callable[[str], list[dict[str, str]]], step: Step
) -> tuple[str, str]:
    """The role (its ARN) and the log group (its name), each a journalled step (by name)."""
    role = role_name(name)

    def make_role(token: str) -> str:
        iam.create_role(
            RoleName=role,
            Path=ROLE_PATH,
            AssumeRolePolicyDocument=json.dumps(TRUST),
            Description="netfleet: Fargate task execution (image pull, awslogs)",
            Tags=tags(token),
        )
        return role

    group = log_group_name(name)
    step("iam-role", "ecs-exec", make_role)
    document = json.dumps(exec_policy(group))
    retry.not_yet(
        partial(iam.put_role_policy, RoleName=role, PolicyName=POLICY_NAME, PolicyDocument=document)
    )
    arn = retry.not_yet(partial(iam.get_role, RoleName=role))["Role"]["Arn"]

    def make_group(token: str) -> str:
        logs.create_log_group(logGroupName=group, tags={t["Key"]: t["Value"] for t in tags(token)})
        return group

    step("log-group", "main", make_group)
    retry.not_yet(
        partial(logs.put_retention_policy, logGroupName=group, retentionInDays=RETENTION_DAYS)
    )
    return str(arn), group


def roles(iam: Any, campaign: str, installation: str | None) -> list[str]:
    """Names of netfleet's execution roles carrying the tags."""
    out = []
    for page in iam.get_paginator("list_roles").paginate(PathPrefix=ROLE_PATH):
        for role in page.get("Roles", []):
            tags = iam.list_role_tags(RoleName=role["RoleName"]).get("Tags", [])
            if owner.ours({t["Key"]: t["Value"] for t in tags}, campaign, installation):
                out.append(str(role["RoleName"]))
    return out


def log_groups(logs: Any, campaign: str, installation: str | None) -> list[str]:
    """Names of netfleet's log groups carrying the tags."""
    out = []
    pages = logs.get_paginator("describe_log_groups").paginate(logGroupNamePrefix=LOG_PREFIX)
    for page in pages:
        for group in page.get("logGroups", []):
            name = str(group["logGroupName"])
            tags = logs.list_tags_log_group(logGroupName=name).get("tags", {})
            if owner.ours(dict(tags), campaign, installation):
                out.append(name)
    return out


def delete(
    iam: Any, logs: Any, campaign: str, installation: str | None, note: Callable[[str, str], None]
) -> None:
    """Delete the tagged roles (their policies first) and log groups."""
    for name in roles(iam, campaign, installation):
        for policy_name in iam.list_role_policies(RoleName=name).get("PolicyNames", []):
            retry.ignore_missing(
                partial(iam.delete_role_policy, RoleName=name, PolicyName=policy_name)
            )
        attached = iam.list_attached_role_policies(RoleName=name).get("AttachedPolicies", [])
        for policy in attached:
            retry.ignore_missing(
                partial(iam.detach_role_policy, RoleName=name, PolicyArn=policy["PolicyArn"])
            )
        retry.ignore_missing(partial(retry.in_use, partial(iam.delete_role, RoleName=name)))
        note("iam-role", name)
    for group in log_groups(logs, campaign, installation):
        retry.ignore_missing(partial(logs.delete_log_group, logGroupName=group))
        note("log-group", group)


def remaining(iam: Any, logs: Any, campaign: str, installation: str | None) -> dict[str, int]:
    return {
        "iam-roles": len(roles(iam, campaign, installation)),
        "log-groups": len(log_groups(logs, campaign, installation)),
    }
