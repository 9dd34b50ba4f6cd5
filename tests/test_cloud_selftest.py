"""``netfleet cloud selftest`` (issue 35): the smallest campaign that touches every call a study
makes, step by step, leaving nothing — against moto's server on loopback (``tests/motokit.py``),
the instances backed by lab namespaces (``backing: sim``, ``netfleet_sim``), IAM enforced with
exactly docs/iam-policy.json (``tests/test_cloud_iam.py``), under the fault profiles
(``netfleet_sim.awsfaults``) and killed with SIGKILL mid-way (``tests/killkit.py``).

Each selftest is a real ``netfleet`` subprocess; its report is read from ``--format json``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from netfleet import aws
from netfleet.api._selftest import CAMPAIGN, STEPS
from netfleet.cloud.aws.release import teardown
from netfleet.errors import ExitStatus, InputError
from netfleet_sim import awsfaults
from tests import killkit, motokit
from tests.motokit import KILL_POINTS, MotoServer
from tests.test_cloud_iam import POLICY, _admin_counts, _auth, as_user, moto, without

__all__ = ["as_user", "moto"]  # the IAM-enforced moto server of tests/test_cloud_iam.py
ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")


def selftest(tmp_path: Path, env: dict[str, str] | None = None, *args: str, **popen: Any) -> Any:
    """``netfleet cloud selftest --backing sim`` (2 s of iperf3, JSON report) as a subprocess,
    with ``env`` (default this process's: moto's) and its own cloud state directory."""
    argv = [
        sys.executable,
        "-m",
        "netfleet",
        "cloud",
        "selftest",
        "--backing",
        "sim",
        "--seconds",
        "2",
        "-r",
        str(tmp_path / "results"),
        "--format",
        "json",
        *args,
    ]
    scratch = tmp_path / "tmp"  # what the selftest puts in $TMPDIR: kept in the test's own
    scratch.mkdir(exist_ok=True)
    full = {
        **(env or os.environ),
        "TMPDIR": str(scratch),
        "NETFLEET_CLOUD_DIR": str(tmp_path / "cloud"),
        "NETFLEET_S3_STATE": str(tmp_path / "s3state"),  # an S3 root's local journal
        "COLUMNS": "250",
    }
    full = motokit.bytecode_env(full)
    if popen:
        return subprocess.Popen(argv, env=full, text=True, **popen)
    return subprocess.run(argv, env=full, text=True, capture_output=True, timeout=400)


def steps_of(res: Any) -> dict[str, dict[str, Any]]:
    """The report's steps by name (``--format json``)."""
    doc = json.loads(res.stdout)
    return {row["name"]: row for row in doc["rows"]}


def nothing_left(tmp_path: Path, ec2: Any = None) -> None:
    counts = teardown.remaining(ec2 or aws.client("ec2", "us-east-1"), CAMPAIGN)
    assert not any(counts.values()), counts
    sim = tmp_path / "cloud" / CAMPAIGN / "sim"
    assert not sim.exists() or not any(sim.iterdir()), "a sim lab is still up"


def no_scratch_in_tmp(tmp_path: Path) -> None:
    """A selftest, even killed, writes nothing in ``$TMPDIR``: its campaign file is in the
    campaign's directory of the cloud state (where the next selftest replaces it)."""
    assert not any((tmp_path / "tmp").iterdir()), sorted((tmp_path / "tmp").iterdir())


def destroy(tmp_path: Path) -> Any:
    """``netfleet cloud destroy netfleet-selftest`` with the test's cloud state directory."""
    argv = [sys.executable, "-m", "netfleet", "cloud", "destroy", CAMPAIGN]
    env = {**os.environ, "NETFLEET_CLOUD_DIR": str(tmp_path / "cloud")}
    return subprocess.run(argv, env=env, text=True, capture_output=True, timeout=240)


def _out(res: Any) -> str:
    return str(res.stdout[-4000:]) + str(res.stderr[-4000:])


# -- options and endpoints (no AWS) ------------------------------------------------------------
@pytest.mark.parametrize(
    ("kw", "expect"),
    [
        ({"seconds": 0.0}, "--seconds 0 is outside 1-60"),
        ({"region": "Mars"}, "--region 'Mars' is not an AWS region"),
        ({"backing": "ssh"}, "--controller-cidr"),
        ({"backing": "ssh", "controller_cidr": "10.0.0.1/32"}, "not a public range"),
    ],
)
def test_bad_options_are_refused_before_any_call(kw: dict[str, Any], expect: str) -> None:
    from netfleet import api

    with pytest.raises(InputError, match=expect) as err:
        api.cloud_selftest(**{"backing": "sim", **kw})
    assert err.value.exit_status == ExitStatus.INVALID_INPUT


