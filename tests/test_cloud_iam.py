"""IAM for real (issue 24, item 8): campaigns run with *exactly* docs/iam-policy.json, enforced by
moto's IAM (its own server process; ``/moto-api/reset-auth`` 0 = every call is checked against
the caller's policies), and an action taken out of the policy is refused before anything
billable exists, naming the action.

moto checks actions and resources, not condition keys (the policy's tag conditions) nor
service-linked roles: docs/cloud.md says how to check those on a real account."""

from __future__ import annotations

import copy
import json
import os
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from netfleet import aws
from tests import motokit
from tests.motokit import MotoServer
from tests.test_cloud_run import netfleet, one_client

SHIPPED = json.loads((Path(__file__).resolve().parents[1] / "docs" / "iam-policy.json").read_text())


def as_moto_checks(policy: dict[str, Any]) -> dict[str, Any]:
    """The shipped policy as moto can evaluate it: moto checks each call's action against the
    statements but asks about resource ``*`` for every service except S3 (and IAM on a role
    that already exists), and ignores condition keys. So every statement scoped to ARNs other
    than S3's also lists ``*`` here — the one deviation from the shipped file; the ARNs and
    conditions are what only the IAM policy simulator checks (docs/cloud.md, "IAM")."""
    doc = copy.deepcopy(policy)
    for st in doc["Statement"]:
        res = [st["Resource"]] if isinstance(st["Resource"], str) else st["Resource"]
        if "*" not in res and not all(r.startswith("arn:aws:s3:::") for r in res):
            st["Resource"] = [*res, "*"]
    return doc


POLICY = as_moto_checks(SHIPPED)
ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")
BUCKET = "netfleet-results"


@pytest.fixture(scope="module")
def moto() -> Iterator[MotoServer]:
    with motokit.moto_server() as srv:
        yield srv


def _auth(server: MotoServer, free_calls: str) -> None:
    req = urllib.request.Request(
        server.url + "/moto-api/reset-auth",
        data=free_calls.encode(),
        method="POST",
        headers={"Content-Type": "text/plain"},  # a form body would be parsed away
    )
    urllib.request.urlopen(req, timeout=10).read()


def without(action: str) -> dict[str, Any]:
    """The shipped policy with one action taken out."""
    doc = copy.deepcopy(POLICY)
    for st in doc["Statement"]:
        acts = [st["Action"]] if isinstance(st["Action"], str) else st["Action"]
        st["Action"] = [a for a in acts if a != action]
    doc["Statement"] = [st for st in doc["Statement"] if st["Action"]]
    return doc


@pytest.fixture
def as_user(moto: MotoServer) -> Iterator[Any]:
    """``as_user(policy)`` → the environment of an IAM user holding exactly ``policy``; every
    call from then on is checked. The admin's view (no checks) is back after the test."""
    _auth(moto, "inf")
    moto.reset()

    def make(policy: dict[str, Any]) -> dict[str, str]:
        aws.client("s3", "us-east-1").create_bucket(Bucket=BUCKET)
        iam = aws.client("iam", "us-east-1")
        iam.create_user(UserName="netfleet-runner")
        iam.put_user_policy(
            UserName="netfleet-runner", PolicyName="netfleet", PolicyDocument=json.dumps(policy)
        )
        key = iam.create_access_key(UserName="netfleet-runner")["AccessKey"]
        _auth(moto, "0")
        env = {k: v for k, v in os.environ.items() if k != "AWS_SESSION_TOKEN"}
        env["AWS_ACCESS_KEY_ID"] = key["AccessKeyId"]
        env["AWS_SECRET_ACCESS_KEY"] = key["SecretAccessKey"]
        return env

    yield make
    _auth(moto, "inf")


def run(tmp_path: Path, spec: Path, env: dict[str, str]) -> Any:
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:  # the helper starts `netfleet run` with this process's environment
        return netfleet(tmp_path, "run", str(spec))
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _admin_counts(moto: MotoServer) -> tuple[int, int]:
    """(instances ever launched, VPCs besides the default one) — as the admin, unchecked."""
    _auth(moto, "inf")
    ec2 = aws.client("ec2", "us-east-1")
    launched = sum(len(r["Instances"]) for r in ec2.describe_instances()["Reservations"])
    vpcs = [v for v in ec2.describe_vpcs()["Vpcs"] if not v.get("IsDefault")]
    return launched, len(vpcs)


