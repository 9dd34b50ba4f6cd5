"""The data path's worker pools see the environment as it is when the pool is made, not as it
was when the process's fork server started (a notebook setting AWS credentials after its first
import; CI found lazy streams reading S3 with none); a worker ends with the process that made
its pool, also where pidfds are refused."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import textwrap

import pytest

from netfleet.children import start_ticks
from netfleet.workers import process_pool


def _env(name: str) -> str | None:
    return os.environ.get(name)


def test_workers_get_the_environment_of_the_pools_maker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NETFLEET_TEST_GONE", "old")
    monkeypatch.delenv("NETFLEET_TEST_LATE", raising=False)
    with process_pool(2) as first:  # starts the fork server with the environment as it is now
        assert first.submit(_env, "NETFLEET_TEST_GONE").result() == "old"
        assert first.submit(_env, "NETFLEET_TEST_LATE").result() is None
    monkeypatch.setenv("NETFLEET_TEST_LATE", "set after the fork server started")
    monkeypatch.delenv("NETFLEET_TEST_GONE")
    with process_pool(2) as second:
        got = [second.submit(_env, "NETFLEET_TEST_LATE").result() for _ in range(4)]
        assert got == ["set after the fork server started"] * 4
        assert second.submit(_env, "NETFLEET_TEST_GONE").result() is None


#: a worker's watch of its maker in a process of its own (``python -c``): pidfds refused
#: (``os.pidfd_open`` raising ENOSYS) when asked, then ``_end_with`` the maker given; prints
#: "watching" once the watch runs, then sleeps (ended only by the watch)
_WATCHER = textwrap.dedent("""
    import errno, os, sys, time
    from netfleet import workers
    pid, started, refuse = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "refuse"
    if refuse:
        def pidfd_open(pid, flags=0):
            raise OSError(errno.ENOSYS, "no pidfds here")
        os.pidfd_open = pidfd_open
    workers._end_with(pid, started)
    print("watching", flush=True)
    time.sleep(120)
""")


@pytest.mark.parametrize("pidfds", ["pidfd", "refuse"])
def test_a_worker_ends_with_the_process_that_made_its_pool(pidfds: str) -> None:
    """The watch ends its process once the maker has ended — through a pidfd, or by the
    maker's start time read each second where pidfds are refused — and at once when the maker
    named is not that process any more (its start time differs)."""
    maker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    watcher = None
    try:
        started = start_ticks(maker.pid)
        assert started is not None
        watcher = subprocess.Popen(
            [sys.executable, "-c", _WATCHER, str(maker.pid), str(started), pidfds],
            stdout=subprocess.PIPE,
        )
        assert watcher.stdout is not None
        assert watcher.stdout.readline() == b"watching\n"  # the maker runs: it waits
        assert select.select([watcher.stdout], [], [], 1.5)[0] == []  # (nothing more, alive)
        assert watcher.poll() is None
        maker.kill()
        maker.wait()
        assert watcher.wait(timeout=30) == 1  # ended by its watch, not its sleep
        # a maker named with another start time (its PID reused): ended before it watches
        other = subprocess.run(
            [sys.executable, "-c", _WATCHER, str(os.getpid()), str(started + 1), pidfds],
            capture_output=True, timeout=60, check=False,
        )  # fmt: skip
        assert (other.returncode, other.stdout) == (1, b"")
    finally:
        for proc in (maker, watcher):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
        if watcher is not None and watcher.stdout is not None:
            watcher.stdout.close()
