"""The suite's own machinery: a ``netns`` test, and every process it starts, runs at the lab
priority (tests/conftest.py's LAB_NICE: the xdist workers share two cores, and a lab's sender
must not be starved by a CPU-bound test beside it); the other tests at the worker's own."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.conftest import LAB_NICE

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="a negative nice value needs root")


def _nice_of_a_child() -> int:
    """The nice value of a process started now (field 19 of its /proc/PID/stat)."""
    out = subprocess.run(["cat", "/proc/self/stat"], capture_output=True, text=True, check=True)
    return int(out.stdout.rsplit(")", 1)[1].split()[16])


@pytest.mark.netns
@needs_root
def test_a_lab_test_and_what_it_starts_run_at_the_lab_priority() -> None:
    assert os.getpriority(os.PRIO_PROCESS, 0) == LAB_NICE
    assert _nice_of_a_child() == LAB_NICE


@needs_root
def test_another_test_runs_at_the_worker_s_own_priority() -> None:
    assert os.getpriority(os.PRIO_PROCESS, 0) != LAB_NICE
    assert _nice_of_a_child() != LAB_NICE
