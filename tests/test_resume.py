"""The campaign journal, --resume and strays, with real iperf3 on loopback — including a
controller killed with SIGKILL mid-run."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from netfleet.errors import StoreError
from netfleet.hosts.local import LocalHost
from netfleet.plan import expand
from netfleet.runner import run_campaign
from netfleet.runner.journal import Journal, journal_path, read_records
from netfleet.runner.resume import select
from netfleet.runner.strays import identity, sweep
from netfleet.spec import load_spec
from netfleet.spec.scheduling import RetryPolicy
from netfleet.store import ResultsRoot
from tests.killkit import alive, killed_mid_run, strays_match, wait_exec


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """A long-running process standing in for a stray server; always stopped by its PID."""
    proc = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        wait_exec(proc.pid, "sleep")  # else a sweep may read it as gone
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


# ------------------------------------------------------------------------------------ journal
def test_journal_is_created_at_its_first_record_and_locked(tmp_path: Path) -> None:
    path = journal_path(tmp_path, "c")
    with Journal(path) as j:
        assert not path.exists()  # nothing written until something happens
        j.session("fresh", planned=2, todo=2)
        assert path.exists()
        with pytest.raises(StoreError, match="another netfleet is running"), Journal(path):
            pass
    with Journal(path) as j:  # released on close (and when the process dies)
        assert j.history.sessions == 1


def test_a_torn_last_record_is_ignored_and_never_glued_to(tmp_path: Path) -> None:
    path = journal_path(tmp_path, "c")
    with Journal(path) as j:
        j.run_started("k1", 0)
    with open(path, "ab") as fh:
        fh.write(b'{"event":"run_finished","run_key":"k1","sta')  # kill -9 mid-write
    with Journal(path) as j:
        assert j.history.unfinished == {"k1"}
        j.run_finished("k1", "ok", "k1-x", None, [])
    events = [r["event"] for r in read_records(path)]
    assert events == ["run_started", "run_finished"]
    with Journal(path) as j:
        assert j.history.outcomes == {"k1": "ok"}


def test_select_skips_done_and_retries_by_policy(tmp_path: Path) -> None:
    p = tmp_path / "s.yaml"
    p.write_text(
        "campaign: c\nhosts: {a: {kind: local}, b: {kind: local}}\n"
        "tests: [{name: t, client: a, server: b, matrix: {parallel: [1, 2, 3, 4, 5]}}]\n"
    )
    runs = expand(load_spec(p))
    k = [r.run_key for r in runs]
    with Journal(journal_path(tmp_path, "c")) as j:
        j.session("fresh", 5, 5)
        for key, status in zip(k[:4], ["ok", "failed", "interrupted", "failed"], strict=True):
            j.run_started(key, 0)
            j.run_finished(key, status, key, None, [])
        j.run_started(k[3], 0)
        j.run_finished(k[3], "failed", k[3], None, [])  # a second attempt
        j.run_started(k[4], 0)  # the controller died during it
        chosen = select(runs, j, RetryPolicy())
        assert [r.run_key for r in chosen.todo] == k[1:]
        assert chosen.done == k[:1]
        chosen = select(runs, j, RetryPolicy(on=["interrupted"], max_attempts=2))
        assert [r.run_key for r in chosen.todo] == [k[2], k[4]]
        assert chosen.kept_failed == [k[1], k[3]]
        j.session("fresh", 5, 5)  # a fresh run forgets outcomes
        assert len(select(runs, j, RetryPolicy()).todo) == 5


# ------------------------------------------------------------------------------------- strays
def test_sweep_stops_a_recorded_process_by_pid(tmp_path: Path) -> None:
    host = LocalHost("a", "127.0.0.1")

    async def scenario() -> None:
        proc = await host.start(["sleep", "300"])
        try:
            with Journal(journal_path(tmp_path, "c")) as j:
                who = await identity(host, proc.pid)
                assert who is not None
                # as run_campaign records it at launch: identity and proof of the launch token
                j.process(
                    "run-1", "a", proc.pid, ["sleep", "300"], "server", who, proc.launch_token
                )
                assert await sweep(j, {"a": host}) == {"killed": 1}
                assert await proc.wait(5) == -signal.SIGTERM
                assert not j.history.open_processes
                assert await sweep(j, {"a": LocalHost("a", "127.0.0.1")}) == {}
        finally:
            await proc.stop(grace=1, first=signal.SIGKILL)

    asyncio.run(scenario())


def test_sweep_leaves_a_recycled_pid_alone(
    tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    with Journal(journal_path(tmp_path, "c")) as j:
        argv = ["iperf3", "--server", "--port", "20007"]  # what we had started with that PID
        j.process("run-1", "a", sleeper.pid, argv, "server")
        j.process("run-1", "gone-host", 1, ["iperf3"], "client")
        counts = asyncio.run(sweep(j, {"a": LocalHost("a", "127.0.0.1")}))
        assert counts == {"replaced": 1, "unreachable": 1}
        assert sleeper.poll() is None, "a process that is not ours must survive"
        assert list(j.history.open_processes) == [("gone-host", 1)]  # checked again next time


def test_a_forged_process_record_never_makes_netfleet_kill(
    tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    """A line appended to the journal by someone else (the results directory may be shared)
    names a live process netfleet never started, with the right argv: it must survive."""
    path = journal_path(tmp_path, "c")
    with Journal(path) as j:
        j.session("fresh", 1, 1)
    forged = {"event": "process", "host": "a", "pid": sleeper.pid, "argv": ["sleep", "300"]}
    with path.open("a") as fh:
        fh.write(json.dumps({**forged, "role": "server", "run_key": "x"}) + "\n")
    said: list[str] = []
    with Journal(path) as j:
        counts = asyncio.run(sweep(j, {"a": LocalHost("a", "127.0.0.1")}, said.append))
    assert counts == {"unverified": 1}
    assert sleeper.poll() is None, "a process netfleet cannot prove it started must survive"
    assert any("left sleep" in m and "by hand" in m for m in said)
    # a forged identity that does not match the live process is refused too
    with Journal(path) as j:
        j.process("x", "a", sleeper.pid, ["sleep", "300"], "server")
        j.process_identity("a", sleeper.pid, {"start": "1", "boot_id": "b", "netns": "n"})
        assert asyncio.run(sweep(j, {"a": LocalHost("a", "127.0.0.1")})) == {"unverified": 1}
    assert sleeper.poll() is None


# ------------------------------------------------------------------------------------- resume
SPEC = """\
campaign: resume
hosts:
  a: {kind: local}
  b: {kind: local}
