"""Suite-wide: the order files run in, and no simulated lab left behind by a stopped test.

Ordering: the files that hold a ``slow`` test are collected first. ``scripts/test.sh`` runs
pytest in four xdist workers, ``--dist loadfile --no-loadscope-reorder``: a worker takes one file
at a time, in collection order. Starting with the long files (real labs, the demo, the cloud's
kill-9 walks) keeps one of them from starting last and running alone. The order of tests inside
a file, and of the other files, is unchanged.

Priority: a ``netns`` test (a real lab: shaped links, rates checked against their shapers) runs
at nice :data:`LAB_NICE`, and so does every process it starts (iperf3, the lab's helpers). The
workers share two cores; most tests wait (on a lab's run, a subprocess, moto), but a CPU-bound
one beside a lab would starve its sender, and the lab would measure the machine instead of its
shaper (the demo's steady host 3.1 % low once at two workers; a 200 Mbit/s shaper read as 187
at three). At a higher priority the lab
gets the CPU it needs first, as on an idle machine, and the CPU-bound tests take the rest.

Labs: a sim-backed test (``netfleet run`` against moto with ``backing: sim``) has its
controller bring a lab up under ``tmp_path/[cloud/]<campaign>/sim/``. When pytest is
interrupted (Ctrl-C, or SIGTERM, turned into the same KeyboardInterrupt here), ``subprocess.run``
SIGKILLs that controller a quarter second later, mid-release: the fixture below then takes down
what it left (netfleet_sim.labs' checks: a dead controller, namespaces named for the lab), also
when the test failed. After a test that passed, a lab it left is an error of that test.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Generator, Iterator
from pathlib import Path
from types import FrameType

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    slow_files = {item.path for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: item.path not in slow_files)  # a stable sort: order kept within


#: the nice value of a ``netns`` test's thread and of what it starts (root: a negative one)
LAB_NICE = -10


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None]:
    """A ``netns`` test — its fixtures' setup and teardown too — at :data:`LAB_NICE` (not a
    ``solo`` one: the delay line's timing, alone after the rest, as it was measured). Linux
    keeps a nice value a thread (this one: the worker's main thread, where tests run); the
    threads and processes it starts inherit it; it is set back after the test."""
    lab = item.get_closest_marker("netns") is not None
    if not lab or item.get_closest_marker("solo") is not None or os.geteuid() != 0:
        return (yield)  # (a solo test runs alone, its tools at the priority it gives them)
    before = os.getpriority(os.PRIO_PROCESS, 0)
    os.setpriority(os.PRIO_PROCESS, 0, LAB_NICE)
    try:
        return (yield)
    finally:
        os.setpriority(os.PRIO_PROCESS, 0, before)


def _interrupted(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _sigterm_interrupts() -> None:
    """SIGTERM (kill PID) stops pytest as Ctrl-C does: fixtures' finalizers run (labs, moto,
    processes) instead of the process vanishing with them. Set where SIGTERM has no handler:
    at the start, and again before each test (a test may have set SIGTERM back to SIG_DFL)."""
    in_main = threading.current_thread() is threading.main_thread()
    if in_main and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _interrupted)


def pytest_configure(config: pytest.Config) -> None:
    _sigterm_interrupts()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item,
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call":
        item.stash[_PASSED] = report.passed
    return report


_PASSED = pytest.StashKey[bool]()


def sim_lab_dirs(root: Path) -> list[Path]:
    """The sim backing's lab directories under a test's cloud state (``root`` itself or
    ``root/cloud``, as the tests point ``NETFLEET_CLOUD_DIR`` or ``--state-dir``)."""
    sims = [*root.glob("*/sim"), *root.glob("cloud/*/sim")]
    if not sims:
        return []  # the common case: nothing imported, nothing listed
    from netfleet_sim import labs

    return [d for sim in sims for d in labs.labs(sim.parent.parent, sim.parent.name)]


def take_down_left_labs(root: Path) -> list[str]:
    """Take down every lab under ``root`` whose namespaces exist and whose controller is gone
    (the checks of :func:`netfleet_sim.labs.take_down`); the names of those taken down."""
    dirs = sim_lab_dirs(root)
    if not dirs:
        return []
    from netfleet_sim import labs

    run_netns = Path("/run/netns")  # where `ip netns add` names them
    live = set(os.listdir(run_netns)) if run_netns.is_dir() else set()
    taken = []
    for d in dirs:
        if not any(ns.startswith(f"nf-{d.name}-") for ns in live):
            continue  # nothing of it on the machine (a test's stand-in directory)
        outcome = labs.release_campaign(d.parent.parent.parent, d.parent.parent.name, [d])
        if outcome[0].outcome == "released":
            taken.append(d.name)
    return taken


@pytest.fixture(autouse=True)
def _no_sim_lab_left(request: pytest.FixtureRequest) -> Iterator[None]:
    _sigterm_interrupts()
    # the test's fixture values, kept here: pytest drops ``item.funcargs`` when a run is
    # interrupted, before the session's last teardown reaches this fixture
    values = getattr(request.node, "funcargs", None)
    if values is None:
        values = {}
    yield
    tmp = values.get("tmp_path")
    if not isinstance(tmp, Path):
        return
    taken = take_down_left_labs(tmp)
    if taken and request.node.stash.get(_PASSED, False):
        pytest.fail(f"the test left sim lab(s) {', '.join(taken)} up (taken down now)")
