"""`netfleet run` on AWS, offline: moto's server (its own process, loopback only) for EC2 and S3,
each instance backed by a real lab namespace shaped from its advertised figures, real iperf3.

Where moto lacks a behaviour the tests say so: moto cannot set an instance's state reason, so a
spot reclaim is played with ``netfleet_sim.spot.reclaim`` (a tag the sim reads, then a real
TerminateInstances); the real DescribeInstances shape is checked with botocore's Stubber."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from botocore.stub import Stubber

from netfleet import aws
from netfleet.cloud import owner
from netfleet.cloud.aws.campaign import CloudSpec
from netfleet.cloud.aws.measure import spot
from netfleet.cloud.aws.plan import billing, costs, prices
from netfleet.cloud.aws.provider import TAG_LEASE, AwsProvider
from netfleet.cloud.aws.release import teardown
from netfleet.cloud.bootstrap import hostkeys
from netfleet.errors import HostError, SpecError
from netfleet.hosts.provider import Lease
from netfleet.spec import load_spec
from netfleet_sim import spot as sim_spot
from tests import motokit
from tests.motokit import MotoServer

moto = motokit.moto  # one moto server for the module

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")


@pytest.fixture
def fresh(moto: MotoServer) -> MotoServer:
    moto.reset()
    aws.client("s3", "us-east-1").create_bucket(Bucket="netfleet-results")
    return moto


def shortened(example: str, tmp_path: Path, **params: Any) -> Path:
    """The example with a few seconds of traffic per run (the full run is by hand)."""
    doc = yaml.safe_load((EXAMPLES / example).read_text())
    for t in doc["tests"]:
        t["params"].update({"duration": 1, "omit": 0, **params})
        t["matrix"].pop("direction", None)  # out only: the full run by hand does both
    doc["cooldown"] = 0
    path = tmp_path / example
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def one_client(tmp_path: Path, duration: float) -> Path:
    """aws-credits cut to the server and r4.large: one run of ``duration`` seconds."""
    doc = yaml.safe_load((EXAMPLES / "aws-credits.yaml").read_text())
    doc["cloud"]["fleets"] = doc["cloud"]["fleets"][:2]
    doc["tests"][0]["matrix"]["client"] = ["r4-large"]
    doc["tests"][0]["params"].update(duration=duration, parallel=1)
    path = tmp_path / "one.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def netfleet(tmp_path: Path, *args: str, **popen: Any) -> Any:
    env = {
        **os.environ,
        "NETFLEET_CLOUD_DIR": str(tmp_path / "cloud"),
        "NETFLEET_S3_STATE": str(tmp_path / "s3state"),
        "COLUMNS": "250",
    }
    argv = [sys.executable, "-m", "netfleet", *args]
    if popen:
        return subprocess.Popen(argv, env=env, text=True, **popen)
    return subprocess.run(argv, env=env, text=True, capture_output=True, timeout=240)


def left(campaign: str) -> dict[str, int | None]:
    return teardown.remaining(aws.client("ec2", "us-east-1"), campaign)


def assert_nothing_left(campaign: str, tmp_path: Path, said: str = "") -> None:
    """Nothing of ``campaign`` on moto, no sim lab; ``said``: the run's output, shown when
    something is left (its release notes say what failed)."""
    counts = left(campaign)
    assert not any(counts.values()), f"{counts}\n{said[-4000:]}"
    sim = tmp_path / "cloud" / campaign / "sim"
    assert not sim.exists() or not any(sim.iterdir()), "a sim lab is still up"


# -- the spec block (no AWS needed) --------------------------------------------------------------
def test_fleets_become_aws_hosts_carrying_the_cloud_block(tmp_path: Path) -> None:
    spec = load_spec(EXAMPLES / "aws-cheatsheet.yaml")
    aws_hosts = {n: h for n, h in spec.hosts.items() if h.kind == "aws"}
    assert sorted(aws_hosts) == ["c5-large", "m5-large", "srv", "t3-micro"]
    assert aws_hosts["srv"].role == "server" and aws_hosts["srv"].cloud.campaign == spec.campaign
    doc = yaml.safe_load((EXAMPLES / "aws-credits.yaml").read_text())
    doc["cloud"]["fleets"][1]["count"] = 2
    doc["tests"][0]["matrix"]["client"] = ["r4-large-1", "r4-large-2", "r4-xlarge"]
    path = tmp_path / "two.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert {"r4-large-1", "r4-large-2"} <= set(load_spec(path).hosts)


@pytest.mark.parametrize(
    ("change", "expect"),
    [
        (lambda d: d["hosts"].update(srv={"kind": "local"}), "also under hosts"),
        (
            lambda d: (
                d.pop("cloud") and d["hosts"].update(x={"kind": "aws", "instance_type": "m5.large"})
            ),
            "no `cloud:` block",
        ),
        (lambda d: d.update(campaign="Big_Name"), "names cloud resources"),
    ],
)
def test_bad_cloud_specs_name_the_field(tmp_path: Path, change: Any, expect: str) -> None:
    doc = yaml.safe_load((EXAMPLES / "aws-cheatsheet.yaml").read_text())
    doc.setdefault("hosts", {})
    change(doc)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(SpecError) as err:
        load_spec(path)
    assert expect in str(err.value)


def test_run_refuses_above_the_cost_guard_before_launching(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The guard needs no AWS at all: it refuses before the provider is asked for anything
    (a loopback endpoint where nothing listens: backing sim refuses any other)."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    res = netfleet(
        tmp_path, "run", str(EXAMPLES / "aws-cheatsheet.yaml"), "-r", str(tmp_path / "r"),
        "--max-cost", "0.001",
    )  # fmt: skip
    assert res.returncode == 2, res.stdout + res.stderr
    assert "exceeds --max-cost" in res.stderr and "4 instances" in res.stdout
    assert not (tmp_path / "cloud").exists()  # nothing journaled, nothing launched


@pytest.mark.parametrize(
    ("example", "where"),
    [
        ("aws-cheatsheet.yaml", "4 instances in us-east-1,"),
        ("aws-cross-region.yaml", "4 instances in us-east-1 (3), eu-west-1 (1),"),
    ],
)
def test_plan_prints_cost_and_instance_count(
    moto: MotoServer, tmp_path: Path, example: str, where: str
) -> None:
    """(`backing: sim`: the plan asks only a loopback emulator, as `run` does.)"""
    res = netfleet(tmp_path, "plan", str(EXAMPLES / example))
    assert res.returncode == 0, res.stderr
    assert where in " ".join(res.stdout.split()) and "estimated cost: $" in res.stdout


def test_plan_without_credentials_says_the_vcpus_are_unknown(tmp_path: Path) -> None:
    """Issue 36.9: "0 vCPUs at once" beside "vCPUs not estimated" when no instance type data
    could be read: now "vCPUs unknown"."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    none = str(tmp_path / "none")
    env.update(AWS_CONFIG_FILE=none, AWS_SHARED_CREDENTIALS_FILE=none,
               AWS_EC2_METADATA_DISABLED="true", NETFLEET_CLOUD_DIR=str(tmp_path / "cloud"),
               COLUMNS="250", AWS_ENDPOINT_URL="http://127.0.0.1:9")  # fmt: skip
    # (backing: sim plans only against loopback: an endpoint where nothing answers)
    argv = [sys.executable, "-m", "netfleet", "plan", str(EXAMPLES / "aws-cheatsheet.yaml")]
    res = subprocess.run(argv, env=env, text=True, capture_output=True, timeout=240)
    out = " ".join(res.stdout.split())
    assert res.returncode == 0, res.stderr
    assert "vCPUs not estimated" in out
    assert "vCPUs unknown (no instance type data)" in out and "0 vCPUs" not in out


