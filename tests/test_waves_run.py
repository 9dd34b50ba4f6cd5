"""Waves at run time (issue 25.1-25.3): the scheduler waits for hosts not there yet, the pool
acquires them when asked, the driver follows the plan's budget, the cloud plan of a campaign
(waves, stop bounds, switch) — and, on moto's server with the sim backing, a ``kill -9``
between waves leaves nothing after ``cloud destroy`` while the dead-man switch never fires
inside the running plan and fires after the lost controller."""

from __future__ import annotations

import asyncio
import datetime as dt
import gzip
import json
import os
import signal
import subprocess
import sys
import time
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest
import yaml

from netfleet import aws
from netfleet.cloud import guard
from netfleet.cloud.aws.acquire.provision import TAG_CAMPAIGN
from netfleet.cloud.aws.measure import deadman, expiry
from netfleet.cloud.aws.plan import catalogue, costs, prices, runwaves
from netfleet.cloud.aws.provider import AwsCloud
from netfleet.cloud.aws.release import teardown
from netfleet.cloud.aws.runs import cloud_spec
from netfleet.errors import EnvironmentProblem, ExitStatus, HostError
from netfleet.hosts.base import CommandResult
from netfleet.hosts.local import LocalHost
from netfleet.hosts.provider import HostPool, HostRequest, MemoryLeaseLog
from netfleet.plan import expand
from netfleet.plan.bounds import bound_runs
from netfleet.plan.matrix import PlannedRun
from netfleet.runner.scheduler import Limits, Scheduler
from netfleet.runner.waves import AcquirePlan, Group, WaveDriver
from netfleet.spec import load_spec
from netfleet.spec.models import LocalHostSpec
from netfleet.tabular import Tabular
from tests import motokit
from tests.leasekit import TmpdirProvider
from tests.motokit import MotoServer

moto = motokit.moto
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run(seq: int, client: str, server: str) -> PlannedRun:
    spec = load_spec(EXAMPLES / "aws-credits.yaml")
    base = expand(spec)[0]
    return base._replace(sequence=seq, run_key=f"k{seq}", client=client, server=server)


# -- the scheduler: absent hosts ------------------------------------------------------------------
@pytest.mark.parametrize("index", [False, True])
def test_runs_of_absent_hosts_wait_for_their_arrival(index: bool) -> None:
    runs = [run(0, "a", "srv"), run(1, "b", "srv"), run(2, "c", "srv")]
    limits = Limits(concurrency=3, overlap=frozenset({"srv"}))
    sched = Scheduler(runs, limits, index=index, absent={"b", "c"})
    assert [r.client for r in sched.take(0.0)] == ["a"]
    assert sched.take(1.0) == []  # b and c are not there
    sched.arrive(["c"])
    assert [r.client for r in sched.take(2.0)] == ["c"]
    sched.finished(runs[0], 3.0)
    sched.arrive(["b"])
    assert [r.client for r in sched.take(3.0)] == ["b"]


# -- the pool: later hosts, one prepare per provider ----------------------------------------------
class Recording(TmpdirProvider):
    waves = True

    def __init__(self, base: Path) -> None:
        super().__init__(base)
        self.prepared: list[tuple[list[str], float | None]] = []

    def prepare(self, requests: list[HostRequest], expected_s: float | None) -> None:
        self.prepared.append(([r.name for r in requests], expected_s))


def requests(*names: str) -> list[HostRequest]:
    return [HostRequest(n, LocalHostSpec(kind="local")) for n in names]


def test_the_pool_acquires_later_hosts_when_asked_and_prepares_once(tmp_path: Path) -> None:
    provider = Recording(tmp_path)
    log = MemoryLeaseLog()

    async def go() -> dict[str, Any]:
        pool = HostPool(requests("srv", "a", "b"), log, lambda _k: provider,
                        later={"a", "b"}, expected_s=42.0)  # fmt: skip
        async with pool as hosts:
            first = sorted(hosts)
            await pool.acquire(["a"])
            assert await pool.release_early("a")
            await pool.acquire(["b"])
            return {"first": first, "then": sorted(hosts), "calls": list(provider.calls)}

    got = asyncio.run(go())
    assert got["first"] == ["srv"] and got["then"] == ["a", "b", "srv"]
    assert got["calls"] == [["srv"], ["a"], ["b"]]
    assert provider.prepared == [(["srv", "a", "b"], 42.0)]
    assert sorted(log.outcomes) == sorted(log.leases) and not list(tmp_path.glob("*-*"))


def test_without_waves_every_host_is_acquired_up_front_as_before(tmp_path: Path) -> None:
    provider = TmpdirProvider(tmp_path)

    async def go() -> list[str]:
        async with HostPool(requests("x", "y", "z"), MemoryLeaseLog(), lambda _k: provider) as h:
            return sorted(h)

    assert asyncio.run(go()) == ["x", "y", "z"] and provider.calls == [["x", "y", "z"]]