def test_backing_sim_is_refused_on_an_endpoint_that_is_not_loopback(tmp_path: Path) -> None:
    """The existing rule of every ``backing: sim`` campaign: it would launch real instances and
    measure namespaces. Refused (exit 2) before any request."""
    env = {**os.environ, "AWS_ENDPOINT_URL": "http://192.0.2.10:9"}
    env.pop(aws.LOOPBACK_ONLY_ENV, None)
    res = selftest(tmp_path, env)
    assert res.returncode == 2, _out(res)
    assert "not loopback" in res.stderr and "Traceback" not in res.stderr


def test_the_test_suites_loopback_guard_stops_a_selftest_at_its_first_call(
    tmp_path: Path,
) -> None:
    """``NETFLEET_AWS_LOOPBACK_ONLY=1`` (the suite's guard) and no emulator: the credentials step
    fails naming the guard (exit 4); no later step is tried."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_ENDPOINT_URL")}
    env[aws.LOOPBACK_ONLY_ENV] = "1"
    # (a public address for the security group rule: never contacted, the guard stops first)
    res = selftest(tmp_path, env, "--backing", "ssh", "--controller-cidr", "9.9.9.9/32")
    assert res.returncode == 4, _out(res)
    steps = steps_of(res)
    assert steps["credentials"]["status"] == "fail"
    assert "refusing to reach AWS sts" in steps["credentials"]["aws answered"]
    assert {s["status"] for n, s in steps.items() if n != "credentials"} == {"skipped"}


# -- on moto, IAM enforced ---------------------------------------------------------------------
@ROOT
@pytest.mark.netns
@pytest.mark.slow
def test_a_selftest_with_exactly_the_policy_passes_every_step_and_leaves_nothing(
    moto: MotoServer, as_user: Any, tmp_path: Path
) -> None:
    """Every call the selftest makes checked against docs/iam-policy.json (moto's IAM), its
    result to S3 as a study's: each step in order, none failed, the result stored and read
    back, the bill, 0 resources."""
    res = selftest(tmp_path, as_user(POLICY), "-r", "s3://netfleet-results/selftest")
    assert res.returncode == 0, _out(res)
    steps = steps_of(res)
    assert list(steps) == list(STEPS)
    assert {s["status"] for s in steps.values()} <= {"ok", "warn"}, steps
    for name in (
        "credentials",
        "leftovers",
        "image",
        "network",
        "launch",
        "iperf3",
        "result",
        "release",
        "nothing left",
        "bill",
    ):
        assert steps[name]["status"] == "ok", steps[name]
        assert steps[name]["seconds"] is not None
    assert "account 123456789012" in steps["credentials"]["aws answered"]
    assert "ami-" in steps["image"]["aws answered"]
    assert "vpc vpc-" in steps["network"]["aws answered"]
    assert steps["launch"]["aws answered"].count(" i-") == 2
    assert "received (goodput, client → server): " in steps["iperf3"]["aws answered"]
    assert "stored and read back" in steps["result"]["aws answered"]
    assert steps["nothing left"]["aws answered"].startswith("0 of every kind")
    assert "total $" in steps["bill"]["aws answered"]
    assert json.loads(res.stdout)["notes"][0].startswith("every step passed")
    assert "s3://netfleet-results/selftest/" in steps["result"]["aws answered"]
    _auth(moto, "inf")
    keys = aws.client("s3", "us-east-1").list_objects_v2(Bucket="netfleet-results")["Contents"]
    assert sum("campaign=netfleet-selftest/" in k["Key"] for k in keys) == 1, keys
    nothing_left(tmp_path)


@pytest.mark.slow  # a selftest subprocess under IAM (~15 s on a loaded machine)
def test_a_denied_action_fails_its_step_naming_the_fix_and_creates_nothing(
    moto: MotoServer, as_user: Any, tmp_path: Path
) -> None:
    res = selftest(tmp_path, as_user(without("ec2:RunInstances")))
    assert res.returncode == 4, _out(res)
    steps = steps_of(res)
    assert steps["permissions"]["status"] == "fail"
    assert "ec2:RunInstances" in steps["permissions"]["aws answered"]
    assert "allow ec2:RunInstances" in steps["permissions"]["fix"]
    assert "docs/iam-policy.json" in steps["permissions"]["fix"]
    assert steps["network"]["status"] == "skipped"
    assert "failed: permissions (exit 4)" in json.loads(res.stdout)["notes"][0]
    assert _admin_counts(moto) == (0, 0)


def test_a_quota_too_small_fails_its_step_and_nothing_is_launched(
    moto: MotoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Service Quotas answers 2 vCPUs for L-1216C47A (moto has no EC2 quotas: AWS's answer
    injected, ``tests/awshooks.py``); two t3.micro need 4: the quotas step fails naming the
    quota and the fix, the campaign is never started (exit 4)."""
    from netfleet import api
    from tests.awshooks import answer, hooked

    _auth(moto, "inf")
    moto.reset()
    monkeypatch.setenv("NETFLEET_CLOUD_DIR", str(tmp_path / "cloud"))
    quota = answer({"Quota": {"ServiceCode": "ec2", "QuotaCode": "L-1216C47A", "Value": 2.0}})
    with hooked(monkeypatch, {"service-quotas.GetServiceQuota": lambda _params: quota}):
        found = api.cloud_selftest(backing="sim", results=str(tmp_path / "results"))
    assert found.exit_status == ExitStatus.ENVIRONMENT
    step = found.step("quotas")
    assert step.status == "fail" and "L-1216C47A" in step.answered, step
    assert "the quota is 2" in step.answered and "request an increase" in step.fix
    assert [s.status for s in found.steps[STEPS.index("image") :]] == ["skipped"] * 10
    assert found.table().notes == ["failed: quotas (exit 4)"]
    assert _admin_counts(moto) == (0, 0)


# -- killed mid-way ----------------------------------------------------------------------------
@ROOT
@pytest.mark.netns
@pytest.mark.slow
def test_killed_after_launch_then_cloud_destroy_leaves_zero(
    moto: MotoServer, tmp_path: Path
) -> None:
    """SIGKILL right after the first instance launched (no finally, no atexit), then
    ``netfleet cloud destroy netfleet-selftest``: 0 resources of every kind, no lab."""
    _auth(moto, "inf")
    moto.reset()
    env = {**os.environ, **KILL_POINTS, "NETFLEET_FAULT_AT": "after:instance"}
    try:
        res = selftest(tmp_path, env)
        assert res.returncode == -9, _out(res)
        assert any(teardown.remaining(aws.client("ec2", "us-east-1"), CAMPAIGN).values())
        no_scratch_in_tmp(tmp_path)
        assert (tmp_path / "cloud" / CAMPAIGN / "selftest.yaml").is_file()
    finally:
        done = destroy(tmp_path)  # the step under test (and the cleanup if the above failed)
    assert done.returncode == 0, _out(done)
    nothing_left(tmp_path)


@ROOT
@pytest.mark.netns
@pytest.mark.slow
def test_sigterm_after_launch_gives_everything_back_by_itself(
    moto: MotoServer, tmp_path: Path
) -> None:
    """SIGTERM (or Ctrl-C) right after the first instance launched: the selftest gives back
    what it made before it goes (exit 130) — no ``cloud destroy`` needed. (The terminal's
    format: each step's line as it ends.)"""
    _auth(moto, "inf")
    moto.reset()
    env = {
        **os.environ,
        **KILL_POINTS,
        "NETFLEET_FAULT_AT": "after:instance",
        "NETFLEET_FAULT_SIGNAL": "TERM",
    }
    try:
        res = selftest(tmp_path, env, "--format", "table")
        assert res.returncode == ExitStatus.INTERRUPTED, _out(res)
        assert "Traceback" not in res.stderr and "interrupted" in res.stderr, res.stderr[-3000:]
        lines = [line.split()[:2] for line in res.stdout.splitlines()]
        assert ["ok", "credentials"] in lines and ["skipped", "iperf3"] in lines, res.stdout
        nothing_left(tmp_path)
    finally:
        destroy(tmp_path)  # only if the test failed is there anything to give back


@ROOT
@pytest.mark.netns
@pytest.mark.slow
def test_killed_during_iperf3_then_the_next_selftest_cleans_up_and_passes(
    moto: MotoServer, tmp_path: Path
) -> None:
    """SIGKILL while the iperf3 run's processes run (``tests/killkit.py``): the instances,
    network and lab stay. The next selftest's first steps give them back (its "leftovers"
    step says what), then it passes, and 0 resources remain."""
    from netfleet.runner.journal import journal_path
    from netfleet.store import open_root

    _auth(moto, "inf")
    moto.reset()
    journal = journal_path(open_root(tmp_path / "results").journal_root, CAMPAIGN)
    proc = selftest(
        tmp_path, None, "--seconds", "30", stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        with killkit.killed_mid_run(proc, journal, lambda rec: True, settle=0.5):
            assert proc.returncode == -9
        left = teardown.remaining(aws.client("ec2", "us-east-1"), CAMPAIGN)
        assert left["instances"] == 2 and left["vpcs"] == 1, left
        res = selftest(tmp_path)
        assert res.returncode == 0, _out(res)
        steps = steps_of(res)
        assert "an earlier selftest's resources deleted" in steps["leftovers"]["aws answered"]
        assert "instance=2" in steps["leftovers"]["aws answered"]
        assert steps["iperf3"]["status"] == "ok"
        nothing_left(tmp_path)
        no_scratch_in_tmp(tmp_path)
        assert not (tmp_path / "cloud" / CAMPAIGN / "selftest.yaml").exists()
    finally:
        destroy(tmp_path)  # only if the test failed is there anything to give back


# -- under the fault profiles ------------------------------------------------------------------
#: the selftest under AWS's misbehaviour (``netfleet_sim.awsfaults``): throttling on its own, and
#: every other profile at once (eventual consistency, a zone without capacity, DependencyViolation
#: after terminate; the spot, task and IAM-propagation profiles have nothing to act on in an
#: on-demand EC2 campaign, and must not disturb it)
PROFILES = {
    "throttle:share=0.2": {"RequestLimitExceeded"},
    "eventual,capacity,dependency:seconds=10,spot-notice,task-stops,iam-propagation,"
    "fargate-capacity": {
        "InvalidVpcID.NotFound",
        "InsufficientInstanceCapacity",
        "DependencyViolation",
    },
}


#: the name of the tests that check the runs
UNDER_FAULTS = "test_a_selftest_under_faults_passes_and_met_them"


class ProfileRuns:
    def __init__(
        self, servers: dict[str, MotoServer], procs: dict[str, Any], dirs: dict[str, Path]
    ) -> None:
        self.servers, self.procs, self.dirs = servers, procs, dirs

    def ec2(self, faults: str) -> Any:
        return aws.client("ec2", "us-east-1", endpoint_url=self.servers[faults].url)

    def result(self, faults: str) -> subprocess.CompletedProcess[str]:
        proc = self.procs[faults]
        out, err = proc.communicate(timeout=400)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.fixture(scope="module", autouse=True)
def profile_runs(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ProfileRuns]:
    """A selftest under each profile, side by side, each against a moto server of its own (the
    resources of one must not be counted as another's) — started when the module starts (as
    root) and checked by the last tests: most of their time is botocore's backoff and the
    profiles' waits, spent beside the module's other tests."""
    servers: dict[str, MotoServer] = {}
    procs: dict[str, Any] = {}
    dirs: dict[str, Path] = {}
    wanted = any(item.name.startswith(UNDER_FAULTS) for item in request.session.items)
    if os.geteuid() != 0 or not wanted:  # namespaces needed (the tests skip); or deselected
        yield ProfileRuns(servers, procs, dirs)
        return
    try:
        for faults in PROFILES:
            server = servers[faults] = motokit.start_moto_server()
            tmp = dirs[faults] = tmp_path_factory.mktemp("selftest-faults")
            env = {
                **os.environ,
                **motokit.ENV,
                "AWS_ENDPOINT_URL": server.url,
                awsfaults.PROFILE_ENV: faults,
                awsfaults.LOG_ENV: str(tmp / "injected.json"),
            }
            procs[faults] = selftest(tmp, env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        yield ProfileRuns(servers, procs, dirs)
    finally:
        for proc in procs.values():
            if proc.poll() is None:  # not checked (deselected): stopped as Ctrl-C stops it —
                proc.terminate()  # it gives back what it made, its lab namespaces too
            try:
                proc.communicate(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
        for server in servers.values():
            server.stop()


@ROOT
@pytest.mark.netns
@pytest.mark.slow
@pytest.mark.parametrize("faults", list(PROFILES), ids=["throttle", "every-other-profile"])
def test_a_selftest_under_faults_passes_and_met_them(
    profile_runs: ProfileRuns, faults: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the checks' clients (netfleet's teardown.remaining makes its own) reach the profile's
    # server with moto's credentials, whatever the tests before left in this process
    for key, value in {**motokit.ENV, "AWS_ENDPOINT_URL": profile_runs.servers[faults].url}.items():
        monkeypatch.setenv(key, value)
    res = profile_runs.result(faults)
    assert "Traceback" not in res.stderr, res.stderr[-3000:]
    assert res.returncode == 0, _out(res)
    assert {s["status"] for s in steps_of(res).values()} <= {"ok", "warn"}
    path = profile_runs.dirs[faults] / "injected.json"
    injected = json.loads(path.read_text())
    assert PROFILES[faults] <= set(injected), injected
    nothing_left(profile_runs.dirs[faults], profile_runs.ec2(faults))