# -- spot ----------------------------------------------------------------------------------------
@pytest.fixture
def stubbed_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stubber answers every call: dummy credentials, and no endpoint but loopback."""
    for k, v in {"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x"}.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("NETFLEET_AWS_LOOPBACK_ONLY", "1")


@pytest.mark.usefixtures("stubbed_env")
def test_spot_reclaim_is_told_from_other_ends_real_response_shape() -> None:
    """AWS's DescribeInstances item after a reclaim (Stubber: moto cannot set StateReason)."""
    ec2 = aws.client("ec2", "us-east-1", endpoint_url="http://127.0.0.1:1")
    item = {
        "InstanceId": "i-0abc",
        "State": {"Code": 48, "Name": "terminated"},
        "StateReason": {
            "Code": "Server.SpotInstanceTermination",
            "Message": "Server.SpotInstanceTermination: Spot instance termination",
        },
    }
    with Stubber(ec2) as stub:
        stub.add_response("describe_instances", {"Reservations": [{"Instances": [item]}]})
        got: list[tuple[str, str]] = []
        spot.Watcher(ec2, ["i-0abc"], lambda i, r: got.append((i, r)), sim=False).poll()
    assert got and got[0][0] == "i-0abc" and got[0][1].startswith(spot.RECLAIMED)
    user = {**item, "StateReason": {"Code": "Client.UserInitiatedShutdown"}}
    assert spot.reclaim_reason(user) is None
    # the sim's tag is read only by a sim watcher
    tagged = {**user, "Tags": [{"Key": spot.SIM_REASON_TAG, "Value": spot.SPOT_CODE}]}
    assert spot.reclaim_reason(tagged) is None and spot.reclaim_reason(tagged, sim=True)