# -- the driver: the plan's budget at run time ----------------------------------------------------
def test_the_driver_holds_the_budget_and_acquires_as_hosts_are_released() -> None:
    runs = [run(i, c, "srv") for i, c in enumerate("abcd")]
    groups = tuple(Group(c, (c,), {"vcpus": 8.0, "instances": 1.0}) for c in "abcd")
    plan = AcquirePlan(groups, budget={"vcpus": 24.0, "instances": 3.0},
                       held={"vcpus": 8.0, "instances": 1.0})  # fmt: skip
    events: list[str] = []
    held: list[float] = []

    async def go() -> WaveDriver:
        async def acquire(names: list[str], mine: list[PlannedRun]) -> None:
            assert [r.client for r in mine] == names
            events.append("+" + names[0])

        async def release(name: str) -> bool:
            events.append("-" + name)
            return True

        driver: WaveDriver

        def arrive(names: list[str]) -> None:
            held.append(driver.held["vcpus"])

        driver = WaveDriver(plan, runs, acquire, arrive, release)
        driver.due()
        ended: set[str] = set()
        while driver.pending:
            done, _ = await asyncio.wait(driver.pending)
            driver.settle(done)
            for name in [e[1:] for e in events if e[0] == "+" and e[1:] not in ended]:
                ended.add(name)
                assert driver.host_done(name)  # its runs ended: released now
        return driver

    driver = asyncio.run(go())
    assert events[:2] == ["+a", "+b"]  # 8 held + 2 × 8 = 24: two at a time
    assert events.index("+c") > events.index("-a") and events.index("+d") > events.index("-b")
    assert max(held) <= 24 and driver.peak["vcpus"] == 24 and driver.held["vcpus"] == 8
    assert driver.waves == [["a", "b"], ["c"], ["d"]] and not driver.todo


# -- the cloud plan of a campaign ----------------------------------------------------------------
def moto_catalogue(*types: str) -> dict[str, catalogue.InstanceInfo]:
    raw = json.loads(
        gzip.decompress((files("moto.ec2") / "resources" / "instance_types.json.gz").read_bytes())
    )
    return {t: catalogue.from_api(raw[t]) for t in types}


def credits_spec(tmp_path: Path, **params: Any) -> Path:
    doc = yaml.safe_load((EXAMPLES / "aws-credits.yaml").read_text())
    doc["tests"][0]["params"].update(params)
    path = tmp_path / "credits.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_the_run_plan_shares_the_server_waves_the_clients_and_bounds_adaptive_runs(
    tmp_path: Path,
) -> None:
    spec = load_spec(credits_spec(tmp_path, duration=3600, until_steady=10))
    cs = cloud_spec(spec)
    assert cs is not None
    runs = expand(spec)
    infos = moto_catalogue("c5n.18xlarge", "r4.large", "r4.xlarge")
    table = prices.load(None)
    one = runwaves.plan_run(spec, cs, runs, table, infos)  # concurrency 1: one job at a time
    assert one.plan.waves == 2 and [m.instance_type for m in one.plan.shared] == ["c5n.18xlarge"]
    assert one.acquire.later == {"r4-large", "r4-xlarge"}
    assert all(g.need["jobs"] == 1 for g in one.acquire.groups)
    # r4 is burstable with no bucket known: the longest documented burst + 30 s, said why
    assert one.acquire.max_run_s == {"r4-large": 3630.0, "r4-xlarge": 3630.0}
    text = "\n".join(one.lines())
    assert "long: r4.large up to 60.5 min — burstable 0.75→10 Gbit/s, bucket unknown" in text
    assert "peak: 2 instances" in text and "dead-man switch" in text
    two = runwaves.plan_run(spec, cs, runs, table, infos, concurrency=2)
    assert two.plan.waves == 1 and two.plan.peak_instances == 3
    quota = runwaves.quota_key("L-34B43A08", "us-east-1")  # spot standard
    tight = runwaves.plan_run(spec, cs, runs, table, infos, vcpu_budget={quota: 40})
    assert tight.plan.unfit and "L-34B43A08" in tight.plan.unfit[0]
    assert tight.plan.blocked == tight.plan.unfit  # a higher --max-instances would not help
    # the run's guard is every cloud's (issue 35): AWS's quota through the seam, for the plan
    # the run follows, refuses the job no quota fits (exit 4) before anything exists
    aws_cloud = AwsCloud(tmp_path)
    hosts = [HostRequest(n, h) for n, h in spec.hosts.items() if h.kind == "aws"]
    est = prices.Estimate(tight.plan.peak_instances, 1.0, [], 1.0, None)
    aws_cloud.follow([h.name for h in hosts], costs.Priced(Tabular([], []), est, None, waves=tight))
    with pytest.raises(EnvironmentProblem, match="L-34B43A08") as err:
        guard.quota(aws_cloud.quota(hosts))
    assert err.value.exit_status == ExitStatus.ENVIRONMENT
    assert aws_cloud.price(hosts, 1.0).machines == tight.plan.least_instances == 2
    # a fixed-rate client (baseline = peak) is bounded to a steady window: its run shortened
    doc = yaml.safe_load(credits_spec(tmp_path, duration=600, until_steady=10).read_text())
    doc["cloud"]["fleets"][1]["instance_type"] = "c5n.9xlarge"  # "50 Gigabit"
    (tmp_path / "fixed.yaml").write_text(yaml.safe_dump(doc))
    fixed = load_spec(tmp_path / "fixed.yaml")
    fcs = cloud_spec(fixed)
    assert fcs is not None
    cat = {**infos, **moto_catalogue("c5n.9xlarge")}
    rw = runwaves.plan_run(fixed, fcs, expand(fixed), table, cat)
    assert not rw.bounds["r4-large"].long and rw.bounds["r4-xlarge"].long
    assert "stop bounds: c5n.9xlarge stop within 60 s" in "\n".join(rw.lines())
    bounded = bound_runs(expand(fixed), rw.acquire.max_run_s)
    dur = {r.client: getattr(r.params, "duration", None) for r in bounded}
    assert dur == {"r4-large": 60.0, "r4-xlarge": 600}  # r4's bound (3630 s) is the longer
    assert [r.run_key for r in bounded] == [r.run_key for r in expand(fixed)]  # same runs


