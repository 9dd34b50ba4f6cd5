"""Ctrl-C and SIGTERM on a real `netfleet run`: exit 130, servers gone, completed results kept.

Each run is started as an interactive shell starts a command (the only way Ctrl-C reaches it):
SIGINT at its default and not blocked. A process inherits an ignored or blocked SIGINT from the
one that starts it, and Python keeps an ignored SIGINT ignored (the convention by which ``cmd &``
in a script is kept from a Ctrl-C meant for the script). A suite started that way — as
a background command of a script, or under a nohup-like launcher — ignores SIGINT in every
worker, and a `netfleet run` started plainly from one ignores the test's SIGINT: it ran its 60 s
to the end and exited 0 (CI16, CI18). SIGTERM, which no shell ignores for its background
commands, was never affected."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from netfleet.store import ResultsRoot

SPEC = """\
campaign: sig
hosts:
  a: {kind: local}
  b: {kind: local}
tests:
  - {name: quick, client: a, server: b, params: {duration: 1, bitrate: 50mbit}}
  - {name: long, client: a, server: b, params: {duration: 60, bitrate: 50mbit}}
"""

#: ``python -c AS_A_SHELL_STARTS_IT ARGS…`` execs ``python ARGS…`` (same PID) with SIGINT at its
#: default and unblocked, whatever this process has
AS_A_SHELL_STARTS_IT = (
    "import os, signal, sys; "
    "signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT}); "
    "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])"
)


def start_netfleet(*args: str) -> subprocess.Popen[str]:
    """``netfleet ARGS…`` as an interactive shell starts it, its output piped."""
    return subprocess.Popen(
        [sys.executable, "-c", AS_A_SHELL_STARTS_IT, "-m", "netfleet", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@contextlib.contextmanager
def sigint_ignored_and_blocked_here() -> Iterator[None]:
    """This process as a suite started by ``cmd &`` from a script (SIGINT ignored) and from a
    launcher thread that blocks it: what every process started meanwhile inherits."""
    handler = signal.signal(signal.SIGINT, signal.SIG_IGN)
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def children_named(ppid: int, name: str) -> list[int]:
    out = subprocess.run(
        ["ps", "-eo", "pid,ppid,comm"], capture_output=True, text=True, check=True
    ).stdout.splitlines()[1:]
    return [
        int(p)
        for p, pp, comm in (line.split(None, 2) for line in out)
        if int(pp) == ppid and comm.strip() == name
    ]


def stops_cleanly(
    tmp_path: Path, sig: signal.Signals, started_under: contextlib.AbstractContextManager[object]
) -> None:
    """Start a run (inside ``started_under``), send ``sig`` during its long run: it stops."""
    spec = tmp_path / "s.yaml"
    spec.write_text(textwrap.dedent(SPEC))
    results = tmp_path / "res"
    with started_under:
        proc = start_netfleet("run", str(spec), "--results", str(results))
    try:
        deadline = time.monotonic() + 90  # a wait bound, not a speed claim
        # first the quick run's result (its own two iperf3 would fool the wait below)
        while time.monotonic() < deadline and not list(results.rglob("*.json.gz")):
            time.sleep(0.1)
        # wait until the long run's client and server are both up
        while time.monotonic() < deadline and len(children_named(proc.pid, "iperf3")) < 2:
            time.sleep(0.1)
        assert len(children_named(proc.pid, "iperf3")) == 2, "long run never started"
        servers = children_named(proc.pid, "iperf3")
        time.sleep(1.5)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pipe in (proc.stdout, proc.stderr):  # left open when communicate timed out
            if pipe is not None:
                pipe.close()
    assert proc.returncode == 130, err
    assert "interrupted: 1 of 2 runs completed" in err
    docs = sorted(
        (ResultsRoot.read(f) for f in ResultsRoot(results).files()), key=lambda d: d["sequence"]
    )
    assert [d["status"] for d in docs] == ["ok", "interrupted"]
    for pid in servers:
        assert (
            not Path(f"/proc/{pid}").exists()
            or "zombie" in Path(f"/proc/{pid}/status").read_text().lower()
        )


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_stops_run_cleanly(tmp_path: Path, sig: signal.Signals) -> None:
    stops_cleanly(tmp_path, sig, contextlib.nullcontext())


def test_ctrl_c_stops_a_run_started_by_a_suite_that_ignores_it(tmp_path: Path) -> None:
    """The suite's own SIGINT state does not reach the run: started plainly, this run would
    ignore the SIGINT and end with exit 0 after 60 s, as in CI16/CI18."""
    stops_cleanly(tmp_path, signal.SIGINT, sigint_ignored_and_blocked_here())