@pytest.mark.usefixtures("stubbed_env")
def test_spot_price_is_the_latest_per_type_real_response_shape() -> None:
    ec2 = aws.client("ec2", "us-east-1", endpoint_url="http://127.0.0.1:1")
    t0 = dt.datetime(2026, 11, 23, 10, tzinfo=dt.UTC)
    hist = [
        {"InstanceType": "r4.large", "SpotPrice": "0.0301", "Timestamp": t0,
         "ProductDescription": "Linux/UNIX", "AvailabilityZone": "us-east-1a"},
        {"InstanceType": "r4.large", "SpotPrice": "0.0350", "Timestamp": t0 + dt.timedelta(hours=1),
         "ProductDescription": "Linux/UNIX", "AvailabilityZone": "us-east-1a"},
    ]  # fmt: skip
    with Stubber(ec2) as stub:
        stub.add_response("describe_spot_price_history", {"SpotPriceHistory": hist})
        found = spot.current_prices(ec2, "us-east-1a", ["r4.large"])
    assert found == {"r4.large": 0.035}
    cs = CloudSpec(campaign="x", market="spot", fleets=[{"instance_type": "r4.large", "count": 2}])
    priced = costs.plan(cs, prices.load(None), 52, {"us-east-1": found})
    on_demand = costs.plan(cs.model_copy(update={"market": "on-demand"}), prices.load(None), 52)
    assert priced.estimate.usd is not None and on_demand.estimate.usd is not None
    extra = billing.total(priced.lines)  # IPv4 + root volumes: the same in both markets
    assert extra is not None and extra == billing.total(on_demand.lines)
    assert priced.estimate.usd == pytest.approx(0.035 * 2 * 1.0 + extra, rel=1e-3)
    assert priced.estimate.usd < on_demand.estimate.usd


def test_release_leaves_an_instance_without_the_lease_tag_alone(fresh: MotoServer) -> None:
    ec2 = aws.client("ec2", "us-east-1")
    ami = ec2.describe_images()["Images"][0]["ImageId"]
    tags = [{"Key": "netfleet:campaign", "Value": "nf-x"}, {"Key": TAG_LEASE, "Value": "other"}]
    iid = ec2.run_instances(
        ImageId=ami, InstanceType="t3.micro", MinCount=1, MaxCount=1,
        TagSpecifications=[{"ResourceType": "instance", "Tags": tags}],
    )["Instances"][0]["InstanceId"]  # fmt: skip
    lease = Lease("mine", "aws", "h", {"kind": "instance", "campaign": "nf-x",
                                       "region": "us-east-1", "state_root": "/nonexistent",
                                       "id": iid})  # fmt: skip
    import asyncio

    with pytest.raises(HostError, match="not netfleet's"):
        asyncio.run(AwsProvider().release_lease(lease))
    state = ec2.describe_instances(InstanceIds=[iid])["Reservations"][0]["Instances"][0]
    assert state["State"]["Name"] == "running"


