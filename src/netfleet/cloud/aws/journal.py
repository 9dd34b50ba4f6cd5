"""AWS's intent journal: :class:`netfleet.cloud.journal.Journal` whose replay keeps only the
records AWS's acquire writes — its kinds, AWS region names, and each kind's id format (EC2 ids,
ECS ARNs, the names netfleet gives key pairs, placement groups, roles and log groups). A forged
or foreign record (another kind, an id of another shape) is skipped and counted, never deleted.
"""

from __future__ import annotations

import re
from typing import ClassVar

from netfleet.cloud import journal
from netfleet.spec.cloud import REGION_RE

#: what EC2 (and IAM, CloudWatch Logs) creates for a campaign, in the order it is created
KINDS = (
    "vpc",
    "subnet",
    "internet-gateway",
    "route-table",
    "security-group",
    "prefix-list",
    "key-pair",
    "placement-group",
    "iam-role",
    "log-group",
    "instance",
)
#: ECS (Fargate tiers, cloud/aws/acquire/fargate.py): ids are ARNs
ECS_KINDS = ("ecs-cluster", "task-definition", "task")
ID_RE = re.compile(r"^(vpc|subnet|sg|i|sir|pg|key|igw|rtb|pl)-[0-9a-zA-Z]{1,40}$")
_ECS_ARN = r"^arn:aws[a-z-]*:ecs:[a-z0-9-]+:\d{12}:"
ECS_ARN_RE = {
    "ecs-cluster": re.compile(_ECS_ARN + r"cluster/netfleet-[a-z0-9-]{1,40}$"),
    "task-definition": re.compile(_ECS_ARN + r"task-definition/netfleet-[a-z0-9-]{1,60}:\d{1,9}$"),
    "task": re.compile(_ECS_ARN + r"task/[A-Za-z0-9/_-]{1,120}$"),
}
#: kinds named by netfleet, not by AWS
NAMED = re.compile(r"^netfleet-[a-z0-9-]{1,70}$")
LOG_GROUP = re.compile(r"^/netfleet/[a-z0-9-]{1,70}$")


class AwsRecords(journal.RecordRules):
    """AWS's kinds, region names and id formats."""

    def kind(self, kind: str) -> bool:
        return kind in KINDS or kind in ECS_KINDS

    def region(self, region: str) -> bool:
        return bool(REGION_RE.match(region))

    def resource_id(self, kind: str, rid: str) -> bool:
        if kind in ECS_ARN_RE:
            return bool(ECS_ARN_RE[kind].match(rid))
        if kind in ("key-pair", "placement-group", "iam-role"):
            return bool(NAMED.match(rid))
        if kind == "log-group":
            return bool(LOG_GROUP.match(rid))
        return bool(ID_RE.match(rid))


class Journal(journal.Journal):
    """A campaign's intent journal on AWS (``<state root>/<campaign>/journal.jsonl``)."""

    rules: ClassVar[journal.RecordRules] = AwsRecords()
