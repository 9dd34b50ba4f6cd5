"""AWS's "not yet" answers, retried with bounded backoff: the one helper every cloud call uses.

AWS is eventually consistent and shared: a resource just created may answer ``*.NotFound`` to
the next call for seconds (an instance to DescribeInstances, a VPC to ModifyVpcAttribute, a
security group to AuthorizeSecurityGroupIngress, a gateway to AttachInternetGateway, a route table
to CreateRoute); a delete answers ``DependencyViolation`` for minutes while network interfaces
detach; ECS answers ``MISSING`` for a task it just started. botocore's own retries (adaptive
mode, :mod:`netfleet.aws`) cover throttling and transient HTTP errors, not these: :func:`call`
retries exactly the codes it is given until a time budget is spent, then raises the last error.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from typing import Any, TypeVar

from botocore.exceptions import ClientError

T = TypeVar("T")

#: a resource created a moment ago, not yet visible to the next call
NOT_YET = frozenset(
    {
        "InvalidInstanceID.NotFound",
        "InvalidVpcID.NotFound",
        "InvalidSubnetID.NotFound",
        "InvalidGroup.NotFound",
        "InvalidGroupId.NotFound",
        "InvalidInternetGatewayID.NotFound",
        "InvalidRouteTableID.NotFound",
        "InvalidPrefixListID.NotFound",
        "InvalidKeyPair.NotFound",
        "InvalidPlacementGroup.Unknown",
    }
)
#: throttling that outlived botocore's own retries
THROTTLED = frozenset({"RequestLimitExceeded", "Throttling", "ThrottlingException"})
#: a delete refused while what depends on it goes away (ENIs detaching, tasks draining)
IN_USE = frozenset(
    {
        "DependencyViolation",
        "InvalidGroup.InUse",
        "InvalidPlacementGroup.InUse",
        "ClusterContainsTasksException",
        "UpdateInProgressException",
        "IncorrectState",
        "PrefixListVersionMismatch",
    }
)
#: how long a just-created resource may stay invisible before it is an error
CREATE_BUDGET_S = 120.0
#: how long a delete may be refused while dependents detach (AWS: minutes for ENIs)
DELETE_BUDGET_S = 600.0


def code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def call(
    fn: Callable[[], T],
    *,
    retry_on: Collection[str] = NOT_YET | THROTTLED,
    budget_s: float = CREATE_BUDGET_S,
    first_delay: float = 0.2,
    max_delay: float = 15.0,
    sleep: Callable[[float], Any] | None = None,
    clock: Callable[[], float] | None = None,
) -> T:
    """``fn()``, again after ``first_delay`` (doubling, at most ``max_delay``) while it raises
    one of ``retry_on``, until ``budget_s`` has passed; then the last error is raised."""
    sleep = sleep or time.sleep
    clock = clock or time.monotonic
    deadline = clock() + budget_s
    delay = first_delay
    while True:
        try:
            return fn()
        except ClientError as exc:
            if code(exc) not in retry_on or clock() + delay > deadline:
                raise
        sleep(delay)
        delay = min(max(delay * 2, 0.01), max_delay)


def ignore_missing(fn: Callable[[], Any]) -> None:
    """``fn()`` (a delete), where "already gone" (NotFound, NotAttached) is success."""
    try:
        fn()
    except ClientError as exc:
        if not any(word in code(exc) for word in ("NotFound", "Malformed", "NotAttached")):
            raise


def not_yet(fn: Callable[[], T], budget_s: float = CREATE_BUDGET_S) -> T:
    """:func:`call` for a call right after a create (NotFound, throttling)."""
    return call(fn, retry_on=NOT_YET | THROTTLED, budget_s=budget_s)


def in_use(fn: Callable[[], T], budget_s: float = DELETE_BUDGET_S) -> T:
    """:func:`call` for a delete refused while dependents go away."""
    return call(fn, retry_on=IN_USE | THROTTLED, budget_s=budget_s)