# -- end to end (root: lab namespaces) -----------------------------------------------------------
@ROOT
@pytest.mark.netns
def test_cheatsheet_example_end_to_end(fresh: MotoServer, tmp_path: Path) -> None:
    res = netfleet(tmp_path, "run", str(shortened("aws-cheatsheet.yaml", tmp_path)))
    out = res.stdout
    assert res.returncode == 0, out + res.stderr
    assert "3 of 3 runs ok" in out
    # the cheat sheet: one row per type and direction, measured ÷ advertised
    for itype in ("t3.micro", "m5.large", "c5.large"):
        assert itype in out
    assert "p50÷base" in out and "× 0.05: the simulated lab's rate scale" in out
    assert "cost: 4 instances (on-demand)" in out and "estimated cost: $" in out
    # the vCPU quota check ran before launch and says it could not check (moto has no EC2
    # quotas): a note, not a refusal
    assert "vCPU quota L-1216C47A in us-east-1 not checked" in out
    # the cross-checks ran and say what they could not check (moto keeps no metrics and
    # rejects enaSupport): never a silent pass
    assert "Cross-checks: ENA per instance, CloudWatch bytes vs iperf3" in out
    assert "NetworkOut" in out and "NetworkIn" in out and "no data" in out
    assert "agrees: CloudWatch" not in out
    # results went to moto's S3
    listed = aws.client("s3", "us-east-1").list_objects_v2(Bucket="netfleet-results")
    keys = [o["Key"] for o in listed.get("Contents", [])]
    assert sum(".json" in k and "/d=" in k for k in keys) == 3, keys
    assert_nothing_left("aws-cheatsheet", tmp_path)


@ROOT
@pytest.mark.netns
def test_credits_example_on_spot_end_to_end(fresh: MotoServer, tmp_path: Path) -> None:
    """Also: `netfleet run` reaps this installation's expired leftovers (by tag) before
    launching, and leaves another installation's alone (issue 24 item 2)."""
    past = (dt.datetime.now(dt.UTC) - dt.timedelta(hours=3)).strftime("%Y-%m-%dT%H:%M:%SZ")
    me = owner.installation(tmp_path / "cloud")  # the run's state directory
    for campaign, who in (("nf-old", me), ("nf-foreign", "0123456789abcdef")):
        tags = [{"Key": "netfleet:campaign", "Value": campaign},
                {"Key": "netfleet:installation", "Value": who},
                {"Key": "netfleet:expires-at", "Value": past}]  # fmt: skip
        aws.client("ec2", "us-east-1").create_vpc(
            CidrBlock="10.99.0.0/16", TagSpecifications=[{"ResourceType": "vpc", "Tags": tags}]
        )
        assert left(campaign)["vpcs"] == 1
    res = netfleet(tmp_path, "run", str(shortened("aws-credits.yaml", tmp_path, parallel=1)))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "2 of 2 runs ok" in res.stdout and "r4.xlarge" in res.stdout
    assert "spot: current spot price" in res.stdout and "cost: 3 instances (spot)" in res.stdout
    assert_nothing_left("aws-credits", tmp_path)
    assert not any(left("nf-old").values())
    assert left("nf-foreign")["vpcs"] == 1  # not this installation's: only reap --all-owners


def _wait_for_instances(campaign: str, n: int, proc: Any, timeout: float = 300) -> list[dict]:
    ec2 = aws.client("ec2", "us-east-1")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        f = [{"Name": "tag:netfleet:campaign", "Values": [campaign]},
             {"Name": "instance-state-name", "Values": ["running"]}]  # fmt: skip
        resp = ec2.describe_instances(Filters=f)
        found = [i for r in resp["Reservations"] for i in r["Instances"]]
        if len(found) >= n:
            return found
        time.sleep(0.2)
    raise AssertionError(f"{campaign}: {n} instances did not come up")


def _wait_for_run(results: Path, proc: Any) -> None:
    """Until the campaign journal says a run started (a wait bound, not a speed claim)."""
    deadline = time.monotonic() + 300
    journal = None
    while journal is None or "run_started" not in journal.read_text():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.2)
        journal = next(results.rglob("aws-credits.jsonl"), None)


def _envelopes(root: Path) -> list[dict]:
    found = [p for p in root.rglob("*.json*") if "/d=" in str(p)]
    return [json.loads(gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else p.read_text())
            for p in found]  # fmt: skip