def test_the_switch_is_the_plans_end_plus_a_margin() -> None:
    assert expiry.switch_s(36000) == pytest.approx((36000 + 180) * 1.25)  # a quarter more
    assert expiry.switch_s(3600) == pytest.approx(3600 + 180 + 1800)  # at least 30 min more
    assert expiry.switch_s(60) == pytest.approx(240 + 1800)
    assert expiry.switch_s(60, scale=0.01) == pytest.approx(61.8 + 18)


# -- kill -9 between waves, on moto's server with the sim backing ---------------------------------
ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")


def _netfleet(tmp_path: Path, *args: str, **popen: Any) -> Any:
    env = {**os.environ, "NETFLEET_CLOUD_DIR": str(tmp_path / "cloud"), "COLUMNS": "200"}
    argv = [sys.executable, "-m", "netfleet", *args]
    if popen:
        return subprocess.Popen(argv, env=env, text=True, **popen)
    return subprocess.run(argv, env=env, text=True, capture_output=True, timeout=240)


def _events(results: Path) -> list[dict[str, Any]]:
    path = next(results.rglob("aws-credits.jsonl"), None)
    if path is None:
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue  # a line being written
    return out


def _fired(campaign: str) -> bool:
    ec2 = aws.client("ec2", "us-east-1")
    resp = ec2.describe_tags(Filters=[{"Name": "key", "Values": [TAG_CAMPAIGN]},
                                      {"Name": "value", "Values": [campaign]}])  # fmt: skip
    ids = {t["ResourceId"] for t in resp["Tags"]}
    tags = ec2.describe_tags(Filters=[{"Name": "resource-id", "Values": sorted(ids)}])["Tags"]
    by: dict[str, list[dict[str, str]]] = {}
    for t in tags:
        by.setdefault(t["ResourceId"], []).append({"Key": t["Key"], "Value": t["Value"]})
    now = dt.datetime.now(dt.UTC)
    return bool(by) and all(deadman.fired(v, now) for v in by.values())


