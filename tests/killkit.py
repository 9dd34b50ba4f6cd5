"""The kill -9 harness: a ``netfleet run`` controller killed with SIGKILL while a chosen run's
iperf3 server and client are running (the pids its journal recorded), and those two processes
killed at the end whatever the test found — for tests/test_resume.py, test_ssh.py and
test_host_lifecycle.py."""

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


def run_processes(
    journal: Path,
    proc: subprocess.Popen[Any],
    picks: Picks,
    timeout: float = 60,
    log: Path | None = None,
) -> list[int]:
    """The pids of the two processes (server, client) the journal recorded for the run
    ``picks`` chooses, once both are there; the test fails when that run never started (within
    ``timeout`` s, or before the controller ``proc`` ended: then with the end of ``log``, the
    file its stderr went to)."""
    deadline = time.monotonic() + timeout
    pids: list[int] = []
    while time.monotonic() < deadline and len(pids) < 2 and proc.poll() is None:
        recs = read_records(journal)
        keys = {r["run_key"] for r in recs if r["event"] == "run_started" and picks(r)}
        pids = [r["pid"] for r in recs if r["event"] == "process" and r["run_key"] in keys]
        time.sleep(0.1)
    if len(pids) < 2 and proc.poll() is not None:
        said = log.read_text(errors="replace")[-3000:] if log is not None else "(not kept)"
        raise AssertionError(f"the controller exited ({proc.returncode}) before the run: {said}")
    assert len(pids) == 2, "the long run never started"
    return pids


def wait_identified(
    journal: Path, pids: list[int], proc: subprocess.Popen[Any], timeout: float = 60
) -> None:
    """Wait until the controller ``proc`` has journaled the identity (start time, boot id,
    namespace) of each of ``pids``: it reads it a moment after the launch (over SSH, seconds on
    a busy machine), and a resume rightly refuses to stop a stray whose record lacks it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        known = {
            r["pid"]
            for r in read_records(journal)
            if r["event"] in ("process", "process_identity") and r.get("identity")
        }  # a local process's identity is in its record; a remote one's follows it
        if known.issuperset(pids):
            return
        time.sleep(0.05)
    raise AssertionError(f"the controller journaled no identity of {pids} (rc {proc.poll()})")


def hold(pids: list[int]) -> None:
    """Stop the dead controller's processes where they are (SIGSTOP), once the test has seen
    them outlive it: they stay strays for the resume to find on a machine however busy (a run of
    6-8 s ended before the resume looked, and there was nothing to stop). iperf3 handles
    SIGTERM, so the resume's SIGTERM waits and its SIGKILL after the grace ends them."""
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)


@contextmanager
def killed_mid_run(
    proc: subprocess.Popen[Any],
    journal: Path,
    picks: Picks,
    *,
    timeout: float = 60,
    settle: float = 0.0,
    log: Path | None = None,
    identified: bool = False,
) -> Iterator[list[int]]:
    """SIGKILL the controller ``proc`` (no cleanup of any kind) ``settle`` s after the run
    ``picks`` chooses has its two processes (:func:`run_processes`) — and, with
    ``identified``, not before their identities are journaled (:func:`wait_identified`: a test
    that expects the resume to stop them needs it); yield their pids, and kill those still alive
    when the block ends."""
    pids: list[int] = []
    try:
        pids = run_processes(journal, proc, picks, timeout, log)
        seen = time.monotonic()
        if identified:
            wait_identified(journal, pids, proc, timeout)
        time.sleep(max(0.0, seen + settle - time.monotonic()))
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