@ROOT
@pytest.mark.netns
def test_spot_reclaim_mid_run_is_interrupted_not_failed(fresh: MotoServer, tmp_path: Path) -> None:
    # the reclaim ends the run: a long one costs nothing and leaves a busy machine's watcher
    # (DescribeInstances every second, in a thread) time to see it before the run's own end
    spec = one_client(tmp_path, 15)
    results = tmp_path / "results"
    proc = netfleet(tmp_path, "run", str(spec), "-r", str(results),
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    try:
        running = _wait_for_instances("aws-credits", 2, proc)
        client = next(
            i for i in running if {"Key": "netfleet:campaign", "Value": "aws-credits"} in i["Tags"]
            and i["InstanceType"] == "r4.large"
        )  # fmt: skip
        _wait_for_run(results, proc)
        time.sleep(1.5)  # mid-run
        sim_spot.reclaim(aws.client("ec2", "us-east-1"), client["InstanceId"])
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 3, out + err  # not ok, but not a failure either:
    (env,) = _envelopes(results)
    assert env["status"] == "interrupted", env["reason"]
    assert env["reason"].startswith("interrupted by spot reclaim"), env["reason"]
    # labelled from DescribeInstanceTypes: "Up to" → burstable (the adaptive stop's default)
    labels = env["client"]["labels"]
    assert labels["instance_type"] == "r4.large" and labels["burstable"] == "true"
    assert labels["network_performance"].startswith("Up to") and labels["baseline_gbps"] == "0.75"
    assert env["server"]["labels"]["burstable"] == "false"  # c5n.18xlarge: "100 Gigabit"
    assert_nothing_left("aws-credits", tmp_path)


@ROOT
@pytest.mark.netns
def test_kill_9_then_destroy_and_resume_release_all(fresh: MotoServer, tmp_path: Path) -> None:
    """SIGKILL skips every `finally`: `netfleet cloud destroy` removes the AWS resources from the
    cloud journal alone and takes the sim lab down from the cloud state directory (the killed
    run's PID is checked to be dead first), and the next `netfleet run --resume` settles the
    dead session's leases (instances, network, lab: all gone) before it acquires its own, and
    releases those at its end."""
    spec = one_client(tmp_path, 1)
    results = tmp_path / "results"
    proc = netfleet(tmp_path, "run", str(spec), "-r", str(results),
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        _wait_for_instances("aws-credits", 2, proc)
        sim = tmp_path / "cloud" / "aws-credits" / "sim"
        deadline = time.monotonic() + 300
        while not (sim.exists() and any(sim.iterdir())):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.2)
        time.sleep(0.5)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert left("aws-credits")["instances"] == 2
    (lab,) = [d.name for d in sim.iterdir()]
    # the AWS side from the cloud intent journal alone, the lab from the cloud state dir …
    res = netfleet(tmp_path, "cloud", "destroy", "aws-credits",
                   "--state-dir", str(tmp_path / "cloud"))  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    assert not any(left("aws-credits").values())
    assert_nothing_left("aws-credits", tmp_path)
    assert f"nf-{lab}-" not in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                              text=True).stdout  # fmt: skip
    # … and the next run settles every lease the dead session left open
    res = netfleet(tmp_path, "run", "--resume", str(spec), "-r", str(results))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "left acquired" in res.stdout + res.stderr
    assert_nothing_left("aws-credits", tmp_path)


def _terminated(proc: Any) -> tuple[str, str]:
    """SIGTERM ``proc`` and its output once it exits (killed after 120 s: a release hung)."""
    try:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
        return out, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@ROOT