@ROOT
@pytest.mark.netns
@pytest.mark.slow
def test_kill_9_mid_wave_leaves_nothing_after_destroy_and_the_switch_follows_the_plan(
    moto: MotoServer, tmp_path: Path
) -> None:
    """Two clients, one at a time (concurrency 1): wave 1 (r4-large) is released before wave 2
    (r4-xlarge) is acquired. While the plan runs the campaign's stamp never passes (the
    provider's heartbeat); SIGKILL once wave 2 runs; the stamp passes soon after (the sim's
    switch is scaled by its time_scale); ``cloud destroy`` then leaves nothing of any kind."""
    moto.reset()
    doc = yaml.safe_load((EXAMPLES / "aws-credits.yaml").read_text())
    doc["results"] = str(tmp_path / "results")
    # the switch's margin past the plan: 30 min × 0.005 = 9 s (at 0.002, 3.6 s, a loaded
    # machine ran the plan past it: the switch fired mid-plan, as it should have); the switch
    # still fires within seconds of the kill (the sim's grace, 10 s)
    doc["cloud"]["time_scale"] = 0.005
    doc["tests"][0]["params"].update(duration=4, omit=0)
    doc["cooldown"] = 0
    spec = tmp_path / "credits.yaml"
    spec.write_text(yaml.safe_dump(doc, sort_keys=False))
    results = tmp_path / "results"
    # the client, made before the kill: the lost controller's switch fires ~9 s after it, and a
    # loaded machine took longer than that to make one and read the events first (seen with 4
    # workers at load 8: wave 2's instances were gone already)
    ec2 = aws.client("ec2", "us-east-1")
    f = [{"Name": "tag:netfleet:campaign", "Values": ["aws-credits"]},
         {"Name": "instance-state-name", "Values": ["pending", "running"]}]  # fmt: skip
    proc = _netfleet(tmp_path, "run", str(spec), stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        deadline = time.monotonic() + 300  # a wait bound, not a speed claim (31 s on CI)
        while True:  # until wave 1's client is released and wave 2's run started
            assert time.monotonic() < deadline and proc.poll() is None, "wave 2 never started"
            ev = _events(results)
            released = [e for e in ev if e.get("event") == "host_released"]
            started = [e for e in ev if e.get("event") == "run_started"]
            assert not any(e.get("host") == "network" for e in released)
            if any(e.get("host") == "r4-large" for e in released) and any(
                "r4-xlarge" in str(e.get("run_key")) for e in started
            ):
                break
            assert not _fired("aws-credits"), "the switch fired inside the running plan"
            time.sleep(0.3)
        assert not _fired("aws-credits")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    up = [i["InstanceType"] for r in ec2.describe_instances(Filters=f)["Reservations"]
          for i in r["Instances"]]  # fmt: skip
    assert sorted(up) == ["c5n.18xlarge", "r4.xlarge"]  # wave 1's client is gone already
    ev = _events(results)
    assert sum(e.get("host") == "network" for e in ev if e.get("event") == "host_intent") == 1
    deadline = time.monotonic() + 30  # the lost controller's switch fires
    while not _fired("aws-credits"):
        assert time.monotonic() < deadline, "the switch did not fire after the lost controller"
        time.sleep(0.5)
    res = _netfleet(tmp_path, "cloud", "destroy", "aws-credits",
                    "--state-dir", str(tmp_path / "cloud"))  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    left = teardown.remaining(ec2, "aws-credits")
    assert left and not any(left.values()), left
    sim = tmp_path / "cloud" / "aws-credits" / "sim"
    assert not sim.exists() or not any(sim.iterdir()), "a sim lab is still up"


# -- the re-arm reaches backing ssh instances over their connection --------------------------------
class Recorded(LocalHost):
    """Records the commands it is given and runs none (the re-arm powers a machine off when its
    timer fires: it must never run here)."""

    def __init__(self, name: str, fail: bool = False, gone: bool = False) -> None:
        super().__init__(name=name, address="127.0.0.1")
        self.seen: list[list[str]] = []
        self.fail, self.gone = fail, gone

    def lost(self) -> str | None:
        return "reclaimed" if self.gone else None

    async def run(self, argv: list[str], timeout: float = 30) -> CommandResult:
        self.seen.append(argv)
        if self.fail:
            raise HostError(f"host {self.name}: unreachable")
        return CommandResult(argv, 0, "", "")


def test_the_heartbeat_rearms_each_live_instance_over_its_connection() -> None:
    hosts = [Recorded("a"), Recorded("b", fail=True), Recorded("c"), Recorded("d", gone=True)]

    async def go() -> deadman.Heartbeat:
        rearm = expiry.rearm_over_ssh(lambda: hosts, asyncio.get_running_loop())
        until = dt.datetime.now(dt.UTC) + dt.timedelta(minutes=90)
        beat = deadman.Heartbeat({}, "nf-x", switch_s=3, every_s=1, rearm=rearm, until=until)
        beat.start()  # beats in a thread; the commands run on this loop
        while beat.beats + len(beat.failures) < 1:
            await asyncio.sleep(0.05)
        await beat.stop()
        return beat

    beat = asyncio.run(go())
    (argv,) = hosts[0].seen[:1]
    assert argv[:4] == ["sudo", "-n", "sh", "-c"]
    script = argv[4]
    # until the plan's end + margin (90 min), not one 3-s period: the timer is re-armed to it
    assert "systemctl stop netfleet-deadline.timer" in script and "--on-active=90min" in script
    assert "shutdown -P +90" in script
    assert hosts[2].seen and not hosts[3].seen  # a failing host does not stop the others
    assert beat.failures and "re-arm failed on b" in beat.failures[0]
