"""The dead-man switch follows the plan (issue 25.3), on moto's server with the switch scaled
down to seconds: while the controller beats, ``reap`` never finds the campaign expired; after
the controller is killed (-9), the stamp passes and ``reap`` finds it and deletes everything.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from netfleet import aws
from netfleet.cloud import owner
from netfleet.cloud.aws.acquire.provision import TAG_CAMPAIGN, TAG_EXPIRES
from netfleet.cloud.aws.measure import deadman
from netfleet.cloud.aws.plan import costs
from netfleet.cloud.aws.release import teardown
from tests.motokit import MotoServer, moto_server

REPO = Path(__file__).resolve().parents[1]
REGION = "us-east-1"


@pytest.fixture(scope="module")
def moto() -> Iterator[MotoServer]:
    with moto_server() as srv:
        yield srv


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def launch(campaign: str, switch_s: float, root: Path | None = None) -> str:
    """A campaign's VPC and instance, tagged as the provisioner tags them (with ``root``: as
    that state directory's installation, whose reap may delete them)."""
    ec2 = aws.client("ec2", REGION)
    stamp = (now() + dt.timedelta(seconds=switch_s)).strftime(deadman.STAMP)
    tags = [{"Key": TAG_CAMPAIGN, "Value": campaign}, {"Key": TAG_EXPIRES, "Value": stamp}]
    if root is not None:
        tags.append({"Key": owner.TAG_INSTALLATION, "Value": owner.installation(root)})
    vpc = ec2.create_vpc(CidrBlock="10.77.0.0/16")["Vpc"]["VpcId"]
    ec2.create_tags(Resources=[vpc], Tags=tags)
    ami = ec2.describe_images()["Images"][0]["ImageId"]
    return str(
        ec2.run_instances(
            ImageId=ami, InstanceType="t3.micro", MinCount=1, MaxCount=1,
            TagSpecifications=[{"ResourceType": "instance", "Tags": tags}],
        )["Instances"][0]["InstanceId"]
    )  # fmt: skip


def expired(campaign: str) -> bool:
    return any(e.campaign == campaign for e in teardown.find_expired([REGION], now()))


@pytest.mark.slow
def test_the_switch_never_fires_while_the_controller_beats(moto: MotoServer) -> None:
    campaign = "nf-beat"
    launch(campaign, switch_s=3)
    rearmed: list[int] = []
    beat = deadman.Heartbeat(
        {REGION: aws.client("ec2", REGION)}, campaign, switch_s=3, every_s=0.5,
        rearm=rearmed.append,
    )  # fmt: skip

    async def plan_runs() -> list[bool]:
        beat.start()
        seen = []
        try:
            for _ in range(5):  # a ≥ 5 s "plan", longer than the switch
                await asyncio.sleep(1.0)
                seen.append(await asyncio.to_thread(expired, campaign))
        finally:
            await beat.stop()
        return seen

    seen = asyncio.run(plan_runs())
    assert not any(seen) and beat.beats >= 5 and not beat.failures
    assert rearmed and set(rearmed) == {1}  # each beat re-armed the instances' timer too
    time.sleep(4.5)  # the controller ended without releasing: the switch fires
    assert expired(campaign)


