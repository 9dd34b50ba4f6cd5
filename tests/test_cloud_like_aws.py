"""The cloud path behaves like AWS, not like moto (issue 24 item 6).

moto answers at once and never refuses; AWS does not. Each test puts AWS's real error shapes in
front of moto's server (its own process, loopback only) through botocore's ``before-call`` hook
(:mod:`tests.awshooks`): NotFound right after a create, MISSING for a task just started, no
capacity in one zone, DependencyViolation on a delete for longer than the old ~25 s budget."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from netfleet import aws
from netfleet.cloud.aws import retry
from netfleet.cloud.aws.acquire.provision import Provisioner
from netfleet.cloud.aws.campaign import CloudSpec
from netfleet.cloud.aws.release import teardown
from netfleet.errors import EnvironmentProblem
from tests import awshooks, motokit
from tests.awshooks import answer, error, first_n
from tests.motokit import MotoServer

moto = motokit.moto
SPEC = {
    "campaign": "nf-like",
    "region": "us-east-1",
    "fleets": [{"instance_type": "t3.micro", "count": 1, "role": "server"}],
}


fresh = motokit.fresh  # the module's moto server, reset for each test


def test_clients_use_adaptive_retries_with_more_attempts() -> None:
    cfg = aws.client("ec2", "us-east-1", endpoint_url="http://127.0.0.1:9").meta.config
    assert cfg.retries["mode"] == "adaptive" and cfg.retries["total_max_attempts"] >= 10


@pytest.mark.slow
def test_not_found_right_after_each_create_is_retried(
    fresh: MotoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each call that follows a create answers NotFound twice (as AWS may for seconds)."""
    shapes = {
        "ec2.ModifyVpcAttribute": "InvalidVpcID.NotFound",
        "ec2.ModifySubnetAttribute": "InvalidSubnetID.NotFound",
        "ec2.AttachInternetGateway": "InvalidInternetGatewayID.NotFound",
        "ec2.CreateRoute": "InvalidRouteTableID.NotFound",
        "ec2.AssociateRouteTable": "InvalidRouteTableID.NotFound",
        "ec2.AuthorizeSecurityGroupIngress": "InvalidGroup.NotFound",
        "ec2.DescribeInstances": "InvalidInstanceID.NotFound",
    }
    handlers = {op: first_n(2, error(code)) for op, code in shapes.items()}
    with awshooks.hooked(monkeypatch, handlers) as calls:
        prov = Provisioner(CloudSpec(**SPEC), tmp_path, poll_s=0.01)
        hosts = prov.acquire()
    assert hosts[0].private_ip
    for op in shapes:
        assert len(calls.ops(op.split(".")[1])) >= 3, op
    prov.release()


