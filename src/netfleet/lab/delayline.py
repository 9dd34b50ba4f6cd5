"""Links with delay, jitter and loss: the lab's userspace delay line (``native/delayline``).

This kernel has no netem, so a host with ``link:`` in its lab file gets, instead of a veth pair,
two persistent TAP devices: ``eth0`` in its namespace and ``to-<host>`` in the switch namespace
(a bridge port), both made with ``ip tuntap`` and configured exactly like the veth ends they
replace (MTU, address, bridge, shapers). A ``delayline`` process, started in the switch
namespace, attaches to both and forwards between them, holding each packet until its release
time on a timer-ordered queue (CLOCK_MONOTONIC; it sleeps until shortly before and busy-polls the
last 100 µs, at real-time priority). Its PID, start time and argv are recorded in the lab state
*before* it is waited for, so ``down`` always stops it — by PID, after checking that the process
is still the one it started. Deleting the namespaces removes the TAPs.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from netfleet.children import start_ticks
from netfleet.errors import LabError
from netfleet.lab import netns
from netfleet.lab.commands import ip
from netfleet.lab.models import Impairment, Link
from netfleet.lab.state import INTERFACE, LabHost, LabState, Process, state_path

#: Where the bootstrap builds it (``make -C native/delayline``), from this file's place in the repo.
REPO_BINARY = Path(__file__).resolve().parents[3] / "native" / "delayline" / "delayline"
BINARY_ENV = "NETFLEET_DELAYLINE"
READY_TIMEOUT = 10.0
STOP_GRACE = 2.0
#: The ring holds what arrives during one delay at this rate (or 16 MiB, at most 256 MiB):
#: beyond it the line drops (counted as overflow).
RING_RATE = 4e9
RING_MIN = 16 << 20
RING_MAX = 256 << 20
#: Delay lines this process started, kept so they are reaped when stopped (and not reported as
#: leaked while they run: they outlive ``netfleet lab up`` on purpose).
_STARTED: dict[int, subprocess.Popen[bytes]] = {}


def binary() -> Path:
    """The delay line executable: ``$NETFLEET_DELAYLINE``, else the one built in the repo."""
    env = os.environ.get(BINARY_ENV)
    path = Path(env) if env else REPO_BINARY
    if not os.access(path, os.X_OK):
        source = REPO_BINARY.parent
        raise LabError(
            f"the lab's delay line {path} is not built (a host has 'link:' in its lab file)",
            hint=f"build it: make -C {source} (scripts/bootstrap.sh does; needs gcc and make), "
            f"or point {BINARY_ENV} at a built delayline",
        )
    return path


def ring_bytes(link: Link) -> int:
    longest = max(link.out.delay + link.out.jitter, link.in_.delay + link.in_.jitter)
    return int(min(RING_MAX, max(RING_MIN, longest * RING_RATE / 8)))


def _direction(imp: Impairment) -> str:
    """``DELAY_NS,JITTER_NS,LOSS`` as the delay line reads it."""
    return f"{round(imp.delay * 1e9)},{round(imp.jitter * 1e9)},{imp.loss!r}"


def argv(exe: Path, host: LabHost, link: Link) -> list[str]:
    return [
        str(exe),
        "--switch-dev", host.port,
        "--host-netns", str(netns.NETNS_DIR / host.namespace),
        "--host-dev", INTERFACE,
        "--out", _direction(link.out),
        "--in", _direction(link.in_),
        "--ring", str(ring_bytes(link)),
    ]  # fmt: skip


def create_taps(state: LabState, host: LabHost) -> None:
    """The host's eth0 and its switch port as persistent TAPs (in place of a veth pair)."""
    mtu = str(host.mtu)
    for ns, dev in ((host.namespace, INTERFACE), (state.switch, host.port)):
        ip("tuntap", "add", "dev", dev, "mode", "tap", "vnet_hdr", ns=ns)
        ip("link", "set", "dev", dev, "mtu", mtu, ns=ns)


