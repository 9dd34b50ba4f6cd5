"""docs/iam-policy.json grants what a campaign needs and no more (issue 35, leak 1), and
docs/cloud.md shows exactly that policy (issue 35, would-fail 4: the page printed a different
"least policy" than the one the tests run with).

moto's IAM enforcement checks actions only (tests/test_cloud_iam.py runs whole campaigns with
this policy); the resource ARNs and condition keys checked here are what AWS evaluates and moto
does not."""

from __future__ import annotations

import json
import runpy
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
POLICY = json.loads((ROOT / "docs" / "iam-policy.json").read_text())
READ = ("Describe", "Get", "List", "Simulate")


def _script() -> dict[str, Any]:
    """scripts/iam_policy_doc.py's functions (it is a script, not a module of the package)."""
    return runpy.run_path(str(ROOT / "scripts" / "iam_policy_doc.py"))


def _list(v: Any) -> list[str]:
    return [v] if isinstance(v, str) else list(v)


def grants(action: str) -> list[dict[str, Any]]:
    """Every Allow statement naming ``action``."""
    return [
        st
        for st in POLICY["Statement"]
        if st["Effect"] == "Allow" and action in _list(st["Action"])
    ]


def _cond(st: dict[str, Any], key: str) -> Any:
    for keys in st.get("Condition", {}).values():
        if key in keys:
            return keys[key]
    return None


def test_the_page_shows_the_policy_the_tests_run_with() -> None:
    page_of = _script()["page"]
    page = (ROOT / "docs" / "cloud.md").read_text()
    assert page == page_of(page, (ROOT / "docs" / "iam-policy.json").read_text()), (
        "docs/cloud.md's policy is stale: run .venv/bin/python scripts/iam_policy_doc.py"
    )
    # and nowhere else on the page is another policy written by hand
    assert page.count('"Version": "2012-10-17"') == 1


def test_no_write_on_every_resource_without_a_condition() -> None:
    """The old policy allowed CreateRole, PutRolePolicy, PassRole, CreateTags, Authorize,
    Modify, Route and prefix-list writes on ``*`` unconditioned: admin-equivalent."""
    loose = []
    for st in POLICY["Statement"]:
        if st["Effect"] != "Allow" or st.get("Condition") or _list(st["Resource"]) != ["*"]:
            continue
        for a in _list(st["Action"]):
            verb = a.split(":", 1)[1]
            if not verb.startswith(READ) and a not in (
                # IAM gives these two no resource scope: the definitions are not billable
                "ecs:RegisterTaskDefinition",
                "ecs:DeregisterTaskDefinition",
            ):
                loose.append(a)
    assert not loose


def test_creates_need_the_campaign_tag_in_the_request() -> None:
    creates = [
        "ec2:CreateVpc", "ec2:CreateSubnet", "ec2:CreateSecurityGroup", "ec2:ImportKeyPair",
        "ec2:CreateInternetGateway", "ec2:CreateRouteTable", "ec2:CreatePlacementGroup",
        "ec2:CreateManagedPrefixList", "ec2:RunInstances",
    ]  # fmt: skip
    for action in creates:
        sts = grants(action)
        assert sts, action
        for st in sts:
            tagged = _cond(st, "aws:RequestTag/netfleet:campaign") or _cond(
                st, "aws:ResourceTag/netfleet:campaign"
            )
            shared = {"arn:aws:ec2:*::image/*", "arn:aws:ec2:*:*:network-interface/*"}
            assert tagged or set(_list(st["Resource"])) <= shared, (action, st["Sid"])


def test_tags_only_on_create_or_the_heartbeat_key_on_own_resources() -> None:
    """Unconditioned CreateTags made every aws:ResourceTag condition meaningless: tag anything
    netfleet:campaign=x, then delete it."""
    sts = grants("ec2:CreateTags")
    assert len(sts) == 2
    for st in sts:
        on_create = _cond(st, "ec2:CreateAction")
        if on_create is not None:
            assert "CreateVpc" in on_create and "RunInstances" in on_create
            continue
        assert _cond(st, "aws:ResourceTag/netfleet:campaign") == "*"
        assert _cond(st, "aws:TagKeys") == ["netfleet:expires-at"]
        assert "ForAllValues:StringEquals" in st["Condition"]


def test_changes_and_deletes_only_on_tagged_resources() -> None:
    verbs = ("Delete", "Terminate", "Modify", "Authorize", "Attach", "Detach", "Associate",
             "Disassociate", "Cancel", "CreateRoute")  # fmt: skip
    seen = set()
    for st in POLICY["Statement"]:
        for a in _list(st["Action"]):
            service, verb = a.split(":", 1)
            if service == "ec2" and verb.startswith(verbs) and verb != "CreateRouteTable":
                seen.add(a)
                assert _cond(st, "aws:ResourceTag/netfleet:campaign") == "*", (a, st["Sid"])
    assert {"ec2:TerminateInstances", "ec2:DeleteVpc", "ec2:ModifyManagedPrefixList"} <= seen


def test_iam_logs_and_ecs_writes_are_scoped_to_netfleets_names() -> None:
    for st in POLICY["Statement"]:
        for a in _list(st["Action"]):
            service, verb = a.split(":", 1)
            if verb.startswith(READ) and a != "iam:GetRole":
                continue
            res = _list(st["Resource"])
            if a == "iam:CreateServiceLinkedRole":
                assert res == ["arn:aws:iam::*:role/aws-service-role/*"]
                assert sorted(_cond(st, "iam:AWSServiceName")) == [
                    "ecs.amazonaws.com",
                    "spot.amazonaws.com",
                ]
            elif a == "iam:GetRole" and st["Sid"] == "ServiceLinkedRolesLookup":
                assert res == ["arn:aws:iam::*:role/aws-service-role/*"]
            elif service == "iam":
                assert res == ["arn:aws:iam::*:role/netfleet/*"], a
            elif service == "logs":
                assert res == ["arn:aws:logs:*:*:log-group:/netfleet/*"], a
            elif service == "ecs" and a not in (
                "ecs:RegisterTaskDefinition",
                "ecs:DeregisterTaskDefinition",
            ):
                assert all(":cluster/netfleet-" in r or "/netfleet-" in r for r in res), a
    (passrole,) = grants("iam:PassRole")
    assert _cond(passrole, "iam:PassedToService") == "ecs-tasks.amazonaws.com"
