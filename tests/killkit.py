"""The kill -9 harness: a ``netfleet run`` controller killed with SIGKILL while a chosen run's
iperf3 server and client are running (the pids its journal recorded), and those two processes
killed at the end whatever the test found — for tests/test_resume.py, test_ssh.py and
test_host_lifecycle.py; and a wait for a started process to run its own program
(:func:`wait_exec`)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from netfleet.runner.journal import read_records

#: which run to wait for: true for its ``run_started`` journal record
Picks = Callable[[dict[str, Any]], bool]


def alive(pid: int) -> bool:
    """The process runs (a zombie does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def wait_exec(pid: int, program: str, timeout: float = 10.0) -> None:
    """Until ``pid`` runs ``program`` (its argv[0]): ``Popen`` returns while the child may still
    be inside exec, its /proc cmdline empty or its launcher's (``setsid``), which a check of
    that PID reads as gone or replaced. ``timeout`` bounds the wait, it is no speed claim."""
    deadline = time.monotonic() + timeout
    while Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0] != program.encode():
        assert time.monotonic() < deadline, f"{pid} never ran {program}"
        time.sleep(0.01)


def run_processes(
    journal: Path,
    proc: subprocess.Popen[Any],
    picks: Picks,
    timeout: float = 300,
    log: Path | None = None,
) -> list[int]:
    """The pids of the two processes (server, client) the journal recorded for the run
    ``picks`` chooses, once both are there; the test fails when that run never started (within
    ``timeout`` s, or before the controller ``proc`` ended: then with the end of ``log``, the
    file its stderr went to). The server is the run's last one: a server that did not listen
    in time (its port taken by another test's iperf3 on this machine, or a busy machine) was
    stopped and another started on the next port — three processes recorded, as CI saw twice
    at more workers. The client starts once a server listens: both are there when it is."""
    deadline = time.monotonic() + timeout
    pids: list[int] = []
    recs: list[dict[str, Any]] = []
    while time.monotonic() < deadline and not pids and proc.poll() is None:
        recs = read_records(journal)
        keys = {r["run_key"] for r in recs if r["event"] == "run_started" and picks(r)}
        known = {(r["host"], r["pid"]) for r in recs if r["event"] == "process_identity"}
        # each process once the journal can prove netfleet started it (its identity: in its
        # record on a local host, a record of its own after it over SSH): killed before that,
        # the resume rightly leaves it alone (under load 14 one was, and a test failed)
        runs: dict[str, dict[str, int]] = {}  # run key → role → its last proven pid
        for r in recs:
            proven = r.get("identity") or (r.get("host"), r.get("pid")) in known
            if r["event"] == "process" and r["run_key"] in keys and proven:
                runs.setdefault(r["run_key"], {})[r["role"]] = r["pid"]
        both = (r for r in runs.values() if "server" in r and "client" in r)
        pids = next(([r["server"], r["client"]] for r in both), [])
        time.sleep(0.1)
    if not pids and proc.poll() is not None:
        said = log.read_text(errors="replace")[-3000:] if log is not None else "(not kept)"
        raise AssertionError(f"the controller exited ({proc.returncode}) before the run: {said}")
    assert pids, f"the run never started its server and client: {recs[-12:]}"
    return pids


def strays_match(outcomes: dict[int, str], pids: list[int]) -> None:
    """The resume's ``stray`` records (pid → outcome) name the run's server and client
    (``pids``), each killed or gone; any other is a server netfleet stopped itself before the
    kill (it did not listen: another port was tried), gone."""
    assert set(pids) <= set(outcomes), (outcomes, pids)
    assert {outcomes[p] for p in pids} <= {"killed", "gone"}, outcomes
    assert all(outcomes[p] == "gone" for p in set(outcomes) - set(pids)), (outcomes, pids)


def hold(pids: list[int]) -> None:
    """Stop a run's processes where they are (SIGSTOP), just before their controller is killed
    (``killed_mid_run(..., held=True)``): they outlive it and stay strays for the resume to find
    on a machine however busy. Left running, a run of 6-8 s ended before the resume looked, and
    there was nothing to stop; and one checked alive after the kill could already have ended on
    its own (its duration over, or SIGPIPE writing to the dead controller: failed CI once, in
    test_cloud_fargate_run). iperf3 handles SIGTERM, so the resume's SIGTERM waits and its
    SIGKILL after the grace ends them."""
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)


@contextmanager
def killed_mid_run(
    proc: subprocess.Popen[Any],
    journal: Path,
    picks: Picks,
    *,
    timeout: float = 300,
    settle: float = 0.0,
    log: Path | None = None,
    held: bool = False,
) -> Iterator[list[int]]:
    """SIGKILL the controller ``proc`` (no cleanup of any kind) ``settle`` s after the run
    ``picks`` chooses has its two processes (:func:`run_processes`); with ``held``, those are
    stopped (:func:`hold`) just before. Yield their pids, and kill those still alive when the
    block ends."""
    pids: list[int] = []
    try:
        pids = run_processes(journal, proc, picks, timeout, log)
        time.sleep(settle)
        if held:
            hold(pids)
        proc.send_signal(signal.SIGKILL)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=10)
    try:
        yield pids
    finally:
        for pid in pids:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