def test_the_user_is_really_checked(as_user: Any) -> None:
    """The enforcement is on: an action outside the policy is denied to the user — and the
    shipped SSM statement (scoped to AWS's parameter ARNs) is one moto cannot match."""
    env = as_user(SHIPPED)
    saved = dict(os.environ)
    os.environ.update(env)
    os.environ.pop("AWS_SESSION_TOKEN", None)
    try:
        from botocore.exceptions import ClientError

        with pytest.raises(ClientError) as err:
            aws.client("iam", "us-east-1").list_users()
        assert err.value.response["Error"]["Code"] in {"AccessDenied", "AccessDeniedException"}
        aws.client("ec2", "us-east-1").describe_instance_types(MaxResults=5)  # in the policy
        name = "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64"
        with pytest.raises(ClientError) as err:
            aws.client("ssm", "us-east-1").get_parameter(Name=name)
        assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    finally:
        os.environ.clear()
        os.environ.update(saved)


@ROOT
@pytest.mark.netns
@pytest.mark.slow
def test_ec2_campaign_with_exactly_the_policy(
    moto: MotoServer, as_user: Any, tmp_path: Path
) -> None:
    """aws-credits (spot: DescribeSpotPriceHistory is read) cut to one 3 s run, results to S3,
    every call checked against the shipped policy: it completes and leaves nothing."""
    env = as_user(POLICY)
    res = run(tmp_path, one_client(tmp_path, 3), env)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "1 of 1 runs ok" in res.stdout
    assert "fell back" not in res.stdout  # spot prices were read, not replaced by on-demand
    _auth(moto, "inf")
    keys = aws.client("s3", "us-east-1").list_objects_v2(Bucket=BUCKET).get("Contents", [])
    assert sum("/d=" in k["Key"] for k in keys) == 1
    assert not [k for k in keys if ".netfleet-probe" in k["Key"]]  # the probe was deleted
    from netfleet.cloud.aws.release import teardown

    left = teardown.remaining(aws.client("ec2", "us-east-1"), "aws-credits")
    assert not any(left.values()), left


@ROOT
@pytest.mark.netns
@pytest.mark.slow
def test_fargate_campaign_with_exactly_the_policy(
    moto: MotoServer, as_user: Any, tmp_path: Path
) -> None:
    from tests.test_cloud_fargate import KEEP_RUNNING, set_task_transition
    from tests.test_cloud_fargate_run import shortened

    env = as_user(POLICY)
    set_task_transition(moto, KEEP_RUNNING)
    try:
        spec = shortened(tmp_path, [{"cpu": 256, "memory": 512}], duration=1, omit=0)
        doc = yaml.safe_load(spec.read_text())
        doc["tests"][0]["matrix"].pop("direction", None)
        spec.write_text(yaml.safe_dump(doc, sort_keys=False))
        res = run(tmp_path, spec, env)
    finally:
        set_task_transition(moto, None)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    _auth(moto, "inf")
    from netfleet.cloud.aws.release import teardown
    from netfleet.cloud.aws.release.fargate_teardown import our_cluster

    region = doc["cloud"]["region"]
    left = teardown.remaining(aws.client("ec2", region), doc["campaign"])
    assert not any(left.values()), left
    assert our_cluster(aws.client("ecs", region), doc["campaign"], None) is None


@pytest.mark.slow  # a `netfleet run` subprocess each (~15 s on a loaded 2-core machine)
@pytest.mark.parametrize("action", ["ec2:RunInstances", "ec2:DescribeSpotPriceHistory"])
def test_a_denied_ec2_action_is_refused_before_anything_exists(
    moto: MotoServer, as_user: Any, tmp_path: Path, action: str
) -> None:
    """Dry runs and reads before acquire: the run fails (exit 4) naming the action, and no VPC
    and no instance was ever created — not after the instances launched."""
    env = as_user(without(action))
    res = run(tmp_path, one_client(tmp_path, 1), env)
    assert res.returncode == 4, res.stdout[-2000:] + res.stderr[-2000:]
    assert action in res.stderr and "nothing was created" in res.stderr, res.stderr[-2000:]
    assert _admin_counts(moto) == (0, 0)


