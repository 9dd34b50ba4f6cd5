"""Issue 9 case 7: silence that reads as success. A missing input directory and an unknown lab
are errors (exit 2), and nothing is created for them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def netfleet(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "netfleet", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
    )


def test_ingest_of_a_missing_directory_is_an_error_and_creates_nothing(tmp_path: Path) -> None:
    done = netfleet("ingest", "-r", str(tmp_path / "no" / "such"), "--catalog", "cat", cwd=tmp_path)
    assert done.returncode == 2
    assert "not a directory" in done.stderr
    assert not (tmp_path / "cat").exists()


def test_lab_down_of_an_unknown_lab_says_so(tmp_path: Path) -> None:
    done = netfleet("lab", "down", "typo", "--state-dir", str(tmp_path / "st"), cwd=tmp_path)
    assert done.returncode == 2
    assert "no lab named 'typo'" in done.stderr


CHILD = """
import asyncio, signal
from netfleet.hosts.local import LocalHost
signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # as inherited from a launcher that ignores it
res = asyncio.run(LocalHost(name="l", address="127.0.0.1").run(["sh", "-c", "exit 3"]))
print("rc", res.returncode)
"""


def test_return_codes_are_real_under_an_inherited_sigchld_ignore(tmp_path: Path) -> None:
    """The stray asyncio "Unknown child process pid N, will report returncode 255": SIGCHLD
    ignored by whoever started netfleet (inherited across exec) let the kernel reap our
    children. netfleet restores the default before starting any."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert "rc 3" in done.stdout
    assert "Unknown child process" not in done.stderr


RACE = """
import asyncio, signal, time, warnings
warnings.simplefilter("ignore", DeprecationWarning)
from netfleet.hosts.local import LocalHost

async def main():
    proc = await LocalHost(name="l", address="127.0.0.1").start(["sh", "-c", "sleep 0.3; exit 3"])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # no await: the loop (and its child watcher) cannot run
        with open(f"/proc/{proc.pid}/stat") as fh:
            if fh.read().rsplit(") ", 1)[-1].startswith("Z"):  # exited, not yet reaped
                break
    proc.send(signal.SIGTERM)  # a stop racing the process's own exit (an adaptive stop, say)
    print("rc", await proc.wait(10))

watcher = asyncio.SafeChildWatcher()  # reaps on SIGCHLD in the loop: the race made certain
asyncio.set_child_watcher(watcher)
loop = asyncio.new_event_loop()
asyncio.set_event_loop(loop)
watcher.attach_loop(loop)
loop.run_until_complete(main())
"""


@pytest.mark.skipif(sys.version_info >= (3, 14), reason="SafeChildWatcher is gone in 3.14")
def test_a_signal_racing_the_exit_keeps_the_real_return_code(tmp_path: Path) -> None:
    """The second source of "Unknown child process pid N, will report returncode 255": a signal
    sent through asyncio's send_signal polls (and so reaps) a child that has just exited, before
    asyncio's child watcher (CPython gh-87744, fixed in 3.13). netfleet signals by PID itself."""
    done = subprocess.run(
        [sys.executable, "-c", RACE], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert "rc 3" in done.stdout
    assert "Unknown child process" not in done.stderr


def test_an_empty_csv_cheat_sheet_says_why_on_stderr(tmp_path: Path) -> None:
    """Client-only results under the default receiver-side cheat sheet: CSV used to be a bare
    header, exit 0. The notes now go to stderr."""
    from netfleet.catalog import ingest
    from netfleet.store import ResultsRoot
    from tests.test_catalog import make_envelope

    root = ResultsRoot(tmp_path / "r")
    root.write(make_envelope("tcp_1stream", "run-1"))
    ingest(root, tmp_path / "cat")
    done = netfleet(
        "cheatsheet", "--catalog", "cat", "--campaign", "nosuch", "--format", "csv", cwd=tmp_path
    )
    assert done.returncode == 0
    assert done.stdout.strip().startswith("instance_type,direction,runs")
    assert len(done.stdout.strip().splitlines()) == 1
    assert "note: no rows" in done.stderr