def log_path(state: LabState, host: LabHost, state_dir: str | Path | None = None) -> Path:
    """Where the host's delay line writes its stderr (counters, errors): next to the lab's state
    file. Always derived from the lab and host names, never read back from the state file."""
    return state_path(state.name, state_dir).parent / f".{state.name}-{host.name}.delayline.log"


def start(
    state: LabState, host: LabHost, state_dir: str | Path | None, record: Callable[[], object]
) -> Process:
    """Start the host's delay line in the switch namespace, record it (``record()`` writes the
    state), and wait until it has attached to both TAPs. LabError if it does not come up."""
    assert host.link is not None
    exe = binary()
    cmd = argv(exe, host, host.link)
    log = log_path(state, host, state_dir)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            ["ip", "netns", "exec", state.switch, *cmd],  # `ip netns exec` execs: same PID
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=err,
            start_new_session=True,  # outlives `netfleet lab up`; not hit by its Ctrl-C
        )
    _STARTED[proc.pid] = proc
    # the start time is the fork's (exec keeps it): read now, it identifies the process
    host.delayline = Process(pid=proc.pid, start_ticks=start_ticks(proc.pid) or 0)
    record()
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], READY_TIMEOUT)
    line = proc.stdout.readline() if ready else b""
    proc.stdout.close()
    if line.strip() != b"ready":
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait(timeout=5)
        _STARTED.pop(proc.pid, None)
        said = log.read_text(errors="replace").strip() or "(nothing on stderr)"
        raise LabError(
            f"the delay line for host {host.name!r} did not start: {said}",
            hint=f"run it by hand to see why: ip netns exec {state.switch} " + " ".join(cmd),
        )
    return host.delayline


def is_ours(state: LabState, proc: Process) -> bool:
    """Is ``proc`` still the delay line this lab started: same start time, in the lab's switch
    namespace (the one recorded at ``up``), running a delayline?"""
    if start_ticks(proc.pid) != proc.start_ticks:
        return False
    ino = state.inodes.get(state.switch)
    if ino is None or not netns.in_namespace(proc.pid, ino):
        return False
    try:
        comm = Path(f"/proc/{proc.pid}/comm").read_text().strip()
    except OSError:
        return False
    return comm == "delayline"


def stop(state: LabState, host: LabHost, state_dir: str | Path | None = None) -> None:
    """SIGTERM the host's delay line (SIGKILL after 2 s) if it is still ours; remove its log."""
    proc = host.delayline
    if proc is None:
        return
    child = _STARTED.pop(proc.pid, None)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if not is_ours(state, proc):
            break
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, sig)
        deadline = time.monotonic() + STOP_GRACE
        while time.monotonic() < deadline and is_ours(state, proc):
            time.sleep(0.02)
    if child is not None:  # this process started it: reap it
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=STOP_GRACE)
    log_path(state, host, state_dir).unlink(missing_ok=True)


def counters(
    state: LabState, host: LabHost, state_dir: str | Path | None = None
) -> dict[str, dict[str, int]]:
    """The delay line's counters per direction (``out``/``in``): forwarded, bytes, lost,
    overflow, late_max_ns. Asks it with SIGUSR1 and reads its log; {} if it is not running."""
    proc = host.delayline
    if proc is None or not is_ours(state, proc):
        return {}
    log = log_path(state, host, state_dir)
    size = log.stat().st_size
    os.kill(proc.pid, signal.SIGUSR1)
    deadline = time.monotonic() + 2.0
    text = ""
    while time.monotonic() < deadline:
        with open(log, "rb") as f:
            f.seek(size)
            text = f.read().decode(errors="replace")
        if text.count("\n") >= 2:
            break
        time.sleep(0.02)
    out: dict[str, dict[str, int]] = {}
    for line in text.splitlines():
        name, *pairs = line.split()
        with contextlib.suppress(ValueError):
            out[name] = {k: int(v) for k, v in (p.split("=", 1) for p in pairs)}
    return out