@pytest.mark.slow
@pytest.mark.parametrize("action", ["s3:PutObject", "s3:DeleteObject"])
def test_a_results_root_that_refuses_is_refused_before_launch(
    moto: MotoServer, as_user: Any, tmp_path: Path, action: str
) -> None:
    """Today's failure: s3:PutObject denied only after both instances launched and ran. Now the
    probe object (write, read, delete, list) fails first, naming the action."""
    env = as_user(without(action))
    res = run(tmp_path, one_client(tmp_path, 1), env)
    assert res.returncode != 0 and res.returncode != 1, res.stderr[-2000:]
    assert action in res.stderr and "nothing was launched" in res.stderr, res.stderr[-2000:]
    assert _admin_counts(moto) == (0, 0)


def ec2_only() -> dict[str, Any]:
    """The shipped policy without any ECS, IAM or CloudWatch Logs action: what a user who runs
    only EC2 campaigns may be given."""
    doc = copy.deepcopy(POLICY)
    for st in doc["Statement"]:
        acts = [st["Action"]] if isinstance(st["Action"], str) else st["Action"]
        st["Action"] = [a for a in acts if not a.startswith(("ecs:", "iam:", "logs:"))]
    doc["Statement"] = [st for st in doc["Statement"] if st["Action"]]
    return doc


def test_an_ec2_only_campaign_is_torn_down_without_ecs_iam_or_logs(
    moto: MotoServer, as_user: Any, tmp_path: Path
) -> None:
    """`cloud destroy` (and `reap`, which every `netfleet run` starts with) of an EC2-only
    campaign under a policy holding no ECS, IAM or logs permission: the instance is terminated
    first and everything goes (before: the first ECS read raised AccessDenied before anything
    was terminated)."""
    import datetime as dt

    from netfleet.cloud.aws.acquire.provision import Provisioner
    from netfleet.cloud.aws.campaign import CloudSpec
    from netfleet.cloud.aws.release import teardown

    spec = CloudSpec(
        campaign="nf-ec2only",
        region="us-east-1",
        fleets=[{"instance_type": "t3.micro", "count": 1, "role": "client"}],
        duration_minutes=5,
    )
    Provisioner(spec, tmp_path, poll_s=0.05).acquire()  # as the admin
    env = as_user(ec2_only())
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        from botocore.exceptions import ClientError

        with pytest.raises(ClientError):  # the user really may not read ECS
            aws.client("ecs", "us-east-1").list_clusters()
        later = dt.datetime.now(dt.UTC) + dt.timedelta(days=1)
        found = teardown.reap(tmp_path, ["us-east-1"], later, delete=False)
        assert [e.campaign for e in found] == ["nf-ec2only"]
        totals = teardown.destroy(tmp_path, "nf-ec2only", poll_s=0.05)
        assert not any(totals.values()), totals
    finally:
        os.environ.clear()
        os.environ.update(saved)
    _auth(moto, "inf")
    left = teardown.remaining(aws.client("ec2", "us-east-1"), "nf-ec2only")
    assert not any(left.values()), left


@pytest.mark.slow  # a `netfleet cloud up` subprocess (~10 s on a loaded 2-core machine)
def test_cloud_up_goes_through_acquire_and_its_permission_check(
    moto: MotoServer, as_user: Any, tmp_path: Path
) -> None:
    """`cloud up` launches through the seam's `acquire` (issue 35), which probes the
    permissions before anything exists: with ec2:RunInstances denied it is refused naming the
    action, and no VPC was made (before: `cloud up` built the Provisioner itself, skipped the
    probe, made the VPC, subnets, gateway, group and key pair, then failed on RunInstances)."""
    spec = tmp_path / "up.cloud.yaml"
    spec.write_text("campaign: nf-upiam\nfleets: [{instance_type: t3.micro}]\n")
    env = as_user(without("ec2:RunInstances"))
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        res = netfleet(tmp_path, "cloud", "up", str(spec), "--release")
    finally:
        os.environ.clear()
        os.environ.update(saved)
    assert res.returncode == 4, res.stdout[-2000:] + res.stderr[-2000:]
    assert "ec2:RunInstances" in res.stderr and "nothing was created" in res.stderr, res.stderr
    assert _admin_counts(moto) == (0, 0)
    assert not (tmp_path / "cloud" / "nf-upiam" / "journal.jsonl").exists()  # nothing journalled
