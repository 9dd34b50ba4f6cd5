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

from botocore.exceptions import ClientError, WaiterError

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
#: how long a role just created may be unusable (IAM is eventually consistent: seconds, at
#: times a minute, before ECS may pass or assume it)
IAM_SETTLE_S = 60.0
#: how long a delete may be refused while dependents detach (AWS: minutes for ENIs)
DELETE_BUDGET_S = 600.0


def code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def iam_settling(exc: ClientError) -> bool:
    """A role created a moment ago, not yet usable: ``iam:PassRole`` denied (AccessDenied*),
    or ECS "unable to assume the role" — answers that turn into success once IAM settles."""
    message = str(exc.response.get("Error", {}).get("Message", ""))
    denied = code(exc).startswith("AccessDenied") and "iam:PassRole" in message
    return denied or "unable to assume the role" in message


def call(
    fn: Callable[[], T],
    *,
    retry_on: Collection[str] = NOT_YET | THROTTLED,
    budget_s: float = CREATE_BUDGET_S,
    first_delay: float = 0.2,
    max_delay: float = 15.0,
    sleep: Callable[[float], Any] | None = None,
    clock: Callable[[], float] | None = None,
    also: Callable[[ClientError], bool] | None = None,
) -> T:
    """``fn()``, again after ``first_delay`` (doubling, at most ``max_delay``) while it raises
    one of ``retry_on`` (or an error ``also`` says is passing), until ``budget_s`` has passed;
    then the last error is raised."""
    sleep = sleep or time.sleep
    clock = clock or time.monotonic
    deadline = clock() + budget_s
    delay = first_delay
    while True:
        try:
            return fn()
        except ClientError as exc:
            passing = code(exc) in retry_on or (also is not None and also(exc))
            if not passing or clock() + delay > deadline:
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


# -- boto3's waiters, within our budgets ------------------------------------------------------
#: ECS's answer for a task it does not know (yet): a ``failures[]`` reason, not an error
MISSING = "MISSING"


class WaitTimedOut(WaiterError):
    """:func:`wait` spent its budget; ``last_response`` is the last answer AWS gave."""


def answered(resp: dict[str, Any]) -> str:
    """What a waiter's last response said besides its data: the error code, ``MISSING`` when
    DescribeTasks knew none of the tasks it was asked about, else ""."""
    err = str(resp.get("Error", {}).get("Code", ""))
    if err:
        return err
    reasons = {str(f.get("reason")) for f in resp.get("failures", []) or []}
    return MISSING if MISSING in reasons and not resp.get("tasks") else ""


def wait(
    waiter: Any,
    *,
    budget_s: float,
    delay_s: float,
    max_delay_s: float = 15.0,
    polls_per_round: int = 3,
    retry_on: Collection[str] = NOT_YET | THROTTLED | {MISSING},
    gone_on: Collection[str] = (),
    clock: Callable[[], float] | None = None,
    **params: Any,
) -> None:
    """Wait with boto3's ``waiter`` (``client.get_waiter(name)``): AWS's own acceptors decide
    success, retry and terminal failure. It runs in rounds of ``polls_per_round`` polls
    ``delay_s`` apart (a waiter's delay is fixed), the delay doubling each round up to
    ``max_delay_s``, until ``budget_s`` has passed. A round that ended on one of ``retry_on`` —
    an answer the waiter does not retry: a ``*.NotFound`` right after a create (InstanceRunning
    retries only the instance's), throttling that outlived botocore's retries, ECS's ``MISSING``
    for a task just started (TasksRunning calls it a failure) — starts the next round; one of
    ``gone_on`` is success (InstanceTerminated: the instance no longer exists).

    Raises :class:`WaitTimedOut` when the budget is spent, botocore's ``WaiterError`` on a
    terminal failure; ``last_response`` of either tells the state."""
    clock = clock or time.monotonic
    deadline = clock() + budget_s
    delay = max(delay_s, 0.01)
    while True:
        left = deadline - clock()
        polls = max(1, min(polls_per_round, int(left / delay) + 1))
        try:
            waiter.wait(**params, WaiterConfig={"Delay": delay, "MaxAttempts": polls})
            return
        except WaiterError as exc:
            resp = exc.last_response if isinstance(exc.last_response, dict) else {}
            said = answered(resp)
            if said and said in gone_on:
                return
            if not (said in retry_on or "Max attempts exceeded" in str(exc)):
                raise
            if clock() + delay > deadline:
                raise WaitTimedOut(
                    name=exc.kwargs.get("name", "waiter"),
                    reason=f"still waiting after {budget_s:.0f} s",
                    last_response=resp,
                ) from exc
        time.sleep(delay)
        delay = min(delay * 2, max_delay_s)
