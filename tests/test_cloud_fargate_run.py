"""`netfleet run examples/fargate-tiers.yaml` offline, shortened: moto's server (its own process,
loopback only) for EC2, ECS and S3; the client instance and each Fargate task backed by a real
lab namespace (the task's shaped like its seed 000 tier); real iperf3 in and out.

moto moves an ECS task towards STOPPED each time it is described unless its state manager keeps
it RUNNING (``set_task_transition``, as in tests/test_cloud_fargate.py); AWS does not."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from netfleet import aws
from netfleet.cloud.aws.acquire import fargate
from netfleet.cloud.aws.acquire.provision import TAG_CAMPAIGN, Provisioner
from netfleet.cloud.aws.provider import TAG_LEASE, AwsProvider, task_host
from netfleet.cloud.aws.release import teardown
from netfleet.cloud.aws.release.fargate_teardown import our_cluster
from netfleet.engines.iperf3 import Iperf3
from netfleet.errors import HostError, SpecError
from netfleet.hosts.provider import HostRequest, Lease
from netfleet.spec import load_spec
from netfleet_sim import fargate as fargate_sim
from netfleet_sim import labs as simlab
from tests import motokit
from tests.motokit import MotoServer
from tests.test_cloud_fargate import KEEP_RUNNING, campaign, set_task_transition
from tests.test_cloud_run import netfleet

moto = motokit.moto  # one moto server for the module

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "fargate-tiers.yaml"
REGION = "eu-west-1"
TWO = [{"cpu": 256, "memory": 512}, {"cpu": 2048, "memory": 4096}]


@pytest.fixture
def fresh(moto: MotoServer) -> Iterator[MotoServer]:
    moto.reset()
    set_task_transition(moto, KEEP_RUNNING)
    aws.client("s3", "us-east-1").create_bucket(Bucket="netfleet-results")
    yield moto
    set_task_transition(moto, None)


def shortened(
    tmp_path: Path, tiers: list[dict[str, int]] = TWO, duration: int = 2, omit: int = 1
) -> Path:
    """Two tiers, a small client, 2 s of traffic after 1 s omitted, in and out, 1 s cooldown."""
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["cloud"]["fleets"][0]["instance_type"] = "c5.large"
    doc["cloud"]["fargate"]["tiers"] = tiers
    test = doc["tests"][0]
    test["params"].update(duration=duration, omit=omit)
    test["matrix"]["server"] = [fargate.tier(**t).name for t in tiers]
    doc["cooldown"] = 1
    path = tmp_path / "fargate-tiers.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_tiers_become_aws_hosts_named_after_the_tier(tmp_path: Path) -> None:
    spec = load_spec(EXAMPLE)
    tasks = {n: h for n, h in spec.hosts.items() if getattr(h, "fargate", None)}
    assert len(tasks) == 10 and tasks["f2048-16g"].machine == "fargate-2048-16384"
    assert all(h.kind == "aws" and h.role == "server" for h in tasks.values())
    assert spec.hosts["client"].machine == "c5.18xlarge"
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["cloud"]["fargate"]["tiers"][3] = {"cpu": 512, "memory": 9216}
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(SpecError, match=r"cloud\.fargate\.tiers\.3.*1024, 2048, 3072, 4096 MiB"):
        load_spec(bad)


def test_plan_prices_the_tasks_per_vcpu_and_gb_hour(moto: MotoServer, tmp_path: Path) -> None:
    """(`backing: sim`: the plan asks only a loopback emulator, as `run` does.)"""
    done = netfleet(tmp_path, "plan", str(EXAMPLE))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "fargate-4096-30720" in done.stdout and "$0.04048/vCPU-h, $0.004445/GB-h" in done.stdout
    assert "10 Fargate tasks in eu-west-1" in done.stdout
    assert "estimated cost (instances + tasks): $" in done.stdout


def test_task_release_checks_the_lease_tag_and_finds_the_task_by_it(
    fresh: MotoServer, tmp_path: Path
) -> None:
    """A task lease stops only a task tagged with its campaign and its own lease id; killed
    before the ARN was journalled, the lease still finds its task by that tag."""
    import asyncio

    c = campaign("nf-lease")
    prov = Provisioner(c, tmp_path, poll_s=0.05)
    try:
        prov.acquire()
        tags = {"f256-512m": {TAG_LEASE: "lease-a"}, "f2048-4g": {TAG_LEASE: "lease-b"}}
        a, b = fargate.FargateTiers(prov, c.fargate, task_tags=tags).acquire()
        where = {"kind": "task", "cluster": "netfleet-nf-lease", "campaign": "nf-lease",
                 "region": "us-east-1", "state_root": str(tmp_path)}  # fmt: skip
        ecs = aws.client("ecs", "us-east-1")

        def status(arn: str) -> str:
            found = ecs.describe_tasks(cluster="netfleet-nf-lease", tasks=[arn])
            return str(found["tasks"][0]["lastStatus"])

        provider = AwsProvider(poll_s=0.05)
        foreign = Lease("lease-x", "aws", "f256-512m", {**where, "id": a.task_arn})
        with pytest.raises(HostError, match="not netfleet's to stop"):
            asyncio.run(provider.release_lease(foreign))
        assert status(a.task_arn) == "RUNNING"
        no_arn = Lease("lease-b", "aws", "f2048-4g", where)  # the ARN never journalled
        assert asyncio.run(provider.release_lease(no_arn)) == "released"
        assert status(b.task_arn) == "STOPPED" and status(a.task_arn) == "RUNNING"
        again = Lease("lease-b", "aws", "f2048-4g", {**where, "id": b.task_arn})
        assert asyncio.run(provider.release_lease(again)) == "gone"
        # backing ssh: the task is a standing iperf3 server at its ENI address
        task = task_host(HostRequest("f256-512m", SimpleNamespace(labels={"x": "y"})), a, 5201, {})
        assert (task.address, task.server_port, task.labels["x"]) == (a.private_ip, 5201, "y")
        assert task.labels["instance_type"] == "fargate-256-512" and task.kind == "standing"
        assert task.serves(Iperf3().server_argv(20001, task.address)) == 5201
        text_server = Iperf3().server_argv(20001, task.address, text=True)
        with pytest.raises(HostError, match=r"Fargate task arn:.*lacks --forceflush"):
            task.serves(text_server)
        with pytest.raises(HostError, match="cannot run 'uname -r' there"):
            asyncio.run(task.run(["uname", "-r"]))
    finally:
        prov.release()
    assert not any(teardown.remaining(aws.client("ec2", "us-east-1"), "nf-lease").values())


@pytest.mark.netns
@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")
def test_fargate_example_end_to_end(fresh: MotoServer, tmp_path: Path) -> None:
    from netfleet.report.cheatsheet import cheatsheet
    from netfleet.units import goodput_ratio

    done = netfleet(tmp_path, "run", str(shortened(tmp_path)))
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    out = done.stdout
    print("\n" + out[out.find("Interval goodput") :])  # the cheat sheet and the cost lines
    assert "fargate: 2 tasks held" in out and "$0.04048/vCPU-h" in out, out[-2000:]
    assert "cost: 1 instances (on-demand) held" in out
    assert "total (instances + tasks): $" in out and "estimated before launch: $" in out
    assert "fargate-2048-4096" in out and "p50÷base" not in out  # AWS advertises no Fargate rate
    # tasks were stopped through their leases: each carries the campaign's and its lease's tag
    ecs = aws.client("ecs", REGION)
    arns = ecs.list_tasks(cluster="netfleet-fargate-tiers", desiredStatus="STOPPED")["taskArns"]
    tasks = ecs.describe_tasks(cluster="netfleet-fargate-tiers", tasks=arns, include=["TAGS"])
    tags = [{t["key"]: t["value"] for t in task["tags"]} for task in tasks["tasks"]]
    assert len(tags) == 2 and all(t[TAG_CAMPAIGN] == "fargate-tiers" and t[TAG_LEASE] for t in tags)
    assert {task["lastStatus"] for task in tasks["tasks"]} == {"STOPPED"}
    left = teardown.remaining(aws.client("ec2", REGION), "fargate-tiers")
    assert not any(left.values()), left
    assert our_cluster(ecs, "fargate-tiers", None) is None
    sim = tmp_path / "cloud" / "fargate-tiers" / "sim"
    assert not sim.exists() or not any(sim.iterdir()), "a sim lab is still up"
    # measured in the lab: each tier at its seed 000 figure x 0.2, each direction on its own
    sheet = {
        (r["instance_type"], r["direction"]): r["avg"] * 1e9
        for r in cheatsheet(tmp_path / "cloud" / "fargate-tiers" / "catalog").records()
    }
    for t in TWO:
        tier = fargate.tier(**t)
        out_bps, in_bps, _ = fargate_sim.figures(tier)
        for direction, rate in (("out", out_bps * 0.2), ("in", in_bps * 0.2)):
            got = sheet[(f"fargate-{tier.cpu}-{tier.memory}", direction)]
            assert abs(got / (rate * goodput_ratio(1500)) - 1) <= 0.15, (tier, direction, got)


@pytest.mark.netns
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")
def test_kill_9_while_measuring_then_destroy_leaves_nothing(
    fresh: MotoServer, tmp_path: Path
) -> None:
    """`netfleet run` with a Fargate tier (sim backing) is SIGKILLed by its PID while iperf3
    runs in the lab; `netfleet cloud destroy` alone must then leave 0 ECS tasks, task
    definitions and clusters, 0 instances, key pairs, security groups, internet gateways, route
    tables, subnets and VPCs of the campaign (counted through the API) — and no lab namespace
    or process. The namespaces the kill left are checked to exist first; the iperf3 processes
    seen at the kill may also end on their own (the client dies of SIGPIPE writing to its killed
    parent, the one-off server then ends: failed CI once when checked after the kill), so they
    are recorded before it and checked gone after the destroy."""
    from netfleet.lab import netns

    # long enough that the killed run's iperf3 processes are surely still running when checked
    # (at 3 s they could end on their own between the kill and the check: failed CI once)
    spec = shortened(tmp_path, TWO[:1], duration=15, omit=0)
    results = tmp_path / "results"
    sim = tmp_path / "cloud" / "fargate-tiers" / "sim"
    lab: str | None = None
    spaces: list[str] = []
    seen: list[tuple[int, str]] = []
    try:  # a failed assertion must not leave the lab behind (a passing run has none left)
        proc = netfleet(tmp_path, "run", str(spec), "-r", str(results),
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        try:
            deadline = time.monotonic() + 300  # a wait bound, not a speed claim
            while True:  # measuring: iperf3 runs in the task's namespace and in the client's
                assert time.monotonic() < deadline and proc.poll() is None, "never measured"
                lab = next((d.name for d in sim.iterdir()), None) if sim.is_dir() else None
                spaces = [f"nf-{lab}-f256-512m", f"nf-{lab}-h1"] if lab else []
                # one listing a namespace, read once: the PIDs kept are those the check saw
                # (listed twice, the first listing could be empty and the second not: CI once)
                listed = [netns.pids(ns) for ns in spaces]
                seen = [(pid, _started(pid)) for pids in listed for pid in pids]
                if spaces and all(listed):
                    break
                time.sleep(0.1)
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        assert lab is not None
        _destroy_after_the_kill(tmp_path, sim, spaces, lab, seen)
    finally:
        for leftover in list(sim.iterdir()) if sim.is_dir() else []:
            simlab.take_down(leftover)


def _started(pid: int) -> str:
    """A process's start time (clock ticks since boot), "" once it is gone: a PID plus its start
    time names one process even when the PID is reused."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def _destroy_after_the_kill(
    tmp_path: Path, sim: Path, spaces: list[str], lab: str, left_pids: list[tuple[int, str]]
) -> None:
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert all(ns in listed for ns in spaces), listed
    counts = teardown.remaining(aws.client("ec2", REGION), "fargate-tiers")
    assert left_pids and counts["tasks"] == 1 and counts["instances"] == 1, counts
    done = netfleet(tmp_path, "cloud", "destroy", "fargate-tiers",
                    "--state-dir", str(tmp_path / "cloud"))  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "sim-labs=0" in done.stdout
    counts = teardown.remaining(aws.client("ec2", REGION), "fargate-tiers")
    assert set(counts) >= {"tasks", "task-definitions", "clusters", "instances", "key-pairs",
                           "security-groups", "internet-gateways", "route-tables", "subnets",
                           "vpcs"}  # fmt: skip
    assert not any(counts.values()), counts
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert f"nf-{lab}-" not in namespaces and not any(sim.iterdir())
    deadline = time.monotonic() + 5  # the killed run's iperf3 processes: stopped (and reaped)
    while alive := [p for p, born in left_pids if born and _started(p) == born]:
        assert time.monotonic() < deadline, f"processes left running: {alive}"
        time.sleep(0.05)


