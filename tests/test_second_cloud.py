"""A second cloud is one new package (issue 24): ``tests/nscloud.py`` implements the provider
seam on network namespaces and runs a real campaign — real iperf3 between namespaces it
created, shaped to its catalogue's rate — through the same lifecycle as AWS
(``netfleet.cloud.lifecycle.CloudProvider``, releases through ``give_back``), leaving nothing
behind; and its release touches only what carries its claim."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from netfleet.cloud.lifecycle import CloudProvider
from netfleet.cloud.release import give_back
from netfleet.cloud.seam import Released, Scope
from netfleet.errors import EnvironmentProblem, ExitStatus, HostError
from netfleet.hosts.provider import HostPool, HostRequest, MemoryLeaseLog
from netfleet.runner.journal import journal_path, read_records
from netfleet.spec.models import LocalHostSpec, NetnsHostSpec
from netfleet.store.root import read_raw
from tests.nscloud import ENV_DIR, TYPES, VCPUS_ENV, NsCloud, namespaces

REPO = Path(__file__).resolve().parents[1]
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")


def prefix() -> str:
    return "nsc" + uuid.uuid4().hex[:6]  # unique: other engineers' tests run alongside


def ours(campaign: str) -> set[str]:
    return {n for n in namespaces() if n.startswith(campaign + "-")}


@pytest.fixture
def campaign() -> Iterator[str]:
    name = prefix()
    yield name
    for ns in ours(name):  # whatever a failed test left: only this test's namespaces
        subprocess.run(["ip", "netns", "delete", ns], check=False)


def launch(
    tmp_path: Path,
    campaign: str,
    *args: str,
    duration: int = 3,
    mtype: str = "ns.small",
    env: dict[str, str] | None = None,
    command: tuple[str, ...] = ("run",),
) -> subprocess.Popen[str]:
    """``netfleet run`` (or ``command``: ``cloud up``) with the namespace cloud registered, on
    a two-host campaign."""
    spec = tmp_path / "s.yaml"
    spec.write_text(
        textwrap.dedent(f"""\
        campaign: second-cloud
        hosts:
          a: {{kind: netns, namespace: {campaign}-a, address: 198.18.240.1,
              labels: {{machine_type: {mtype}}}}}
          b: {{kind: netns, namespace: {campaign}-b, address: 198.18.240.2,
              labels: {{machine_type: {mtype}}}}}
        tests:
          - {{name: shaped, client: a, server: b, params: {{duration: {duration}}}}}
        """)
    )
    results = ["--results", str(tmp_path / "res")] if command == ("run",) else []
    argv = [*command, str(spec), *results, *args]
    return subprocess.Popen(
        [sys.executable, "-m", "tests.nscloud", *argv],
        cwd=REPO,
        env={**os.environ, ENV_DIR: str(tmp_path / "state"), **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def lease_events(results: Path) -> dict[str, list[str]]:
    events: dict[str, list[str]] = {}
    for rec in read_records(journal_path(results, "second-cloud")):
        if rec["event"].startswith("host_"):
            events.setdefault(rec["lease"], []).append(f"{rec['event']}:{rec.get('outcome', '')}")
    return events


def assert_nothing_left(tmp_path: Path, campaign: str, leases: int) -> None:
    """No namespace of the campaign, no claim; every lease intent → acquired → released once."""
    assert ours(campaign) == set()
    assert not any(p.is_file() for p in (tmp_path / "state").rglob("*"))
    events = lease_events(tmp_path / "res")
    assert len(events) == leases
    assert all(
        e == ["host_intent:", "host_acquired:", "host_released:released"] for e in events.values()
    )


@pytest.mark.netns
@needs_root
def test_a_campaign_runs_through_the_lifecycle_and_leaves_nothing(
    tmp_path: Path, campaign: str
) -> None:
    proc = launch(tmp_path, campaign)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, out + err
    assert_nothing_left(tmp_path, campaign, leases=3)  # network, a, b
    results = tmp_path / "res"
    # measured by real iperf3 through the namespaces the cloud made, at its catalogue's rate
    runs = [read_raw(p) for p in results.rglob("*.json.gz")]
    assert len(runs) == 1
    run = runs[0]
    assert run["status"] == "ok", json.dumps(run)[:2000]
    assert run["client"]["labels"]["cloud"] == "nscloud"
    assert run["client"]["labels"]["baseline_gbps"] == "0.2"
    mbps = run["result"]["end"]["sum_received"]["bits_per_second"] / 1e6
    assert 100 < mbps < 210, mbps  # the tbf shapes the wire to 200 Mbit/s


REFUSALS = pytest.mark.parametrize(
    ("args", "mtype", "env", "status", "said"),
    [
        (["--max-cost", "0.000001"], "ns.small", {}, 2, "exceeds --max-cost $0.00"),
        ([], "ns.unpriced", {}, 2, "no price for ns.unpriced: the cost cannot be bounded"),
        (["--max-instances", "1"], "ns.small", {}, 2, "2 instances exceed --max-instances 1"),
        ([], "ns.small", {VCPUS_ENV: "1"}, 4, "nscloud vCPUs: 2 needed, the limit is 1"),
    ],
    ids=["max-cost", "cannot-price", "max-instances", "quota"],
)


@REFUSALS
@pytest.mark.parametrize("command", [("run",), ("cloud", "up")], ids=["run", "cloud-up"])
@needs_root
def test_the_guards_hold_a_second_cloud_before_anything_exists(
    tmp_path: Path,
    campaign: str,
    args: list[str],
    mtype: str,
    env: dict[str, str],
    status: int,
    said: str,
    command: tuple[str, ...],
) -> None:
    """`netfleet run` ran its cost, instance and quota guards only for kind aws: a second cloud
    launched whatever it was asked. Now the neutral guard (netfleet.cloud.guard) asks every
    owning cloud for its price and quota first; a cloud that cannot price does not launch.
    `netfleet cloud up` launched AWS only (the AWS Provisioner, its own copy of the guards); it
    now takes a campaign spec of any cloud and holds it to the same guard before `acquire`."""
    proc = launch(tmp_path, campaign, *args, mtype=mtype, env=env, command=command)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == status, out + err
    assert said in err, err
    assert ours(campaign) == set() and not (tmp_path / "state").exists()  # not one claim
    assert command != ("run",) or not lease_events(tmp_path / "res")


@pytest.mark.netns
@needs_root
def test_cloud_up_launches_a_second_clouds_machines_through_acquire(
    tmp_path: Path, campaign: str
) -> None:
    """`cloud up` of the namespace cloud's campaign: its machines are made by the cloud's own
    `acquire` (a claim per namespace, the network first), listed, and — `--release` — given
    back lease by lease through `give_back`: nothing left, no claim."""
    proc = launch(tmp_path, campaign, command=("cloud", "up"))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, out + err
    assert ours(campaign) == {f"{campaign}-{h}" for h in ("a", "b", "net")}
    claims = {p.name for p in (tmp_path / "state" / campaign).iterdir()}
    assert claims == {f"{campaign}-{h}" for h in ("a", "b", "net")}
    assert f"{campaign}-a" in out and "netns" in out  # the machines, by host and cloud
    done = asyncio.run(give_back(NsCloud(tmp_path / "state"), Scope.of_campaign(campaign)))
    assert done.remaining == {"namespaces": 0} and ours(campaign) == set()
    again = launch(tmp_path, campaign, "--release", command=("cloud", "up"))
    out, err = again.communicate(timeout=120)
    assert again.returncode == 0, out + err
    assert "released: 0 resources remain" in out
    assert ours(campaign) == set()
    assert not any(p.is_file() for p in (tmp_path / "state").rglob("*"))


@pytest.mark.slow
@pytest.mark.netns
@needs_root
def test_after_kill_9_the_next_run_gives_back_what_the_dead_one_held(
    tmp_path: Path, campaign: str
) -> None:
    """``kill -9`` mid-run leaves the cloud's namespaces; ``--resume`` releases them through the
    same lifecycle (the lease records → ``give_back``) before acquiring its own."""
    proc = launch(tmp_path, campaign, duration=4)
    pids: list[int] = []
    try:
        journal = journal_path(tmp_path / "res", "second-cloud")
        deadline = time.monotonic() + 300  # a wait bound, not a speed claim
        while time.monotonic() < deadline and len(pids) < 2 and proc.poll() is None:
            pids = [r["pid"] for r in read_records(journal) if r["event"] == "process"]
            time.sleep(0.1)
        assert len(pids) >= 2, "the run never started"
        proc.kill()  # SIGKILL: no cleanup of any kind
        proc.communicate(timeout=10)
        assert ours(campaign) == {f"{campaign}-{h}" for h in ("a", "b", "net")}
        again = launch(tmp_path, campaign, "--resume", duration=4)
        out, err = again.communicate(timeout=120)
        assert again.returncode == 0, out + err
        assert "released 3 of 3 hosts an earlier session left acquired" in out
        assert_nothing_left(tmp_path, campaign, leases=6)  # the dead session's and the new one's
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in pids:  # the dead session's iperf3 processes, by the PIDs it recorded
            if Path(f"/proc/{pid}").exists():
                os.kill(pid, signal.SIGKILL)


def request(campaign: str, host: str, address: str, mtype: str = "ns.small") -> HostRequest:
    spec = NetnsHostSpec(
        kind="netns",
        namespace=f"{campaign}-{host}",
        address=address,
        labels={"machine_type": mtype},
    )
    return HostRequest(host, spec)


@pytest.mark.netns
@needs_root
def test_plan_refuses_an_unknown_type_before_anything_exists(tmp_path: Path, campaign: str) -> None:
    provider = CloudProvider(NsCloud(tmp_path))
    log = MemoryLeaseLog()
    with pytest.raises(HostError, match=r"no machine type 'ns\.huge'"):
        asyncio.run(provider.acquire([request(campaign, "a", "198.18.241.1", "ns.huge")], log))
    assert log.leases == {} and ours(campaign) == set()


@pytest.mark.netns
@needs_root
def test_campaign_release_gives_back_only_what_carries_a_claim(
    tmp_path: Path, campaign: str
) -> None:
    cloud = NsCloud(tmp_path)
    provider = CloudProvider(cloud)
    log = MemoryLeaseLog()
    reqs = [request(campaign, "a", "198.18.242.1"), request(campaign, "b", "198.18.242.2")]
    got = asyncio.run(provider.acquire(reqs, log))
    assert {a.host.name for a in got} == {"a", "b"}
    assert provider.hourly[-1].usd == pytest.approx(2 * (TYPES["ns.small"].usd_per_hour or 0))
    foreign = f"{campaign}-x"  # a namespace nobody claimed, named like the campaign's
    subprocess.run(["ip", "netns", "add", foreign], check=True)
    # a lease whose claim names another lease is refused, and the namespace stays
    forged = log.leases[got[0].lease.id] if got[0].lease else None
    assert forged is not None
    wrong = type(forged)("not-" + forged.id, forged.provider, forged.host, forged.resource)
    with pytest.raises(HostError, match="no claim of this lease"):
        asyncio.run(give_back(cloud, Scope.of_lease(wrong)))
    assert f"{campaign}-a" in namespaces()
    # `cloud destroy`'s scope: the campaign's claims, machines then network; verified
    done = asyncio.run(give_back(cloud, Scope.of_campaign(campaign)))
    assert done.remaining == {"namespaces": 0}
    assert ours(campaign) == {foreign}  # the unclaimed one is not this cloud's
    # a later lease release (a resumed session) finds its machine already gone
    assert asyncio.run(provider.release_lease(got[1].lease)) == "gone"  # type: ignore[arg-type]


def docs_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The complete tiny cloud of docs/extending.md, imported from the page itself."""
    page = (REPO / "docs" / "extending.md").read_text()
    code = page.split("<!-- dircloud -->\n```python\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "dircloud.py"
    path.write_text(code)
    spec = importlib.util.spec_from_file_location("dircloud", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "dircloud", module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_the_docs_tiny_cloud_runs_through_the_lifecycle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dircloud = docs_example(tmp_path, monkeypatch)
    root = tmp_path / "machines"
    provider = CloudProvider(dircloud.DirCloud(root))
    log = MemoryLeaseLog()
    labels = {"machine_type": "dir.small"}
    reqs = [HostRequest(n, LocalHostSpec(kind="local", labels=labels)) for n in ("a", "b")]

    async def go() -> list[str]:
        async with HostPool(reqs, log, lambda _kind: provider) as hosts:
            assert sorted(p.name for p in root.iterdir()) == ["a", "b"]
            assert hosts["a"].labels["cloud"] == "dircloud"
            done = await hosts["a"].run(["echo", "measured"])
            return [done.stdout.strip()]

    assert asyncio.run(go()) == ["measured"]
    assert list(root.iterdir()) == []  # released through give_back, each lease once
    assert all(o == ["released"] for o in log.outcomes.values()) and len(log.outcomes) == 2
    bad = [HostRequest("c", LocalHostSpec(kind="local", labels={"machine_type": "dir.huge"}))]
    with pytest.raises(HostError, match=r"dircloud offers no 'dir\.huge'"):
        asyncio.run(provider.acquire(bad, log))
    assert list(root.iterdir()) == []  # refused in plan: nothing created


def test_give_back_holds_a_cloud_to_its_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The one release path verifies: a cloud whose campaign release leaves a machine behind,
    or answers with an outcome that settles nothing, is an error naming it (exit 4)."""
    dircloud = docs_example(tmp_path, monkeypatch)
    root = tmp_path / "machines"
    cloud = dircloud.DirCloud(root)
    log = MemoryLeaseLog()
    reqs = [HostRequest("a", LocalHostSpec(kind="local", labels={"machine_type": "dir.small"}))]
    asyncio.run(cloud.acquire(reqs, log))
    monkeypatch.setattr(dircloud.shutil, "rmtree", lambda _path: None)  # a delete that fails
    with pytest.raises(EnvironmentProblem, match="left resources behind: dirs=1") as err:
        asyncio.run(give_back(cloud, Scope.of_campaign("any")))
    assert err.value.exit_status == ExitStatus.ENVIRONMENT
    lease = next(iter(log.leases.values()))

    class Unsettled(dircloud.DirCloud):  # type: ignore[name-defined]
        async def release(self, scope: Scope) -> Released:
            return Released("failed")

    with pytest.raises(EnvironmentProblem, match="ended 'failed'"):
        asyncio.run(give_back(Unsettled(root), Scope.of_lease(lease)))
