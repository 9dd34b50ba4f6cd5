"""Fargate tiers on ECS (seed 000) against moto's server (its own process, loopback only).

moto quirks worked with, not around: ``run_task`` needs ``memory`` on the container,
``securityGroups`` and a VPC with DNS hostnames (the campaign's VPC has them); a task's status
jumps to STOPPED on the first describe unless moto's state manager is set to ``manual``
(``POST /moto-api/state-manager/set-transition``), which the fixture does. Where moto differs from
AWS — ``clientToken`` idempotency (moto starts a new task each call) and ``ClusterContainsTasks``
on delete — the tests use botocore's Stubber with AWS-shaped answers and say so.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import textwrap
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from botocore.stub import Stubber

from netfleet import aws
from netfleet.cloud.aws.acquire import fargate
from netfleet.cloud.aws.acquire.provision import TAG_CAMPAIGN, Provisioner
from netfleet.cloud.aws.journal import Journal
from netfleet.cloud.aws.plan import prices
from netfleet.cloud.aws.release import teardown
from netfleet.errors import EnvironmentProblem, InputError, SpecError
from netfleet_sim import fargate as fargate_sim
from tests import forkkit
from tests.motokit import KILL_POINTS, MotoServer, moto_server

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "fargate-tiers.cloud.yaml"
TWO_TIERS = [{"cpu": 256, "memory": 512}, {"cpu": 2048, "memory": 4096}]


def set_task_transition(server: MotoServer, transition: dict[str, object] | None) -> None:
    """moto's state manager: ``manual`` with a huge count keeps tasks RUNNING until stopped;
    None restores the default (a task is STOPPED as soon as it is described)."""
    path, body = "set-transition", {"model_name": "ecs::task", "transition": transition}
    if transition is None:
        path, body = "unset-transition", {"model_name": "ecs::task"}
    req = urllib.request.Request(
        f"{server.url}/moto-api/state-manager/{path}", data=json.dumps(body).encode(), method="POST"
    )
    urllib.request.urlopen(req, timeout=10).read()


KEEP_RUNNING = {"progression": "manual", "times": 10**9}


@pytest.fixture(scope="module")
def moto() -> Iterator[MotoServer]:
    with moto_server() as srv:
        yield srv


@pytest.fixture
def fresh(moto: MotoServer) -> Iterator[MotoServer]:
    moto.reset()
    set_task_transition(moto, KEEP_RUNNING)
    yield moto
    set_task_transition(moto, None)


def campaign(
    name: str = "nf-fg", tiers: list[dict[str, int]] = TWO_TIERS, **kw: Any
) -> fargate.FargateCampaign:
    return fargate.FargateCampaign.model_validate(
        {
            "campaign": name,
            "fleets": [{"instance_type": "t3.micro", "role": "client"}],
            "fargate": {"tiers": tiers},
            **kw,
        }
    )


def counts(name: str, region: str = "us-east-1") -> dict[str, int | None]:
    return teardown.remaining(aws.client("ec2", region), name)


# -- the legal pairs ------------------------------------------------------------------------


def test_legal_pairs_follow_aws_table() -> None:
    sizes = {cpu: len(mem) for cpu, mem in fargate.LEGAL_MEMORY.items()}
    assert sizes == {256: 3, 512: 4, 1024: 7, 2048: 13, 4096: 23, 8192: 12, 16384: 12}
    assert fargate.check_pair(8192, 20480) is None and fargate.check_pair(16384, 122880) is None
    assert "4096" in str(fargate.check_pair(8192, 18432))  # 18 GB: not a 4 GB step
    assert "not a Fargate CPU" in str(fargate.check_pair(3072, 8192))
    with pytest.raises(InputError, match=r"specs/x\.yaml: tiers\[2\]: memory 4096 .* 512, 1024"):
        fargate.tier(256, 4096, source="specs/x.yaml", where="tiers[2]")
    assert {fargate.tier_name(t.cpu, t.memory) for t in campaign().fargate.tiers} == {
        "f256-512m",
        "f2048-4g",
    }
    assert fargate.tier_name(16384, 122880) == "f16k-120g"  # ≤ 10 characters: a lab host name


def test_illegal_pair_in_a_file_names_file_field_line_and_legal_values(tmp_path: Path) -> None:
    bad = tmp_path / "c.cloud.yaml"
    bad.write_text(
        "campaign: nf-x\nfleets: [{instance_type: t3.micro}]\nfargate:\n  tiers:\n"
        "    - {cpu: 256, memory: 512}\n    - {cpu: 1024, memory: 9216}\n"
    )
    with pytest.raises(SpecError) as err:
        fargate.load_campaign(bad)
    (field, line, fix), *_ = err.value.problems
    assert str(bad) in str(err.value) and field == "fargate.tiers.1" and line == 6
    assert "2048, 3072, 4096, 5120, 6144, 7168, 8192 MiB" in fix


def test_example_campaign_is_seed_000_and_priced() -> None:
    c = fargate.load_campaign(EXAMPLE)
    assert len(c.fargate.tiers) == 10 and c.region == "eu-west-1"
    table = prices.load(None)
    rate = table.fargate["eu-west-1"]
    one = fargate.hourly(table, "eu-west-1", fargate.tier(4096, 30720))
    assert one == pytest.approx(4 * rate["vcpu_hour"] + 30 * rate["gb_hour"])
    est = fargate.estimate(table, "eu-west-1", c.fargate.tiers, c.duration_minutes)
    expected = sum(fargate.hourly(table, "eu-west-1", t) or 0 for t in c.fargate.tiers) * (33 / 60)
    assert est.instances == 10 and est.usd == pytest.approx(expected, abs=1e-4)
    unpriced = fargate.estimate(table, "ap-south-2", c.fargate.tiers[:1], 5)
    assert unpriced.usd is None and unpriced.unknown == ["fargate f256-512m"]


# -- provisioning and teardown in moto ------------------------------------------------------


def test_acquire_tiers_then_release_leaves_nothing(fresh: MotoServer, tmp_path: Path) -> None:
    c = campaign()
    prov = Provisioner(c, tmp_path, poll_s=0.05)
    prov.acquire()
    hosts = fargate.acquire_tiers(prov, c.fargate)
    assert [h.name for h in hosts] == ["f256-512m", "f2048-4g"]
    # the campaign's VPC has an internet gateway: tasks get a public address to pull the image
    assert fargate.FargateTiers(prov, c.fargate).public_ip
    ecs = aws.client("ecs", "us-east-1")
    task = ecs.describe_tasks(cluster="netfleet-nf-fg", tasks=[hosts[1].task_arn], include=["TAGS"])
    t = task["tasks"][0]
    assert t["lastStatus"] == "RUNNING" and hosts[1].private_ip == fargate.eni_address(t)
    tags = {x["key"]: x["value"] for x in t["tags"]}
    assert tags[TAG_CAMPAIGN] == "nf-fg" and "netfleet:expires-at" in tags
    td = ecs.describe_task_definition(taskDefinition=t["taskDefinitionArn"])["taskDefinition"]
    assert (td["cpu"], td["memory"], td["networkMode"]) == ("2048", "4096", "awsvpc")
    (container,) = td["containerDefinitions"]
    # the dead man's switch: iperf3 ends (and the task with it) at the campaign's deadline
    timeout, seconds, engine = container["entryPoint"]
    assert (timeout, engine) == ("timeout", "iperf3") and 7000 < int(seconds) <= 120 * 60
    # a standing JSON server: the client reads the task's side with --get-server-output
    assert container["command"] == ["--server", "--json", "--port", "5201"]
    assert container["memory"] == 4096
    # the journal: an intent before every ECS create, the ARN after
    recs = [json.loads(x) for x in prov.journal.path.read_text().splitlines()]
    ecs_recs = [(r["op"], r["kind"]) for r in recs if r["kind"] in ("ecs-cluster", "task")]
    assert ecs_recs[:2] == [("intent", "ecs-cluster"), ("created", "ecs-cluster")]
    before = counts("nf-fg")
    assert (before["tasks"], before["task-definitions"], before["clusters"]) == (2, 2, 1)
    assert not any(prov.release().values())
    assert not any(counts("nf-fg").values())
    state = Journal(tmp_path, "nf-fg").read()
    assert state.bad_lines == 0 and all(r.deleted for r in state.resources)
    deleted = [json.loads(x) for x in prov.journal.path.read_text().splitlines()]
    order = [r["kind"] for r in deleted if r["op"] == "deleted"]
    assert order.index("task") < order.index("instance") < order.index("task-definition")
    assert order.index("task-definition") < order.index("ecs-cluster") < order.index("vpc")


def test_a_task_that_stops_before_running_is_an_error_and_is_cleaned_up(
    fresh: MotoServer, tmp_path: Path
) -> None:
    """moto's default transition: the task is STOPPED at its first describe (like a container
    whose image cannot be pulled)."""
    set_task_transition(fresh, None)
    c = campaign("nf-stop", tiers=TWO_TIERS[:1])
    prov = Provisioner(c, tmp_path, poll_s=0.05)
    prov.acquire()
    with pytest.raises(EnvironmentProblem, match=r"f256-512m is [A-Z]+, not RUNNING"):
        fargate.acquire_tiers(prov, c.fargate)
    prov.release()
    assert not any(counts("nf-stop").values())


def test_destroy_touches_only_tagged_ecs_resources(fresh: MotoServer, tmp_path: Path) -> None:
    """A cluster named like netfleet's but without the campaign's tag (or of campaign
    ``nf-fg-b``, whose families share the prefix) is left alone."""
    ecs = aws.client("ecs", "us-east-1")
    ecs.create_cluster(clusterName="netfleet-nf-fg")  # untagged: someone else's
    other = campaign("nf-fg-b", tiers=TWO_TIERS[:1])
    prov = Provisioner(other, tmp_path / "b", poll_s=0.05)
    prov.acquire()
    fargate.acquire_tiers(prov, other.fargate)
    j = Journal(tmp_path, "nf-fg")
    j.intent("ecs-cluster", "us-east-1", "main")
    teardown.destroy(tmp_path, "nf-fg", poll_s=0.05)
    (c,) = ecs.describe_clusters(clusters=["netfleet-nf-fg"])["clusters"]
    assert c["status"] == "ACTIVE"
    left = counts("nf-fg-b")
    assert (left["tasks"], left["task-definitions"], left["clusters"]) == (1, 1, 1)
    prov.release()


@pytest.mark.slow
def test_reap_by_tag_includes_fargate(fresh: MotoServer, tmp_path: Path) -> None:
    past = dt.datetime.now(dt.UTC) - dt.timedelta(hours=5)
    old = campaign("nf-old", tiers=TWO_TIERS[:1], expires_after_minutes=60)
    prov = Provisioner(old, tmp_path, now=past, poll_s=0.05)
    prov.acquire()
    fargate.acquire_tiers(prov, old.fargate)
    # a campaign whose EC2 resources lost their expires-at tag: reap still finds it by the
    # ECS cluster's tags (and then deletes all of it, EC2 included, by the campaign tag)
    gone = campaign("nf-gone", tiers=TWO_TIERS[:1], expires_after_minutes=60)
    prov2 = Provisioner(gone, tmp_path, now=past, poll_s=0.05)
    prov2.acquire()
    fargate.acquire_tiers(prov2, gone.fargate)
    ec2 = aws.client("ec2", "us-east-1")
    mine = ec2.describe_tags(Filters=[{"Name": "value", "Values": ["nf-gone"]}])["Tags"]
    ec2.delete_tags(
        Resources=[t["ResourceId"] for t in mine], Tags=[{"Key": "netfleet:expires-at"}]
    )
    assert counts("nf-gone")["tasks"] == 1
    now = dt.datetime.now(dt.UTC)
    found = teardown.reap(tmp_path, [], now, delete=False, poll_s=0.05)
    assert {e.campaign for e in found} == {"nf-old", "nf-gone"}
    assert {e.campaign: e.counts["tasks"] for e in found} == {"nf-old": 1, "nf-gone": 1}
    teardown.reap(tmp_path, [], now, delete=True, poll_s=0.05)
    assert not any(counts("nf-old").values()) and not any(counts("nf-gone").values())


def test_run_task_sends_the_journal_token_for_idempotency(tmp_path: Path) -> None:
    """moto ignores ``clientToken`` (a retried call starts a second task): Stubber checks that
    run_task carries the journal's deterministic token, as AWS needs for idempotency."""
    import botocore.session

    c = campaign()
    prov = Provisioner(c, tmp_path)
    tiers = fargate.FargateTiers(prov, c.fargate)
    tiers.ecs = botocore.session.get_session().create_client(
        "ecs", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    token = prov.journal.intent("task", "us-east-1", "f256-512m")
    again = Journal(tmp_path, "nf-fg").intent("task", "us-east-1", "f256-512m")
    assert token == again  # a rerun after a kill sends the same token
    arn = "arn:aws:ecs:us-east-1:123456789012:task/netfleet-nf-fg/abc"
    with Stubber(tiers.ecs) as stub:
        stub.add_response(
            "run_task",
            {"tasks": [{"taskArn": arn}], "failures": []},
            {
                "cluster": "netfleet-nf-fg",
                "taskDefinition": "td",
                "launchType": "FARGATE",
                "count": 1,
                "clientToken": token,
                "networkConfiguration": {
                    "awsvpcConfiguration": {
                        "subnets": ["subnet-1"],
                        "securityGroups": ["sg-1"],
                        "assignPublicIp": "DISABLED",
                    }
                },
                "tags": fargate.ecs_tags(prov, token),
                "startedBy": "netfleet",
            },
        )
        assert tiers._run("netfleet-nf-fg", "td", ["subnet-1"], "sg-1", token) == arn
        stub.add_response("run_task", {"tasks": [], "failures": [{"reason": "RESOURCE:ENI"}]})
        with pytest.raises(EnvironmentProblem, match="RESOURCE:ENI"):
            tiers._run("netfleet-nf-fg", "td", ["subnet-1"], "sg-1", token)


def test_tiers_need_the_campaign_network_and_journal_checks_ecs_arns(tmp_path: Path) -> None:
    prov = Provisioner(campaign(), tmp_path)
    with pytest.raises(EnvironmentProblem, match="no subnet/security group yet"):
        fargate.network(prov)
    j = prov.journal
    arn = "arn:aws:ecs:us-east-1:123456789012:"
    j.intent("ecs-cluster", "us-east-1", "main")
    j.created("ecs-cluster", "us-east-1", "main", arn + "cluster/netfleet-nf-fg")
    j.intent("task", "us-east-1", "f256-512m")
    j.created("task", "us-east-1", "f256-512m", arn + "task/netfleet-nf-fg/0a1b")
    j.created("task-definition", "us-east-1", "x", "arn:aws:ec2:us-east-1:1:instance/i-1")
    j.created("ecs-cluster", "us-east-1", "main", arn + "cluster/someone-elses")
    state = j.read()
    assert state.bad_lines == 2
    assert [r.id for r in state.resources] == [
        arn + "cluster/netfleet-nf-fg",
        arn + "task/netfleet-nf-fg/0a1b",
    ]


def test_cluster_delete_retries_while_tasks_drain() -> None:
    """moto deletes a cluster with tasks at once; AWS answers ClusterContainsTasksException
    until they are gone — Stubber replays that."""
    import botocore.session

    ecs = botocore.session.get_session().create_client(
        "ecs", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    with Stubber(ecs) as stub:
        stub.add_client_error("delete_cluster", "ClusterContainsTasksException", "tasks")
        stub.add_response("delete_cluster", {"cluster": {"status": "INACTIVE"}})
        teardown.retry(lambda: ecs.delete_cluster(cluster="netfleet-x"), delay=0)
        stub.assert_no_pending_responses()


# -- kill -9 at every new step --------------------------------------------------------------

PROVISION_POINTS = [
    f"{when}:{kind}"
    for kind in ("ecs-cluster", "task-definition", "task")
    for when in ("before", "after")
] + ["after:acquire-tiers"]
TEARDOWN_POINTS = [
    "teardown:after-stop-tasks",
    "teardown:after-tasks-stopped",
    "teardown:after-task-definitions",
    "teardown:after-cluster",
]
# the cloud sub-app through the CLI's error boundary (as tests/test_cloud.py runs it)
CLI = (
    "import sys; from netfleet.cli.boundary import guarded; from netfleet.cli.cmd_cloud import app;"
    " sys.exit(guarded(lambda: app(prog_name='netfleet cloud', standalone_mode=False)))"
)
CONTROLLER = textwrap.dedent("""\
    import sys
    from pathlib import Path
    from netfleet.cloud.aws.acquire import fargate
    from netfleet.cloud.aws.acquire.provision import Provisioner
    c = fargate.load_campaign(sys.argv[1])
    prov = Provisioner(c, Path(sys.argv[2]), poll_s=0.05)
    try:
        prov.acquire()
        fargate.acquire_tiers(prov, c.fargate)
    finally:
        prov.release()
""")


@pytest.mark.slow
def test_kill_9_at_every_fargate_step_then_destroy_leaves_zero(
    fresh: MotoServer, tmp_path: Path
) -> None:
    """The controller (a process of its own, forked from a pre-loaded one: tests/forkkit.py;
    acquire EC2 + tiers, then release) SIGKILLs itself at each new ECS step in turn; destroy
    from the journal alone must leave 0 of every resource type."""
    spec = tmp_path / "c.cloud.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "campaign": "nf-fault",
                "fleets": [{"instance_type": "t3.micro"}],
                "fargate": {"tiers": TWO_TIERS},
            }
        )
    )
    kinds = ["tasks", "task-definitions", "clusters", "instances", "security-groups", "vpcs"]
    rows = []
    for n, point in enumerate(PROVISION_POINTS + TEARDOWN_POINTS):
        state = tmp_path / f"s{n}"
        env = {**os.environ, **KILL_POINTS, "NETFLEET_FAULT_AT": point}
        killed = forkkit.run(CONTROLLER, [str(spec), str(state)], env, timeout=120)
        assert killed.returncode == -9, (point, killed.stderr[-2000:])
        left = counts("nf-fault")
        env.pop("NETFLEET_FAULT_AT")
        if n % 4 == 0:  # now and then `netfleet cloud destroy` itself (a subprocess)
            done = forkkit.run(CLI, ["destroy", "nf-fault", "--state-dir", str(state)], env)
            assert done.returncode == 0, (point, done.stderr[-2000:])
        else:
            teardown.destroy(state, "nf-fault", poll_s=0.05)
        after = counts("nf-fault")
        rows.append((point, left, after))
        assert not any(after.values()), (point, after)
    print("\nkill -9 at                   left by kill (" + " ".join(kinds) + ") → after destroy")
    for point, left, after in rows:
        print(
            f"{point:32} "
            + " ".join(f"{left[k] or 0:>{len(k)}}" for k in kinds)
            + f"  → {sum(v or 0 for v in after.values())}"
        )


