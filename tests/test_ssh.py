"""SSH hosts against real OpenSSH servers in lab namespaces: quoting, PIDs, host keys, a jump
host, lost connections, and campaigns (pairs, star, mesh) run concurrently over SSH."""

from __future__ import annotations

import asyncio
import os
import pwd
import signal
import subprocess
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import asyncssh
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from netfleet.errors import HostError
from netfleet.hosts.ssh import SshHost
from netfleet.runner import run_campaign
from netfleet.runner.events import SilentReporter
from netfleet.runner.journal import journal_path, read_records
from netfleet.spec import load_spec
from netfleet.spec.ssh import SshJump
from netfleet.store import ResultsRoot
from tests.killkit import alive, killed_mid_run, strays_match
from tests.sshlab import SshLab, ssh_lab

pytestmark = [
    pytest.mark.netns,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces"),
    pytest.mark.skipif(not os.access("/usr/sbin/sshd", os.X_OK), reason="needs openssh-server"),
]

HOSTS = ["big", "h1", "h2", "h3", "h4"]


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshLab]:
    with ssh_lab(tmp_path_factory.mktemp("sshlab"), HOSTS) as f:
        yield f


def ssh_host(fleet: SshLab, name: str, **extra: Any) -> SshHost:
    spec = fleet.host(name, **extra)
    spec.pop("kind")
    labels = spec.pop("labels")
    return SshHost(name=name, labels=labels, **spec)


# ------------------------------------------------------------------------------- the host kind
def test_commands_run_with_their_own_pid_and_stop_by_it(fleet: SshLab) -> None:
    host = ssh_host(fleet, "h1")

    async def main() -> None:
        res = await host.run(["printf", "%s|", "a b", "$HOME", "'q'", "`id`", "; rm -rf /x"])
        assert res.stdout == "a b|$HOME|'q'|`id`|; rm -rf /x|"
        proc = await host.start(["sleep", "30"])
        # the lab shares this machine's PID namespace: the remote PID is visible here, and
        # it becomes `sleep 30` itself (the launcher execs it) a moment after reporting it
        deadline = time.monotonic() + 10  # a wait bound: a busy machine execs late
        while Path(f"/proc/{proc.pid}/cmdline").read_bytes() != b"sleep\x0030\x00":
            if time.monotonic() > deadline:
                break
            await asyncio.sleep(0.02)
        assert Path(f"/proc/{proc.pid}/cmdline").read_bytes() == b"sleep\x0030\x00"
        assert await proc.stop() == -signal.SIGTERM
        assert proc.ended and not alive(proc.pid)
        with pytest.raises(HostError, match="'nosuchtool': not installed"):
            await host.run(["nosuchtool"])
        with pytest.raises(HostError, match="did not finish in 1 s"):
            await host.run(["sleep", "10"], timeout=1)
        facts = await host.facts()
        assert facts["interface"] == "eth0" and facts["mtu"] == 1500
        await host.close()

    fleet.run(main)


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.text(st.characters(codec="utf-8", exclude_characters="\0"), max_size=20), max_size=5
    )
)
def test_hostile_strings_reach_the_command_unchanged(fleet: SshLab, args: list[str]) -> None:
    host = ssh_host(fleet, "h2")

    async def main() -> str:
        try:
            res = await host.run(["printf", "%s\\0", *args])
            return res.stdout
        finally:
            await host.close()

    out = fleet.run(main)
    assert out.split("\0")[:-1] == [a for a in args] or (not args and out in ("", "\0"))


def test_an_unknown_host_key_is_refused_with_its_fingerprint(fleet: SshLab, tmp_path: Path) -> None:
    empty = tmp_path / "empty_known_hosts"
    empty.write_text("")
    host = ssh_host(fleet, "h1", known_hosts=str(empty))
    with pytest.raises(HostError) as info:
        fleet.run(host.check)
    text = str(info.value)
    offered = asyncssh.import_public_key(fleet.host_keys["h1"].public_text).get_fingerprint()
    assert "unknown SSH host key" in text and offered in text and "refusing" in text
    assert f"ssh-keyscan -p 22 -t ssh-ed25519 {fleet.addresses['h1']} >> {empty}" in text


