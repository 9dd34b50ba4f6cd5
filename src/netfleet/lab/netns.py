"""Named network namespaces (``ip netns``): create, inspect, empty of processes, delete."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
from pathlib import Path

from netfleet.lab.commands import in_netns, run

log = logging.getLogger(__name__)

#: Where ``ip netns add`` pins named namespaces (iproute2's NETNS_RUN_DIR).
NETNS_DIR = Path("/run/netns")


def exists(ns: str) -> bool:
    return (NETNS_DIR / ns).exists()


def identity(ns: str) -> str | None:
    """The namespace's identity while it exists, ``INODE:CTIME_NS`` of its nsfs inode: tells
    ours from a same-named one. The inode number alone does not: the kernel hands a deleted
    namespace's number to the next namespace made (a lab's ``ip netns delete`` then ``add``
    gives the same inode), the inode's change time (ns) is when that namespace was made."""
    try:
        return _identity(os.stat(NETNS_DIR / ns))
    except FileNotFoundError:
        return None


def _identity(st: os.stat_result) -> str:
    return f"{st.st_ino}:{st.st_ctime_ns}"


def _is(st: os.stat_result, recorded: str | int) -> bool:
    """Is the nsfs inode ``st`` the namespace ``recorded`` (an int: its number alone)?"""
    return st.st_ino == recorded if isinstance(recorded, int) else _identity(st) == recorded


def matches(recorded: str | int, ns: str) -> bool:
    """Is ``ns`` (still) the namespace recorded as ``recorded``? A lab state written before
    identities recorded the change time holds the inode number alone (an int): that is
    compared alone."""
    try:
        return _is(os.stat(NETNS_DIR / ns), recorded)
    except FileNotFoundError:
        return False


def add(ns: str) -> None:
    run(["ip", "netns", "add", ns])


def disable_ipv6(ns: str) -> None:
    """No IPv6 in the namespace (no router solicitations, no DAD): only test traffic flows."""
    in_netns(
        ns,
        "sysctl",
        "-q",
        "-w",
        "net.ipv6.conf.all.disable_ipv6=1",
        "net.ipv6.conf.default.disable_ipv6=1",
    )


def delete(ns: str) -> None:
    run(["ip", "netns", "delete", ns])


def pids(ns: str) -> list[int]:
    """Processes whose network namespace is ``ns`` (``ip netns pids``)."""
    if not exists(ns):
        return []
    return [int(p) for p in run(["ip", "netns", "pids", ns]).split()]


def in_namespace(pid: int, ns_identity: str | int) -> bool:
    """Is ``pid`` (still) a process of the namespace whose :func:`identity` is
    ``ns_identity`` (an int: a state's inode number alone, see :func:`matches`)?"""
    try:
        return _is(os.stat(f"/proc/{pid}/ns/net"), ns_identity)
    except OSError:
        return False


def stop_processes(ns: str, *, grace: float = 2.0) -> list[int]:
    """SIGTERM every process in ``ns`` (by PID), SIGKILL what is left after ``grace`` s. Each
    PID is checked to be in ``ns`` right before its signal (a PID that ended and was reused by
    another process between the listing and the signal is left alone)."""
    me = os.getpid()
    ours = identity(ns)
    found = [p for p in pids(ns) if p != me]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        left = [p for p in pids(ns) if p != me]
        for pid in left:
            if ours is not None and not in_namespace(pid, ours):
                continue
            log.info("sending %s to pid %d in namespace %s", sig.name, pid, ns)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + grace
        while left and time.monotonic() < deadline:
            time.sleep(0.05)
            left = [p for p in pids(ns) if p != me]
        if not left:
            break
    return found