# -- the simulated backing ------------------------------------------------------------------


def _host(cpu: int, memory: int) -> fargate.TierHost:
    t = fargate.tier(cpu, memory)
    return fargate.TierHost(t.name, t, "arn:task", "10.0.0.9", {"cpu_units": str(cpu)})


def test_sim_tiers_are_shaped_like_the_seed_000_profile() -> None:
    from netfleet.lab import load_lab

    hosts = [_host(2048, 4096), _host(512, 2048), _host(16384, 65536)]
    lab = fargate_sim.lab_spec("fgt", hosts)
    profile = load_lab("fargate").hosts["f2048-4g"]
    got = lab.hosts["f2048-4g"]
    assert got.out == profile.out and got.in_ == profile.in_  # 680.8 / 63.8 Mbit at x0.2
    assert got.labels["figure_source"] == "seed 000 (measured)"
    assert got.labels["advertised_out_mbps"] == 3404.0
    near = lab.hosts["f512-2g"]  # not measured: the nearest tier of the same CPU (512/1024)
    assert near.labels["figure_source"] == "nearest seed 000 tier f512-1g"
    assert near.out == load_lab("fargate").hosts["f512-1g"].out
    big = lab.hosts["f16k-64g"]
    assert str(big.labels["figure_source"]).startswith("assumed")
    assert lab.hosts["client"].out is None  # the client is not the bottleneck