@pytest.mark.slow
def test_the_switch_fires_after_a_lost_controller_and_reap_deletes(
    moto: MotoServer, tmp_path: Path
) -> None:
    campaign = "nf-lost"
    iid = launch(campaign, switch_s=3, root=tmp_path)
    script = (
        "import asyncio, sys\n"
        "from netfleet import aws\n"
        "from netfleet.cloud.aws.measure.deadman import Heartbeat\n"
        "async def main():\n"
        f"    b = Heartbeat({{'{REGION}': aws.client('ec2', '{REGION}')}}, '{campaign}',\n"
        "                  switch_s=3, every_s=0.5)\n"
        "    await asyncio.to_thread(b.beat)\n"
        "    b.start(); print('beating', flush=True)\n"
        "    await asyncio.sleep(600)\n"
        "asyncio.run(main())\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script], cwd=REPO, env=dict(os.environ),
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "beating"
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:  # alive: beyond the first stamp, never expired
            assert not expired(campaign)
            time.sleep(0.5)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    time.sleep(4.5)
    assert expired(campaign)
    teardown.reap(tmp_path, [REGION], now(), delete=True, poll_s=0.05)
    left = teardown.remaining(aws.client("ec2", REGION), campaign)
    assert not any(left.values()), left
    state = aws.client("ec2", REGION).describe_instances(InstanceIds=[iid])
    assert state["Reservations"][0]["Instances"][0]["State"]["Name"] == "terminated"


def test_the_switch_follows_the_plan_and_refuses_a_too_frequent_beat() -> None:
    assert deadman.switch_minutes(4638) == pytest.approx(4638 * 1.25)
    assert deadman.switch_minutes(20) == 50  # at least 30 min of margin
    assert deadman.switch_minutes is costs.switch_minutes
    with pytest.raises(ValueError, match="≥ 3 beats"):
        deadman.Heartbeat({}, "nf-x", switch_s=2, every_s=1)
    argv = deadman.rearm_argv(45)
    assert argv[0] == ["systemctl", "stop", "netfleet-deadline.timer"]
    assert "--on-active=45min" in argv[1] and argv[-1] == ["shutdown", "-P", "+45"]
    stamp = (now() - dt.timedelta(seconds=5)).strftime(deadman.STAMP)
    assert deadman.fired([{"Key": TAG_EXPIRES, "Value": stamp}], now())
    assert not deadman.fired([{"Key": "other", "Value": stamp}], now())


def test_the_heartbeat_beats_while_the_controllers_event_loop_is_busy() -> None:
    """The controller's loop held by synchronous work (a first analysis importing SciPy took
    8 s on a loaded machine, and the sim's switch fired under a running plan): the beats go
    on, in a thread of their own. Once the loop that started them has ended (no ``stop``),
    they stop: a finished controller does not keep its stamp alive."""
    rearmed: list[int] = []
    beat = deadman.Heartbeat({}, "nf-busy", switch_s=3, every_s=0.1, rearm=rearmed.append)

    async def busy() -> int:
        beat.start()
        time.sleep(2.0)  # the loop is blocked: nothing scheduled on it runs meanwhile
        return len(rearmed)

    during = asyncio.run(busy())
    assert during >= 3, f"{during} beats while the loop was blocked for 2 s"
    # the beat thread ends by itself (a beat in progress may still land); a wait bound, not a
    # speed claim: a fixed 0.5 s was no bound for a thread on a busy machine
    assert beat._thread is not None
    beat._thread.join(timeout=30)
    assert not beat._thread.is_alive(), "the heartbeat outlived its event loop"


def _expires(ec2: object, rid: str) -> str | None:
    tags = ec2.describe_tags(  # type: ignore[attr-defined]
        Filters=[{"Name": "resource-id", "Values": [rid]}]
    )["Tags"]
    return next((t["Value"] for t in tags if t["Key"] == TAG_EXPIRES), None)


def test_the_beat_stamps_only_this_installations_campaign_then_rearms(
    moto: MotoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two installations run a campaign of one name: the beat keeps alive only its own (before:
    it stamped the other's, which then never expired); when tagging fails, the instances are
    re-armed all the same (once, a tagging error skipped it); the stamp comes first (the re-arm
    waits for the controller's event loop, the stamp needs only the API); the campaign's Fargate
    cluster is stamped too (and its tasks; before: never, so ``reap`` found a live cluster
    expired)."""
    from netfleet.cloud.aws.release import fargate_teardown
    from tests.awshooks import error, hooked

    campaign = "nf-twice"
    mine_root, theirs_root = tmp_path / "mine", tmp_path / "theirs"
    mine, theirs = launch(campaign, 60, mine_root), launch(campaign, 60, theirs_root)
    me = owner.installation(mine_root)
    ec2, ecs = aws.client("ec2", REGION), aws.client("ecs", REGION)
    tags = [
        {"key": TAG_CAMPAIGN, "value": campaign},
        {"key": owner.TAG_INSTALLATION, "value": me},
        {"key": TAG_EXPIRES, "value": "2000-01-01T00:00:00Z"},
    ]
    cluster = ecs.create_cluster(clusterName=fargate_teardown.cluster_name(campaign), tags=tags)
    before = {iid: _expires(ec2, iid) for iid in (mine, theirs)}
    rearmed: list[int] = []
    stamped_before: list[bool] = []

    def rearm(minutes: int) -> None:
        stamped_before.append(_expires(ec2, mine) != before[mine])
        rearmed.append(minutes)

    beat = deadman.Heartbeat(
        {REGION: ec2}, campaign, switch_s=600, every_s=1, rearm=rearm,
        installation=me, ecs={REGION: ecs},
    )  # fmt: skip
    beat.beat()
    assert stamped_before == [True]
    assert _expires(ec2, mine) != before[mine] and _expires(ec2, theirs) == before[theirs]
    arn = cluster["cluster"]["clusterArn"]
    got = {t["key"]: t["value"] for t in ecs.list_tags_for_resource(resourceArn=arn)["tags"]}
    assert got[TAG_EXPIRES] == _expires(ec2, mine), got
    # a tagging error: the re-arm still happens, and the beat says what failed
    rearmed.clear()
    fails = {"ec2.CreateTags": lambda _p: error("UnauthorizedOperation", status=403)}
    with hooked(monkeypatch, fails):
        failing = deadman.Heartbeat(
            {REGION: aws.client("ec2", REGION)}, campaign, switch_s=600, every_s=1,
            rearm=rearmed.append, installation=me,
        )  # fmt: skip
        with pytest.raises(RuntimeError, match=r"stamp in us-east-1.*UnauthorizedOperation"):
            failing.beat()
    assert rearmed == [10]


def test_the_beat_stamps_this_installations_running_fargate_tasks(
    moto: MotoServer, tmp_path: Path
) -> None:
    """Fargate tasks running in the campaign's cluster (moto's server tags ECS tasks:
    TagResource on a task ARN, tags read back by DescribeTasks): the beat moves this
    installation's tasks' ``expires-at`` with the cluster's, and leaves another installation's
    task of the same campaign name alone (before: a task kept its launch stamp, and ``reap``
    found a live task expired)."""
    from netfleet.cloud.aws.release import fargate_teardown

    campaign = "nf-tasks"
    me = owner.installation(tmp_path / "mine")
    other = owner.installation(tmp_path / "theirs")
    ec2, ecs = aws.client("ec2", REGION), aws.client("ecs", REGION)
    old = "2000-01-01T00:00:00Z"

    def tags(installation: str) -> list[dict[str, str]]:
        return [
            {"key": TAG_CAMPAIGN, "value": campaign},
            {"key": owner.TAG_INSTALLATION, "value": installation},
            {"key": TAG_EXPIRES, "value": old},
        ]

    cluster = ecs.create_cluster(clusterName=fargate_teardown.cluster_name(campaign), tags=tags(me))
    arn = cluster["cluster"]["clusterArn"]
    vpc = ec2.create_vpc(CidrBlock="10.77.0.0/16")["Vpc"]["VpcId"]
    ec2.modify_vpc_attribute(VpcId=vpc, EnableDnsHostnames={"Value": True})  # as netfleet's
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.77.0.0/24")["Subnet"]["SubnetId"]
    group = ec2.create_security_group(GroupName="nf", Description="nf", VpcId=vpc)["GroupId"]
    family = ecs.register_task_definition(
        family=f"netfleet-{campaign}", requiresCompatibilities=["FARGATE"], networkMode="awsvpc",
        cpu="256", memory="512",
        containerDefinitions=[{"name": "iperf3", "image": "networkstatic/iperf3", "memory": 512}],
    )["taskDefinition"]["taskDefinitionArn"]  # fmt: skip

    net = {"awsvpcConfiguration": {"subnets": [subnet], "securityGroups": [group]}}

    def run(installation: str) -> str:
        return str(
            ecs.run_task(
                cluster=arn, taskDefinition=family, launchType="FARGATE", tags=tags(installation),
                networkConfiguration=net,
            )["tasks"][0]["taskArn"]
        )  # fmt: skip

    mine, theirs = run(me), run(other)

    def expires(task: str) -> str:
        (found,) = ecs.describe_tasks(cluster=arn, tasks=[task], include=["TAGS"])["tasks"]
        return next(t["value"] for t in found["tags"] if t["key"] == TAG_EXPIRES)

    assert [t["taskArn"] for t in fargate_teardown.tasks(ecs, campaign, me)] == [mine]
    beat = deadman.Heartbeat(
        {REGION: ec2}, campaign, switch_s=600, every_s=1, installation=me, ecs={REGION: ecs}
    )
    beat.beat()
    stamped = expires(mine)
    assert stamped != old and dt.datetime.strptime(stamped, deadman.STAMP).replace(
        tzinfo=dt.UTC
    ) > now() + dt.timedelta(seconds=500)
    got = {t["key"]: t["value"] for t in ecs.list_tags_for_resource(resourceArn=arn)["tags"]}
    assert got[TAG_EXPIRES] == stamped  # the cluster and its tasks carry one stamp
    assert expires(theirs) == old  # another installation's task: not ours to keep alive