@pytest.mark.slow
def test_a_zone_without_capacity_falls_back_to_another_offering_zone(
    fresh: MotoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    full: list[str] = []

    def no_capacity(params: dict[str, Any]) -> Any:
        zone = params.get("Placement", {}).get("AvailabilityZone")
        if not full or zone == full[0]:
            full[:1] = [zone]
            return error(
                "InsufficientInstanceCapacity",
                f"We currently do not have sufficient t3.micro capacity in {zone}.",
                500,
            )
        return None

    with awshooks.hooked(monkeypatch, {"ec2.RunInstances": no_capacity}) as calls:
        prov = Provisioner(CloudSpec(**SPEC), tmp_path, poll_s=0.01)
        hosts = prov.acquire()
    assert hosts[0].az != full[0] and hosts[0].labels["availability_zone"] == hosts[0].az
    zones = [p["Placement"]["AvailabilityZone"] for p in calls.ops("RunInstances")]
    assert zones[0] == full[0] and zones[-1] == hosts[0].az
    prov.release()
    assert not any(teardown.remaining(aws.client("ec2", "us-east-1"), "nf-like").values())


def test_vcpu_limit_is_a_clear_error_and_nothing_is_left(
    fresh: MotoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """VcpuLimitExceeded is the region's quota: another zone would not help."""
    limit = error("VcpuLimitExceeded", "You have requested more vCPU capacity than allowed")
    prov = None
    with (
        awshooks.hooked(monkeypatch, {"ec2.RunInstances": lambda p: limit}) as calls,
        pytest.raises(EnvironmentProblem, match="vCPU quota") as err,
    ):
        prov = Provisioner(CloudSpec(**SPEC), tmp_path, poll_s=0.01)
        prov.acquire()
    assert prov is not None
    assert "L-1216C47A" in (err.value.hint or "")
    assert len(calls.ops("RunInstances")) == 1
    prov.release()
    assert not any(teardown.remaining(aws.client("ec2", "us-east-1"), "nf-like").values())


def test_a_delete_refused_for_minutes_is_retried_within_its_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """AWS refuses a security group's delete while ENIs detach, often for minutes: the budget
    is time (10 min), not 8 attempts (~25 s). A fake clock stands in for the minutes."""
    now = [0.0]
    answers = iter([error("DependencyViolation")] * 30)

    def delete() -> str:
        from botocore.exceptions import ClientError

        answer = next(answers, None)
        if answer is not None:
            raise ClientError(answer[1], "DeleteSecurityGroup")
        return "deleted"

    def sleep(s: float) -> None:
        now[0] += s

    got = retry.call(
        delete, retry_on=retry.IN_USE, budget_s=retry.DELETE_BUDGET_S, sleep=sleep,
        clock=lambda: now[0],
    )  # fmt: skip
    assert got == "deleted" and now[0] > 300
    answers = iter([error("DependencyViolation")] * 1000)
    with pytest.raises(Exception, match="DependencyViolation"):
        retry.call(delete, retry_on=retry.IN_USE, budget_s=60, sleep=sleep, clock=lambda: now[0])


@pytest.mark.slow
def test_a_task_just_started_may_be_missing_for_a_moment(
    fresh: MotoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DescribeTasks answers ``failures: [{reason: MISSING}]`` and no task right after RunTask
    (was: IndexError on ``tasks[0]``)."""
    from netfleet.cloud.aws.acquire import fargate
    from tests.test_cloud_fargate import KEEP_RUNNING, campaign, set_task_transition

    set_task_transition(fresh, KEEP_RUNNING)
    try:
        c = campaign(name="nf-like", tiers=[{"cpu": 256, "memory": 512}])

        def missing(params: dict[str, Any]) -> Any:
            arns = params.get("tasks", [])
            return answer(
                {"tasks": [], "failures": [{"arn": a, "reason": "MISSING"} for a in arns]}
            )

        seen = [0]

        def twice_missing(params: dict[str, Any]) -> Any:
            seen[0] += 1
            return missing(params) if seen[0] <= 2 else None

        with awshooks.hooked(monkeypatch, {"ecs.DescribeTasks": twice_missing}):
            prov = Provisioner(c, tmp_path, poll_s=0.01)
            prov.acquire()
            hosts = fargate.acquire_tiers(prov, c.fargate)
        assert seen[0] >= 3 and hosts[0].private_ip
        prov.release()
    finally:
        set_task_transition(fresh, None)


@pytest.mark.slow
def test_fargate_tasks_get_an_execution_role_and_logs_removed_by_tag(
    fresh: MotoServer, tmp_path: Path
) -> None:
    """Each task definition names the campaign's execution role and sends the container's
    output to the campaign's log group (awslogs); teardown deletes both by their tags and
    leaves a role of the same path that is not netfleet's."""
    from netfleet.cloud.aws.acquire import fargate, fargate_exec
    from tests.test_cloud_fargate import KEEP_RUNNING, campaign, set_task_transition

    iam = aws.client("iam", "us-east-1")
    iam.create_role(
        RoleName="netfleet-someone-else-ecs",
        Path="/netfleet/",
        AssumeRolePolicyDocument=json.dumps(fargate_exec.TRUST),
    )  # untagged: not netfleet's
    set_task_transition(fresh, KEEP_RUNNING)
    try:
        c = campaign(name="nf-like", tiers=[{"cpu": 256, "memory": 512}])
        prov = Provisioner(c, tmp_path, poll_s=0.01)
        prov.acquire()
        (host,) = fargate.acquire_tiers(prov, c.fargate)
        ecs = aws.client("ecs", "us-east-1")
        (task,) = ecs.describe_tasks(cluster="netfleet-nf-like", tasks=[host.task_arn])["tasks"]
        td = ecs.describe_task_definition(taskDefinition=task["taskDefinitionArn"])
        role = fargate_exec.role_name(prov.name)
        assert td["taskDefinition"]["executionRoleArn"].endswith(f"role/netfleet/{role}")
        (container,) = td["taskDefinition"]["containerDefinitions"]
        opts = container["logConfiguration"]["options"]
        assert container["logConfiguration"]["logDriver"] == "awslogs"
        assert opts["awslogs-group"] == fargate_exec.log_group_name(prov.name)
        (name,) = iam.list_role_policies(RoleName=role)["PolicyNames"]
        doc = iam.get_role_policy(RoleName=role, PolicyName=name)["PolicyDocument"]
        logs_part = doc["Statement"][1]
        assert logs_part["Resource"].endswith(f"log-group:{opts['awslogs-group']}:*")
        logs = aws.client("logs", "us-east-1")
        groups = logs.describe_log_groups(logGroupNamePrefix="/netfleet/")["logGroups"]
        assert [g["logGroupName"] for g in groups] == [opts["awslogs-group"]]
        prov.release()
    finally:
        set_task_transition(fresh, None)
    assert not logs.describe_log_groups(logGroupNamePrefix="/netfleet/")["logGroups"]
    names = [r["RoleName"] for r in iam.list_roles(PathPrefix="/netfleet/")["Roles"]]
    assert names == ["netfleet-someone-else-ecs"]


def test_backing_ssh_needs_the_fargate_image_pinned_by_digest(tmp_path: Path) -> None:
    import yaml

    from netfleet.errors import SpecError
    from netfleet.spec import load_spec

    examples = Path(__file__).resolve().parent.parent / "examples"
    doc = yaml.safe_load((examples / "fargate-tiers.yaml").read_text())
    doc["cloud"].update(backing="ssh", controller_cidr="16.0.0.7/32")
    path = tmp_path / "f.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(SpecError) as err:
        load_spec(path)
    assert "cloud.fargate.image" in str(err.value) and "sha256" in str(err.value)
    doc["cloud"]["fargate"]["image"] = "networkstatic/iperf3@sha256:" + "a" * 64
    path.write_text(yaml.safe_dump(doc))
    load_spec(path)


@pytest.mark.parametrize(("tool", "command"), [("sockperf", "sockperf"), ("iperf2", "iperf")])
def test_netfleet_run_refuses_an_engine_al2023_lacks_before_launch(
    fresh: MotoServer, tmp_path: Path, tool: str, command: str
) -> None:
    """``netfleet run`` with latency runs that need sockperf (or iperf 2) on ``image: al2023``
    (its repositories carry neither; the user-data's install skipped them silently): exit 2
    naming host, image, tool and engine — and not one resource exists, not even the VPC."""
    import yaml

    from tests.test_cloud_run import netfleet

    doc = {
        "campaign": "nf-al2023",
        "cloud": {
            "region": "us-east-1",
            "backing": "ssh",
            "controller_cidr": "16.0.0.7/32",  # a public /32, as backing ssh requires
            "image": "al2023",
            "fleets": [
                {"name": "srv", "instance_type": "c5.large", "role": "server"},
                {"name": "cli", "instance_type": "c5.large", "role": "client"},
            ],
        },
        "tests": [
            {
                "name": "rr",
                "engine": "latency",
                "server": "srv",
                "subject": "client",
                "params": {"tool": tool, "duration": 2},
                "matrix": {"client": ["cli"]},
            }
        ],
    }
    spec = tmp_path / "al2023.yaml"
    spec.write_text(yaml.safe_dump(doc, sort_keys=False))
    ec2 = aws.client("ec2", "us-east-1")
    vpcs_before = {v["VpcId"] for v in ec2.describe_vpcs()["Vpcs"]}
    done = netfleet(tmp_path, "run", str(spec), "--yes")
    out = done.stdout + done.stderr
    assert done.returncode == 2, out[-3000:]
    assert "Traceback" not in out
    for host in ("srv", "cli"):
        assert f"host {host}: image al2023 has no package for {command} (engine" in out, out
    assert "latency" in out and "debian-12" in out  # the engine, and the fix
    assert not any(teardown.remaining(ec2, "nf-al2023").values())
    assert {v["VpcId"] for v in ec2.describe_vpcs()["Vpcs"]} == vpcs_before
    assert not ec2.describe_instances()["Reservations"]


# -- boto3's waiters, in rounds within our budgets (netfleet.cloud.retry.wait) -----------------
def _instance(state: str, iid: str = "i-0abc") -> Any:
    return answer(
        {"Reservations": [{"Instances": [{"InstanceId": iid, "State": {"Name": state}}]}]}
    )


def test_waiters_end_on_aws_acceptors_and_our_retries(
    fresh: MotoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """InstanceRunning: pending → running succeeds; a throttle that outlived botocore's retries
    (one attempt here) starts the next round instead of failing; ``terminated`` is AWS's
    terminal failure, raised at once (``last_response`` tells the state); a budget spent is
    :class:`retry.WaitTimedOut`. InstanceTerminated: an id AWS no longer knows is gone."""
    from botocore.config import Config
    from botocore.exceptions import WaiterError

    seq = iter([error("RequestLimitExceeded", status=503), _instance("pending"),
                _instance("running")])  # fmt: skip
    with (
        monkeypatch.context() as mp,
        awshooks.hooked(mp, {"ec2.DescribeInstances": lambda p: next(seq)}) as calls,
    ):
        one = Config(retries={"total_max_attempts": 1})
        ec2 = aws.client("ec2", "us-east-1", config=one)
        retry.wait(ec2.get_waiter("instance_running"), InstanceIds=["i-0abc"], budget_s=5,
                   delay_s=0.01)  # fmt: skip
    assert len(calls.ops("DescribeInstances")) == 3
    with (
        monkeypatch.context() as mp,
        awshooks.hooked(mp, {"ec2.DescribeInstances": lambda p: _instance("terminated")}),
    ):
        ec2 = aws.client("ec2", "us-east-1")
        with pytest.raises(WaiterError) as failed:
            retry.wait(ec2.get_waiter("instance_running"), InstanceIds=["i-0abc"], budget_s=5,
                       delay_s=0.01)  # fmt: skip
    assert not isinstance(failed.value, retry.WaitTimedOut)
    state = failed.value.last_response["Reservations"][0]["Instances"][0]["State"]["Name"]
    assert state == "terminated"
    with (
        monkeypatch.context() as mp,
        awshooks.hooked(mp, {"ec2.DescribeInstances": lambda p: _instance("pending")}),
    ):
        ec2 = aws.client("ec2", "us-east-1")
        with pytest.raises(retry.WaitTimedOut):
            retry.wait(ec2.get_waiter("instance_running"), InstanceIds=["i-0abc"], budget_s=0.3,
                       delay_s=0.02)  # fmt: skip
    gone = error("InvalidInstanceID.NotFound", "The instance ID 'i-0abc' does not exist")
    with (
        monkeypatch.context() as mp,
        awshooks.hooked(mp, {"ec2.DescribeInstances": lambda p: gone}),
    ):
        teardown.wait_terminated(aws.client("ec2", "us-east-1"), ["i-0abc"], "x", poll_s=0.01,
                                 wait_s=1, region="us-east-1")  # fmt: skip


def test_a_task_missing_for_good_times_out_naming_it(
    fresh: MotoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TasksRunning calls MISSING a failure; for a task just started it is retried (above), and
    one that never appears ends with the tier named and MISSING said, after the budget. The
    budget leaves room for three polls on a busy machine (at 0.3 s, two slow first polls spent
    it: the next one was refused, as its delay would pass the deadline)."""
    from netfleet.cloud.aws.acquire import fargate

    def missing(params: dict[str, Any]) -> Any:
        arns = params.get("tasks", [])
        return answer({"tasks": [], "failures": [{"arn": a, "reason": "MISSING"} for a in arns]})

    class Prov:
        poll_s = 0.01

    tiers = fargate.FargateTiers.__new__(fargate.FargateTiers)
    tier = fargate.tier(256, 512)
    with monkeypatch.context() as mp, awshooks.hooked(mp, {"ecs.DescribeTasks": missing}) as calls:
        tiers.ecs, tiers.prov, tiers.wait_s = aws.client("ecs", "us-east-1"), Prov(), 1.0
        with pytest.raises(EnvironmentProblem, match=r"task f256-512m still MISSING after 1 s"):
            tiers._wait_running("netfleet-x", tier, "arn:aws:ecs:us-east-1:1:task/x/0a")
    assert len(calls.ops("DescribeTasks")) >= 3