@pytest.mark.netns
@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")
def test_two_tiers_end_to_end_offline(fresh: MotoServer, tmp_path: Path) -> None:
    """Provision 2 tiers in moto, run the example measurement (shortened: 3 s, 1 s omitted) with
    real iperf3 in their sim namespaces, read the cheat sheet, tear down to 0."""
    import asyncio

    from netfleet import lab
    from netfleet.catalog import ingest
    from netfleet.report.cheatsheet import cheatsheet
    from netfleet.runner import run_campaign
    from netfleet.spec import load_spec
    from netfleet.store import ResultsRoot
    from netfleet.units import goodput_ratio
    from tests.labkit import unique_name

    c = campaign("nf-e2e")
    prov = Provisioner(c, tmp_path / "cloud", poll_s=0.05)
    name = unique_name("fg")
    state = tmp_path / "labstate"
    try:
        prov.acquire()
        hosts = fargate.acquire_tiers(prov, c.fargate)
        lab.up(fargate_sim.lab_spec(name, hosts, subnet="198.18.52.0/24"), state_dir=state)
        try:
            doc = yaml.safe_load((ROOT / "examples" / "fargate-tiers.yaml").read_text())
            for key in ("cloud", "results"):  # acquired here through the Python contract
                doc.pop(key)
            doc["hosts"] = fargate_sim.spec_hosts(name, hosts)
            test = doc["tests"][0]
            test["params"].update({"duration": 3, "omit": 1})
            test["matrix"]["server"] = [h.name for h in hosts]
            doc["cooldown"] = 0
            spec_path = tmp_path / "fargate-tiers.yaml"
            spec_path.write_text(yaml.safe_dump(doc))
            root = ResultsRoot(tmp_path / "results")
            result = asyncio.run(run_campaign(load_spec(spec_path), root, lab_state_dir=state))
            assert result.ok == 4, [e.reason for e in result.envelopes]
        finally:
            lab.down(name, state_dir=state)
        ingest(root, tmp_path / "catalog")
        sheet = {
            (r["instance_type"], r["direction"]): r["avg"] * 1e9
            for r in cheatsheet(tmp_path / "catalog").records()
        }
        print("\ncheat sheet (goodput, Mbit/s, lab scale x0.2):")
        for key, got in sorted(sheet.items()):
            print(f"  {key[0]:20} {key[1]:4} {got / 1e6:8.1f}")
        ratio = goodput_ratio(1500)
        for h in hosts:
            out_bps, in_bps, _ = fargate_sim.figures(h.tier)
            for direction, rate in (("out", out_bps * 0.2), ("in", in_bps * 0.2)):
                got = sheet[(h.labels["instance_type"], direction)]
                assert abs(got / (rate * ratio) - 1) <= 0.1, (h.name, direction, got, rate)
    finally:
        prov.release()
    assert not any(counts("nf-e2e").values())