@pytest.mark.netns
def test_sigterm_mid_run_releases_everything(fresh: MotoServer, tmp_path: Path) -> None:
    results = tmp_path / "results"
    proc = netfleet(tmp_path, "run", str(one_client(tmp_path, 5)), "-r", str(results),
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    try:
        _wait_for_run(results, proc)
    finally:
        out, err = _terminated(proc)
    assert proc.returncode == 130, out + err
    assert_nothing_left("aws-credits", tmp_path)


@ROOT
@pytest.mark.netns
def test_sigterm_while_launching_releases_what_was_launched(
    fresh: MotoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NETFLEET_FAULT_AT sends SIGTERM right after the first RunInstances: the pool releases
    the instance and the network the half-done acquire recorded, and the run exits 130."""
    monkeypatch.setenv("NETFLEET_PLUGINS", motokit.KILL_POINTS["NETFLEET_PLUGINS"])
    monkeypatch.setenv("NETFLEET_FAULT_AT", "after:instance")
    monkeypatch.setenv("NETFLEET_FAULT_SIGNAL", "TERM")
    res = netfleet(tmp_path, "run", str(one_client(tmp_path, 1)), "-r", str(tmp_path / "r"))
    assert res.returncode == 130, res.stdout + res.stderr
    assert "interrupted: 0 of 1 runs" in res.stderr
    assert_nothing_left("aws-credits", tmp_path, res.stdout + res.stderr)


@ROOT
@pytest.mark.netns
def test_sigterm_while_run_instances_is_in_flight_releases_it(
    fresh: MotoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGTERM while RunInstances has not answered yet (the ``slow-launch`` fault holds its
    answer; the instance exists but a lookup by tag does not list it yet): the acquire waits
    for the launch to answer and the pool terminates the instance by its id, then the network;
    the run exits 130 and leaves nothing, with no `cloud destroy`."""
    faults_log = tmp_path / "faults.json"
    monkeypatch.setenv("NETFLEET_PLUGINS", motokit.KILL_POINTS["NETFLEET_PLUGINS"])
    monkeypatch.setenv("NETFLEET_AWS_FAULTS", "slow-launch")
    monkeypatch.setenv("NETFLEET_AWS_FAULTS_LOG", str(faults_log))
    proc = netfleet(tmp_path, "run", str(one_client(tmp_path, 1)), "-r", str(tmp_path / "r"),
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not faults_log.exists() or "RunInstances.held" not in faults_log.read_text():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "RunInstances was never called"
            time.sleep(0.1)
    finally:
        out, err = _terminated(proc)  # the launch is in flight: its answer is held
    assert proc.returncode == 130, out + err
    assert "interrupted: 0 of 1 runs" in err
    assert_nothing_left("aws-credits", tmp_path, out + err)


# -- SSH with the pinned host key: readiness ------------------------------------------------------
@ROOT
@pytest.mark.netns
@pytest.mark.skipif(not os.access("/usr/sbin/sshd", os.X_OK), reason="needs openssh-server")
def test_ssh_readiness_needs_the_pinned_host_key_and_cloud_init(tmp_path: Path) -> None:
    """`backing: ssh` readiness against a real OpenSSH server in a lab namespace, playing an
    instance that is running but still booting: its sshd starts late and presents the host key
    the cloud path generated (injected through user-data on EC2); cloud-init's marker comes last.
    The wait is refused until sshd starts, then waits for the marker, then is ready; a
    different host key is refused at once (not trusted); a timeout names the instance and what
    it was still waiting for."""
    from concurrent.futures import ThreadPoolExecutor

    from netfleet.cloud.bootstrap.ready import wait_ready
    from netfleet.errors import EnvironmentProblem
    from tests.sshdkit import KeyPair
    from tests.sshlab import ssh_lab

    with ssh_lab(tmp_path, ["vm"]) as fleet:
        pair = hostkeys.generate("vm")  # what Provisioner.launch makes per instance
        hostkeys.write_private(tmp_path / "cloud_host_key", pair)
        fleet.host_keys["vm"] = KeyPair(tmp_path / "cloud_host_key", pair.public_openssh)
        fleet.stop("vm")  # running, but sshd is not up yet
        pinned = tmp_path / "campaign_known_hosts"
        pinned.write_text(hostkeys.known_hosts_line(fleet.addresses["vm"], pair.public_openssh))
        marker = tmp_path / "ready"  # what the user-data's last command writes

        def ready(timeout_s: float) -> Any:
            async def wait() -> list[str]:
                # a login on a busy machine may take seconds: at 2 s, one timed out between the
                # refusals and the marker would add a wait for sshd to what was waited for
                h = lab_vm(fleet, pinned, 10)
                try:
                    return await wait_ready(h, "i-0feed", marker=str(marker), timeout_s=timeout_s,
                                            first_delay=0.1, max_delay=0.3)  # fmt: skip
                finally:
                    await h.close()

            return lambda: fleet.run(wait)

        def answers() -> bool:  # sshd is up: an independent login runs a command
            async def probe() -> bool:
                h = lab_vm(fleet, pinned, 10)
                try:
                    return (await h.run(["true"], timeout=10)).returncode == 0
                except HostError:
                    return False
                finally:
                    await h.close()

            return fleet.run(probe)

        with ThreadPoolExecutor(1) as pool:
            waiting = pool.submit(ready(40))
            time.sleep(0.5)
            fleet.start("vm")
            up_by = time.monotonic() + 20
            while not answers():  # on a loaded machine sshd takes its time
                assert time.monotonic() < up_by, "sshd never answered"
                time.sleep(0.2)
            time.sleep(3)  # the waiter (every 0.3 s) sees sshd answer and the marker missing
            assert not waiting.done()  # sshd answers with the pinned key; cloud-init is not done
            marker.touch()
            seen = waiting.result(timeout=40)
        assert len(seen) == 3 and seen[0].startswith("sshd to answer") and "refused" in seen[0]
        assert seen[1].startswith("cloud-init to finish") and seen[2] == "ready", seen
        marker.unlink()
        msg = (
            r"instance i-0feed \(vm\) at 198\.18\.60\.\d+ is not ready after 0\.5 s: still waiting"
        )
        with pytest.raises(EnvironmentProblem, match=msg + " for cloud-init to finish"):
            ready(0.5)()
        fleet.stop("vm")
        with pytest.raises(EnvironmentProblem, match=msg + " for sshd to answer"):
            ready(0.5)()
        other = hostkeys.generate("impostor")
        hostkeys.write_private(tmp_path / "other_key", other)
        fleet.host_keys["vm"] = KeyPair(tmp_path / "other_key", other.public_openssh)
        fleet.start("vm")
        marker.touch()
        t0 = time.monotonic()
        with pytest.raises(HostError, match=r"not trusted.*CHANGED"):
            ready(20)()
        assert time.monotonic() - t0 < 5  # refused at once, not retried until the timeout


def lab_vm(fleet: Any, pinned: Path, connect_timeout: float) -> Any:
    """The lab's sshd ``vm`` as an instance reached with the campaign's pinned known_hosts."""
    from netfleet.hosts.ssh import SshHost

    return SshHost(
        name="vm", address=fleet.addresses["vm"], user="root", key=str(fleet.client_key.private),
        known_hosts=str(pinned), connect_timeout=connect_timeout,
    )  # fmt: skip


@ROOT
@pytest.mark.netns
@pytest.mark.skipif(not os.access("/usr/sbin/sshd", os.X_OK), reason="needs openssh-server")
def test_a_failed_user_data_command_is_reported_at_once(tmp_path: Path) -> None:
    """The user-data's trap wrote the failing command (``userdata.FAILED_MARKER``): the
    readiness wait ends at once naming it and its exit status (before: it waited out its
    900 s, billed, "still waiting for cloud-init to finish")."""
    from netfleet.cloud.bootstrap.ready import wait_ready
    from netfleet.errors import EnvironmentProblem
    from tests.sshlab import ssh_lab

    with ssh_lab(tmp_path, ["vm"]) as fleet:
        pinned = tmp_path / "known_hosts"
        pinned.write_text(fleet.sshd["vm"].known_hosts_line + "\n")
        failed = tmp_path / "failed"
        failed.write_text("apt-get install -y sockperf (exit 100)\n")

        async def wait() -> list[str]:
            h = lab_vm(fleet, pinned, 5)
            try:
                return await wait_ready(h, "i-0feed", marker=str(tmp_path / "ready"),
                                        failed_marker=str(failed), timeout_s=60)  # fmt: skip
            finally:
                await h.close()

        t0 = time.monotonic()
        with pytest.raises(EnvironmentProblem, match=r"i-0feed.*user-data failed: apt-get "
                           r"install -y sockperf \(exit 100\)"):  # fmt: skip
            fleet.run(wait)
        assert time.monotonic() - t0 < 30
