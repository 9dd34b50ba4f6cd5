"""The permission probe as a real account answers it (issue 35: would-fail 2, mislead 2): a
missing service-linked role the caller may not create, and dry runs AWS cannot judge on
made-up ids, asked of the IAM policy simulator. moto has no simulator and no service-linked
roles: AWS's answers are injected in front of moto's server (tests/awshooks.py)."""

from __future__ import annotations

from typing import Any

import pytest

from netfleet import aws
from netfleet.cloud.aws.campaign import CloudSpec
from netfleet.cloud.aws.plan import permissions
from netfleet.errors import EnvironmentProblem
from tests import awshooks, motokit
from tests.awshooks import answer, error

moto = motokit.moto
SPOT = {
    "campaign": "nf-perm",
    "region": "us-east-1",
    "market": "spot",
    "fleets": [{"instance_type": "t3.micro", "count": 1, "role": "server"}],
}


def simulator(decisions: dict[str, str]) -> Any:
    """An IAM policy simulator answering ``decisions`` (action → decision), allowed else."""

    def handle(params: dict[str, Any]) -> Any:
        return answer(
            {
                "EvaluationResults": [
                    {"EvalActionName": a, "EvalDecision": decisions.get(a, "allowed")}
                    for a in params["ActionNames"]
                ],
                "IsTruncated": False,
            }
        )

    return handle


def test_a_missing_spot_role_the_caller_may_not_create_is_refused_with_the_fix(
    moto: motokit.MotoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    deny = simulator({"iam:CreateServiceLinkedRole": "implicitDeny"})
    with (
        awshooks.hooked(monkeypatch, {"iam.SimulatePrincipalPolicy": deny}) as calls,
        pytest.raises(EnvironmentProblem) as err,
    ):
        permissions.require(CloudSpec(**SPOT))
    text = str(err.value)
    assert "AWSServiceRoleForEC2Spot" in text and "nothing was created" in text
    assert "aws iam create-service-linked-role --aws-service-name spot.amazonaws.com" in text
    (asked,) = [p for p in calls.ops("SimulatePrincipalPolicy") if "iam:AWSServiceName" in str(p)]
    assert asked["ContextEntries"] == [
        {
            "ContextKeyName": "iam:AWSServiceName",
            "ContextKeyValues": ["spot.amazonaws.com"],
            "ContextKeyType": "string",
        }
    ]
    who = aws.client("sts", "us-east-1").get_caller_identity()["Arn"]
    assert asked["PolicySourceArn"] == who  # the caller, from STS


def test_an_existing_role_or_one_the_caller_may_create_passes(
    moto: motokit.MotoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    role = {"Role": {"RoleName": "AWSServiceRoleForEC2Spot", "Path": "/aws-service-role/",
                     "RoleId": "AROAEXAMPLE0000000000", "CreateDate": "2026-01-01T00:00:00Z",
                     "Arn": "arn:aws:iam::123456789012:role/aws-service-role/spot.amazonaws.com/"
                            "AWSServiceRoleForEC2Spot"}}  # fmt: skip
    roles = [answer(role), None]  # there, then not there (moto's own NoSuchEntity)
    handlers = {"iam.GetRole": lambda p: roles.pop(0), "iam.SimulatePrincipalPolicy": simulator({})}
    with awshooks.hooked(monkeypatch, handlers):
        there = permissions.require(CloudSpec(**SPOT))
        creatable = permissions.require(CloudSpec(**SPOT))
    (slr,) = [c for c in there if "AWSServiceRoleForEC2Spot" in c.action]
    assert slr.outcome == "allowed" and "exists" in slr.detail
    (slr,) = [c for c in creatable if "AWSServiceRoleForEC2Spot" in c.action]
    assert slr.outcome == "allowed" and "created at first use" in slr.detail


def test_dry_runs_aws_cannot_judge_are_asked_of_the_simulator(
    moto: motokit.MotoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On AWS a dry run on a made-up id answers NotFound before the permission is decided:
    before, most deletes ended "unchecked". Now the simulator decides, with the campaign's
    tag on the resource; an explicit deny refuses the campaign naming the action."""
    spec = {**SPOT, "market": "on-demand"}
    handlers = {
        "ec2.DeleteVpc": lambda p: error("InvalidVpcID.NotFound"),
        "ec2.TerminateInstances": lambda p: error("InvalidInstanceID.Malformed"),
        "iam.SimulatePrincipalPolicy": simulator({"ec2:DeleteVpc": "explicitDeny"}),
    }
    with (
        awshooks.hooked(monkeypatch, handlers) as calls,
        pytest.raises(EnvironmentProblem, match=r"ec2:DeleteVpc in us-east-1 \(IAM policy"),
    ):
        permissions.require(CloudSpec(**spec))
    (asked,) = calls.ops("SimulatePrincipalPolicy")
    assert {"ec2:DeleteVpc", "ec2:TerminateInstances"} <= set(asked["ActionNames"])
    keys = {e["ContextKeyName"]: e["ContextKeyValues"] for e in asked["ContextEntries"]}
    assert keys["aws:ResourceTag/netfleet:campaign"] == ["nf-perm"]
    found = permissions.check(CloudSpec(**spec))  # without the deny: allowed, by the simulator
    assert all(c.outcome == "allowed" for c in found if c.action == "ec2:TerminateInstances")