@pytest.mark.netns
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")
def test_a_task_is_measured_as_a_standing_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`backing: ssh` with Fargate tiers: on AWS the task's container runs its own iperf3 server
    (`fargate.server_command`) and one cannot exec into it. Offline, a lab namespace plays the
    task, its server started by this test exactly as the container's command; the client is a
    lab host (on AWS the EC2 instance over SSH — tests/test_ssh.py runs SSH clients). The whole
    runner runs (preflight, scheduler, session, engine, store) with the task as the host
    `task_host` builds from a TierHost: nothing is run or probed on it, no process of it is
    journalled, each run's server side comes from `--get-server-output`, and the server is
    still running afterwards (its owner, the task, stops it). Not tested offline: a real task's
    image, ENI and security group."""
    from netfleet.hosts import registry
    from netfleet.hosts.netns import NetnsProvider
    from netfleet.units import goodput_ratio
    from tests.labkit import lab_up, run, wait_listening, write_spec

    body = """\
        subnet: 198.18.53.0/24
        hosts:
          cli: {}
          task: {out: {rate: 40mbit}, in: {rate: 20mbit}}
    """
    with lab_up(tmp_path, body, prefix="sv") as (name, state):
        ns = f"nf-{name}-task"
        server = subprocess.Popen(
            ["ip", "netns", "exec", ns, *fargate.server_command(5201)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            wait_listening(ns, 5201, proc=server)
            tier = fargate.tier(256, 512)
            arn = "arn:aws:ecs:eu-west-1:123456789012:task/netfleet-standing/0a1b"
            labels = {"instance_type": "fargate-256-512", "task_arn": arn}

            class Provider(NetnsProvider):
                def build(self, request: HostRequest) -> Any:
                    if request.name != tier.name:
                        return super().build(request)
                    address = super().build(request).address  # the lab's: on AWS, the ENI's
                    th = fargate.TierHost(tier.name, tier, arn, address, labels)
                    return task_host(request, th, 5201, {"backing": "ssh"})

            monkeypatch.setitem(registry._registered, "netns", Provider)
            monkeypatch.delitem(registry._instances, "netns", raising=False)
            spec = write_spec(tmp_path, f"""\
                campaign: standing
                hosts:
                  client: {{kind: netns, lab: {name}, host: cli}}
                  {tier.name}: {{kind: netns, lab: {name}, host: task}}
                tests:
                  - name: tiers
                    engine: iperf3
                    client: client
                    server: {tier.name}
                    subject: server
                    params: {{duration: 1, interval: 0.5}}
                    matrix: {{direction: [in, out]}}
            """)  # fmt: skip
            result = run(spec, tmp_path / "results", state)
            assert server.poll() is None  # not netfleet's to stop
        finally:
            server.terminate()
            server.wait(10)
    assert result.ok == 2, [e.reason for e in result.envelopes]
    for env in result.envelopes:
        assert env.server.kind == "standing" and env.server.labels["task_arn"] == arn
        assert env.engine.server_argv == ["iperf3", "--server", "--json", "--port", "5201"]
        assert env.result is not None and env.result["server_output_json"]["end"]
        got = env.result["end"]["sum_received"]["bits_per_second"]
        rate = {"out": 40e6, "in": 20e6}[env.direction] * goodput_ratio(1500)
        assert abs(got / rate - 1) < 0.15, (env.direction, got)
    journal = next((tmp_path / "results").rglob("standing.jsonl")).read_text().splitlines()
    procs = [r for r in map(json.loads, journal) if r["event"] == "process"]
    assert procs and {(r["host"], r["role"]) for r in procs} == {("client", "client")}