# -- AWS's misbehaviour on a first real run (issue 35) ------------------------------------------
@pytest.fixture
def faults(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """``faults("iam-propagation")``: the emulation in this process answers with that profile
    (``netfleet_sim.awsfaults``); its state (what it injected) is returned."""
    from netfleet_sim import awsfaults

    def use(value: str) -> Any:
        monkeypatch.setenv(awsfaults.PROFILE_ENV, value)
        awsfaults.reset()
        return awsfaults.state()

    yield use
    monkeypatch.delenv(awsfaults.PROFILE_ENV, raising=False)
    awsfaults.reset()


#: the one tier the tests below start (the campaign's own block: the same tier)
ONE_TIER = fargate.FargateBlock(tiers=[fargate.tier(256, 512)])


@contextmanager
def client_network(tmp_path: Path, name: str, **kw: Any) -> Iterator[Provisioner]:
    """One-tier campaign ``name``'s network and client, released afterwards: 0 left."""
    prov = Provisioner(campaign(name, tiers=TWO_TIERS[:1], **kw), tmp_path, poll_s=0.05)
    prov.acquire()
    try:
        yield prov
    finally:
        prov.release()
    assert not any(counts(name).values())


def test_a_role_just_created_is_waited_for(fresh: MotoServer, tmp_path: Path, faults: Any) -> None:
    """IAM's eventual consistency: for seconds after the execution role is created,
    RegisterTaskDefinition is denied iam:PassRole and RunTask cannot assume the role. Both are
    retried until IAM settles (before: the first refusal aborted the campaign)."""
    with client_network(tmp_path, "nf-iam") as prov:
        st = faults("iam-propagation:pass_s=1.5:assume_s=8")
        (host,) = fargate.acquire_tiers(prov, ONE_TIER)
        assert host.task_arn
        assert st.injected["AccessDeniedException"] >= 1, st.injected
        assert st.injected["InvalidParameterException"] >= 1, st.injected


def test_a_pass_role_denial_that_lasts_names_the_permission(
    fresh: MotoServer, tmp_path: Path, faults: Any
) -> None:
    with client_network(tmp_path, "nf-deny") as prov:
        faults("iam-propagation:pass_s=60")
        with pytest.raises(EnvironmentProblem, match="still refused after 1 s") as err:
            fargate.FargateTiers(prov, ONE_TIER, iam_settle_s=1.0).acquire()
        assert "iam:PassRole" in str(err.value) and "iam:PassRole" in str(err.value.hint)


def test_no_fargate_capacity_is_retried_in_the_other_subnets(
    fresh: MotoServer, tmp_path: Path, faults: Any
) -> None:
    """RunTask places no task ("Capacity is unavailable at this time…") twice: it is asked
    again, round the campaign's subnets (two zones here), and the task runs (before: the
    first answer aborted the campaign). When capacity never comes, the error says where it
    was tried (below)."""
    two = [{"name": n, "instance_type": "t3.micro", "role": "client"} for n in ("c1", "c2")]
    with client_network(tmp_path, "nf-cap", placement="cross-az", fleets=two) as prov:
        st = faults("fargate-capacity:times=2")
        (host,) = fargate.FargateTiers(prov, ONE_TIER, capacity_s=20.0).acquire()
        assert host.task_arn and st.injected["FargateCapacity"] == 2
        assert len(st.task_subnets) == 3 and len(set(st.task_subnets)) == 2, st.task_subnets
        assert st.task_subnets[0] != st.task_subnets[1]


def test_capacity_that_never_comes_says_where_it_was_tried(
    fresh: MotoServer, tmp_path: Path, faults: Any
) -> None:
    with client_network(tmp_path, "nf-nocap") as prov:
        faults("fargate-capacity:times=1000")
        with pytest.raises(EnvironmentProblem, match=r"Capacity is unavailable.*tried \d+ times"):
            fargate.FargateTiers(prov, ONE_TIER, capacity_s=1.0).acquire()