def test_a_changed_host_key_is_refused(fleet: SshLab, tmp_path: Path) -> None:
    wrong = tmp_path / "wrong_known_hosts"
    # h2's key listed for h1's address: h1 offers another one
    wrong.write_text(f"{fleet.addresses['h1']} {fleet.host_keys['h2'].public_text}\n")
    host = ssh_host(fleet, "h1", known_hosts=str(wrong))
    with pytest.raises(HostError, match="has CHANGED") as info:
        fleet.run(host.check)
    assert "man-in-the-middle" in str(info.value) and "ssh-keygen -R" in str(info.value)


def test_a_lab_host_s_sessions_do_not_read_this_machine_s_bashrc(fleet: SshLab) -> None:
    """A lab host is a fresh machine: its sessions see an empty ``~/.bashrc`` (this machine's
    runs ``pyenv init``, ~40 processes a command), bound in sshd's own mount namespace only."""
    rc = Path(pwd.getpwnam("root").pw_dir) / ".bashrc"
    before = rc.read_bytes() if rc.is_file() else None
    host = ssh_host(fleet, "h2")

    async def main() -> str:
        try:
            res = await host.run(["sh", "-c", 'wc -c < "$1" && echo "${PYENV_SHELL-none}"', "sh",
                                  str(rc)])  # fmt: skip
            return res.stdout if res.returncode == 0 else f"missing {res.returncode}"
        finally:
            await host.close()

    out = fleet.run(main)
    if before is None:
        assert out.startswith("missing"), out  # nothing to hide, and nothing was made
        return
    assert out.split() == ["0", "none"], out
    # the machine's own file is untouched and nothing is mounted over it here
    assert rc.read_bytes() == before
    assert f" {rc} " not in Path("/proc/self/mountinfo").read_text()


def test_a_jump_host_tunnels_the_connection(fleet: SshLab) -> None:
    jump = SshJump(
        address=fleet.addresses["big"],
        user="root",
        key=str(fleet.client_key.private),
        known_hosts=str(fleet.known_hosts),
    )
    host = ssh_host(fleet, "h3", jump=jump)

    async def main() -> str:
        try:
            return (await host.run(["cat", "/proc/self/net/tcp"])).stdout
        finally:
            await host.close()

    assert fleet.run(main)
    # h3 saw the login come from the jump host, not from the controller
    log = fleet.sshd["h3"].log.read_text()
    assert f"Accepted publickey for root from {fleet.addresses['big']} " in log


# ---------------------------------------------------------------------------------- campaigns
CONCURRENT = """\
tests:
  - name: pairs
    topology: {kind: pairs, hosts: [h1, h2, h3, h4]}
    params: {duration: 1, bitrate: 20mbit}
  - name: star
    topology: {kind: star, center: big, hosts: [h1, h2, h3, h4]}
    params: {duration: 1, bitrate: 20mbit}
  - name: mesh
    topology: {kind: mesh, hosts: [h1, h2, h3, h4]}
    params: {duration: 1, bitrate: 20mbit}
concurrency: 4
allow_host_overlap: [big]
bandwidth_budget: 100mbit
"""


@pytest.mark.slow
def test_pairs_star_and_mesh_run_concurrently_over_ssh(fleet: SshLab, tmp_path: Path) -> None:
    spec_path = fleet.spec_file(tmp_path / "c.yaml", "sshfleet", HOSTS, CONCURRENT)
    root = ResultsRoot(tmp_path / "r")
    result = fleet.run(lambda: run_campaign(load_spec(spec_path), root))
    assert result.total == 2 + 4 + 12
    assert result.ok == result.total, [e.reason for e in result.failed]
    docs = [ResultsRoot.read(f) for f in root.files()]
    spans = [
        (d["started_at"], d["ended_at"], d["client"]["name"], d["server"]["name"]) for d in docs
    ]
    for start, end, client, server in spans:
        others = [s for s in spans if s[0] < end and start < s[1] and s[0] != start]
        busy = [h for s in others for h in s[2:]]
        assert client not in busy, f"{client} in two runs at once"
        if server != "big":
            assert server not in busy, f"{server} in two runs at once"
    events = sorted([(s[0], 1) for s in spans] + [(s[1], -1) for s in spans])
    level = most = 0
    for _, step in events:
        level += step
        most = max(most, level)
    assert 2 <= most <= 4  # concurrent, within the limit
    for d in docs:
        assert d["client"]["kind"] == "ssh" and d["client"]["facts"]["iperf3_version"]
        assert d["labels"]["instance_type"] == f"lab.{d['client']['name']}"
    raw = b"".join(f.read_bytes() for f in root.path.rglob("*") if f.is_file())
    assert b"PRIVATE KEY" not in raw and str(fleet.client_key.private).encode() not in raw