tests:
  - {name: quick, client: a, server: b, params: {duration: 1, bitrate: 50mbit}}
  - {name: flaky, client: a, server: b, params: {duration: 1, congestion: nosuchcc}}
retry: {max_attempts: 2}
"""


def test_resume_skips_completed_runs_and_retries_failed_ones(tmp_path: Path) -> None:
    p = tmp_path / "s.yaml"
    p.write_text(SPEC)
    root = ResultsRoot(tmp_path / "r")
    first = asyncio.run(run_campaign(load_spec(p), root))
    assert [e.status for e in first.envelopes] == ["ok", "failed"]
    again = asyncio.run(run_campaign(load_spec(p), root, resume=True))
    assert again.total == 1 and again.done_before == 1
    assert [e.test for e in again.envelopes] == ["flaky"]
    last = asyncio.run(run_campaign(load_spec(p), root, resume=True))
    assert last.total == 0 and len(last.kept_failed) == 1  # max_attempts reached
    assert len(list(root.files())) == 3
    fresh = asyncio.run(run_campaign(load_spec(p), root))  # without --resume: everything again
    assert fresh.total == 2


LONG = """\
campaign: crash
hosts:
  a: {kind: local}
  b: {kind: local}
tests:
  - {name: quick, client: a, server: b, params: {duration: 1, bitrate: 50mbit}}
  - {name: long, client: a, server: b, params: {duration: 4, bitrate: 50mbit}}
"""


def netfleet(*args: str) -> list[str]:
    return [sys.executable, "-m", "netfleet", *args]


@pytest.mark.slow
def test_kill_9_of_the_controller_loses_nothing_and_resume_cleans_up(tmp_path: Path) -> None:
    p = tmp_path / "s.yaml"
    p.write_text(textwrap.dedent(LONG))
    results = tmp_path / "r"
    journal = journal_path(results, "crash")
    proc = subprocess.Popen(
        netfleet("run", str(p), "--results", str(results)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    killed = killed_mid_run(proc, journal, lambda r: r["sequence"] == 1, settle=1, held=True)
    with killed as pids:
        # held (SIGSTOP) before the kill: strays still when the resume looks
        assert all(alive(pid) for pid in pids), "server and client outlive the controller"
        docs = [ResultsRoot.read(f) for f in ResultsRoot(results).files()]
        assert [(d["test"], d["status"]) for d in docs] == [("quick", "ok")]
        res = subprocess.run(
            netfleet("run", str(p), "--results", str(results), "--resume"),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert res.returncode == 0, res.stdout + res.stderr
        assert "resuming: 1 of 2 runs done earlier, 1 to run" in res.stdout
        assert res.stdout.count("stopped a stray iperf3") == 2, res.stdout[:1500]
        assert not any(alive(pid) for pid in pids)
        strays = {r["pid"]: r["outcome"] for r in read_records(journal) if r["event"] == "stray"}
        strays_match(strays, pids)
        docs = [ResultsRoot.read(f) for f in ResultsRoot(results).files()]
        assert sorted((d["test"], d["status"]) for d in docs) == [("long", "ok"), ("quick", "ok")]


def test_results_root_stays_clean_for_readers(tmp_path: Path) -> None:
    p = tmp_path / "s.yaml"
    p.write_text(SPEC)
    root = ResultsRoot(tmp_path / "r")
    asyncio.run(run_campaign(load_spec(p), root))
    # the journal lives in a hidden directory: raw-file readers (catalog, Athena) never see it
    assert all(".netfleet" not in str(f) for f in root.files())
    recs = read_records(journal_path(root.path, "resume"))
    assert [r["event"] for r in recs][:2] == ["session", "run_started"]
    assert all(json.dumps(r) for r in recs)
    finished = [r for r in recs if r["event"] == "run_finished"]
    # every process a run started — its server and client at least, more when a start was
    # tried again (a port taken on a busy machine) — is confirmed stopped when the run ends
    started: dict[str, set[tuple[str, int]]] = {}
    roles: dict[str, set[str]] = {}
    for r in recs:
        if r["event"] == "process":
            started.setdefault(r["run_key"], set()).add((r["host"], r["pid"]))
            roles.setdefault(r["run_key"], set()).add(r["role"])
    assert finished and all(
        roles[f["run_key"]] >= {"server", "client"}
        and {(h, p) for h, p in f["stopped"]} == started[f["run_key"]]
        for f in finished
    ), recs