def test_an_unknown_host_key_stops_the_campaign_before_anything(
    fleet: SshLab, tmp_path: Path
) -> None:
    spec_path = fleet.spec_file(
        tmp_path / "c.yaml",
        "refused",
        ["h1", "h2"],
        "tests: [{name: t, client: h1, server: h2, params: {duration: 1}}]\n",
    )
    text = spec_path.read_text().replace(str(fleet.known_hosts), str(tmp_path / "kh"))
    (tmp_path / "kh").write_text(fleet.sshd["h1"].known_hosts_line)  # h2 is unknown
    spec_path.write_text(text)
    res = subprocess.run(
        fleet.netfleet("run", str(spec_path), "--results", str(tmp_path / "r")),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 4, res.stdout + res.stderr
    assert "unknown SSH host key" in res.stderr and "ssh-keyscan" in res.stderr
    assert not (tmp_path / "r").exists()


@pytest.mark.slow
def test_a_host_that_dies_fails_its_run_and_the_stray_is_stopped_later(
    fleet: SshLab, tmp_path: Path
) -> None:
    """h1's sshd is killed (listener and sessions, by PID) while h1 runs a client: that run
    fails at once with the reason, the other pair goes on; once h1 is back, --resume stops the
    process the dead session left (or finds it gone) and redoes the failed run."""
    spec_path = fleet.spec_file(
        tmp_path / "c.yaml",
        "dies",
        ["h1", "h2", "h3", "h4"],
        """\
        tests:
          - name: pairs
            topology: {kind: pairs, hosts: [h1, h2, h3, h4]}
            params: {duration: 4, bitrate: 20mbit}
            timeout: 120
        concurrency: 2
        """,
    )
    root = ResultsRoot(tmp_path / "r")

    journal = journal_path(root.path, "dies")

    class KillH1(SilentReporter):
        """Kill h1 once its client runs (journaled), not after a fixed delay: on a loaded
        machine the session may not be up yet, and the run would fail to connect instead."""

        def run_started(self, run):  # type: ignore[no-untyped-def]
            if run.client == "h1":
                self._when_h1_runs(asyncio.get_running_loop(), time.monotonic() + 20)

        def _when_h1_runs(self, loop, give_up):  # type: ignore[no-untyped-def]
            running = journal.exists() and any(
                r["event"] == "process" and r["host"] == "h1" for r in read_records(journal)
            )
            if running or time.monotonic() > give_up:
                loop.call_later(1.0, fleet.stop, "h1")
            else:
                loop.call_later(0.1, self._when_h1_runs, loop, give_up)

    try:
        result = fleet.run(lambda: run_campaign(load_spec(spec_path), root, KillH1()))
        by_client = {e.client.name: e for e in result.envelopes}
        assert by_client["h3"].status == "ok"
        h1 = by_client["h1"]
        assert h1.status == "failed"
        assert "lost the SSH connection" in (h1.reason or "")
        # the run's own time, not the test's (which adds four hosts' setup: 35 s once under
        # load 14); its timeout is 120 s, so half of it still tells "at once" from "timed out"
        took = datetime.fromisoformat(h1.ended_at) - datetime.fromisoformat(h1.started_at)
        assert took.total_seconds() < 60, "a lost connection must not wait for the run's timeout"
        opened = [r for r in read_records(journal) if r["event"] == "process"]
        stray = [r for r in opened if r["host"] == "h1"]
        assert stray, "the client on h1 was journaled"
    finally:
        fleet.start("h1")
    again = fleet.run(lambda: run_campaign(load_spec(spec_path), root, resume=True))
    assert [e.client.name for e in again.envelopes] == ["h1"]
    assert again.ok == 1
    outcomes = {
        (r["host"], r["pid"]): r["outcome"]
        for r in read_records(journal_path(root.path, "dies"))
        if r["event"] == "stray"
    }
    assert {outcomes[(r["host"], r["pid"])] for r in stray} <= {"killed", "gone"}
    assert not any(alive(r["pid"]) for r in stray)


@pytest.mark.slow
def test_kill_9_of_the_controller_over_ssh_then_resume(fleet: SshLab, tmp_path: Path) -> None:
    spec_path = fleet.spec_file(
        tmp_path / "c.yaml",
        "crashssh",
        ["h1", "h2", "h3", "h4"],
        """\
        tests:
          - name: quick
            topology: {kind: pairs, hosts: [h1, h2]}
            params: {duration: 1, bitrate: 20mbit}
          - name: long
            topology: {kind: pairs, hosts: [h3, h4]}
            params: {duration: 4, bitrate: 20mbit}
        """,
    )
    results = tmp_path / "r"
    journal = journal_path(results, "crashssh")
    log = tmp_path / "controller.err"  # its errors (in a file: a pipe nobody reads fills up)
    with log.open("wb") as err:
        proc = subprocess.Popen(
            fleet.netfleet("run", str(spec_path), "--results", str(results)),
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    killed = killed_mid_run(
        proc, journal, lambda r: "long" in r["run_key"], settle=1, log=log, held=True
    )
    with killed as pids:
        # held (SIGSTOP) before the kill: strays still when the resume looks
        assert all(alive(p) for p in pids), "remote server and client outlive the controller"
        res = subprocess.run(
            fleet.netfleet("run", str(spec_path), "--results", str(results), "--resume"),
            capture_output=True,
            text=True,
            timeout=90,
        )
        assert res.returncode == 0, res.stdout + res.stderr
        assert res.stdout.count("stopped a stray iperf3") == 2, res.stdout[:1500]
        outcomes = {r["pid"]: r["outcome"] for r in read_records(journal) if r["event"] == "stray"}
        strays_match(outcomes, pids)
        assert not any(alive(p) for p in pids)
        docs = [ResultsRoot.read(f) for f in ResultsRoot(results).files()]
        assert sorted((d["test"], d["status"]) for d in docs) == [("long", "ok"), ("quick", "ok")]


def test_inventory_check_reports_each_host(fleet: SshLab, tmp_path: Path) -> None:
    import yaml

    entries = [{"name": h, **fleet.host(h)} for h in ("h1", "h2")]
    entries[1]["known_hosts"] = str(tmp_path / "kh")
    (tmp_path / "kh").write_text("")
    inventory = tmp_path / "hosts.yaml"
    inventory.write_text(yaml.safe_dump(entries))
    res = subprocess.run(
        fleet.netfleet("inventory", "check", str(inventory), "--format", "json"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 4, res.stdout + res.stderr
    import json

    rows = {r["host"]: r for r in json.loads(res.stdout)["rows"]}
    assert rows["h1"]["ready"] == "ok" and rows["h1"]["iperf3"].startswith("3.")
    assert rows["h2"]["ready"] == "NO" and "unknown SSH host key" in rows["h2"]["detail"]


def test_issue_36_an_ssh_host_s_engine_cpu_is_read_from_its_own_pids(
    fleet: SshLab, tmp_path: Path
) -> None:
    """iperf2 reports no CPU: netfleet reads the processes it started on both SSH hosts
    (their /proc/PID/stat, by a command), as it reads local ones; 001d0e3 recorded nothing."""
    body = """\
tests:
  - {name: i2, engine: iperf2, client: h3, server: h4, params: {duration: 4}}
"""
    spec_path = fleet.spec_file(tmp_path / "cpu.yaml", "sshcpu", ["h3", "h4"], body)
    root = ResultsRoot(tmp_path / "r")
    result = fleet.run(lambda: run_campaign(load_spec(spec_path), root))
    [env] = result.envelopes
    assert env.status == "ok", env.reason
    own = env.notes["engine_cpu"]
    assert own["source"].startswith("/proc/PID/stat"), own
    assert 0 < own["client"] <= 100 and 0 <= own["server"] <= 100, own
