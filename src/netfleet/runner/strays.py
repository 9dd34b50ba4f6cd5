"""Stray processes: servers (or clients) a campaign started and could not confirm stopped — the
controller was killed, or a host's connection was lost. They are checked and stopped **by PID**
on their host, on exit and on the next run (``--resume`` or not), never by name.

The journal sits in the results directory, which may be shared: a record in it is a claim, not
a fact. netfleet signals a recorded PID only when it can prove it launched that process:

- its launch token: every process netfleet starts gets a fresh random ``NETFLEET_LAUNCH_TOKEN``
  in its environment (never on disk or on a command line); the journal keeps only a keyed digest
  of it bound to the journal, host and PID (``runner/journal.py``). ``/proc/PID/environ`` can be
  read by root and the process's owner only, so nobody else can learn a token, and a process
  someone else started does not carry one that matches;
- its owner: every uid of the process (real, effective, saved, file system) is the uid netfleet
  runs as on that host — a setuid program someone else ran does not pass;
- its identity recorded at launch: start time (``/proc/PID/stat`` field 22), boot id and
  network namespace;
- its command line: ``/proc/PID/cmdline`` is exactly the argv netfleet built (not a suffix).

A recycled PID is left alone (``replaced``); a record failing any other check is refused
(``unverified``) and the reason is said.
Works on every host kind through ``Host.run``: ``sh``, ``cat``, ``id`` and ``kill`` are all it
needs; on this machine's kernel (``local``, ``netns``) ``/proc`` is read directly.
"""

from __future__ import annotations

import asyncio
import hmac
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path

from netfleet.children import stat_fields
from netfleet.errors import NetfleetError
from netfleet.hosts.base import LAUNCH_TOKEN_ENV, Host
from netfleet.runner.journal import Journal, ProcessRecord, launch_proof

_KILL = 'kill -s "$1" "$2"'
_IDENTITY = (
    'cat /proc/sys/kernel/random/boot_id && cat /proc/"$1"/stat && readlink /proc/"$1"/ns/net'
)
#: who runs the check, and who owns the process: fixed-format lines first, then ``stat`` last
#: (its command name, chosen by the process, may hold newlines)
_OWNERS = (
    'p=/proc/"$1" && cat /proc/sys/kernel/random/boot_id && readlink "$p"/ns/net && id -u && '
    'grep "^Uid:" "$p"/status && cat "$p"/stat'
)
POLL_S = 0.1
GRACE_S = 3.0


async def cmdline(host: Host, pid: int) -> list[str] | None:
    """The argv PID runs on ``host``, or None when there is no such (live) process."""
    res = await host.run(["cat", f"/proc/{pid}/cmdline"], timeout=15)
    if res.returncode != 0:
        return None
    parts = res.stdout.split("\0")
    if parts and parts[-1] == "":
        parts.pop()
    return parts or None  # a zombie has an empty cmdline: it is gone


async def identity(host: Host, pid: int) -> dict[str, str] | None:
    """Who ``pid`` is on ``host``: start time (clock ticks after boot), boot id, network
    namespace; None when there is no such process."""
    res = await host.run(["sh", "-c", _IDENTITY, "sh", str(pid)], timeout=15)
    if res.returncode != 0:
        return None
    return parse_identity(res.stdout)


#: host kinds whose processes run on this kernel: their identity is read from /proc directly
LOCAL_KINDS = frozenset({"local", "netns"})


def local_identity(pid: int) -> dict[str, str] | None:
    """:func:`identity` for a process on this machine, read synchronously — so that it is in the
    journal together with the process record (a crash a moment later leaves no unverifiable
    record behind)."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text()
        stat = Path(f"/proc/{pid}/stat").read_text()
        netns = os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None
    return parse_identity(f"{boot.strip()}\n{stat.strip()}\n{netns}\n")


def parse_identity(text: str) -> dict[str, str] | None:
    lines = text.splitlines()
    if len(lines) < 3:
        return None
    stat = lines[1]
    fields = stat_fields(stat)
    if len(fields) < 20:
        return None
    return {"start": fields[19], "boot_id": lines[0].strip(), "netns": lines[2].strip()}


@dataclass(frozen=True)
class Seen:
    """What the host says about a live PID now, for :func:`refusal`."""

    identity: dict[str, str]
    #: real, effective, saved and file-system uid of the process
    uids: tuple[int, ...]
    #: the uid netfleet runs as on that host
    own_uid: int
    #: NETFLEET_LAUNCH_TOKEN of its environment ("" when it has none)
    token: str


async def observe(host: Host, pid: int) -> Seen | None:
    """Identity, owner and launch token of ``pid`` on ``host``; None when it is gone (or its
    environment cannot be read: then it is not a process netfleet can prove it started)."""
    if host.kind in LOCAL_KINDS:
        return _observe_here(pid)
    res = await host.run(["sh", "-c", _OWNERS, "sh", str(pid)], timeout=15)
    env = await host.run(["cat", f"/proc/{pid}/environ"], timeout=15)
    if res.returncode != 0 or env.returncode != 0:
        return None
    lines = res.stdout.split("\n", 4)
    if len(lines) < 5:
        return None
    boot, netns, own, uid_line, stat = lines
    return _seen(boot, stat, netns, own, uid_line, env.stdout)


def _observe_here(pid: int) -> Seen | None:
    proc = Path(f"/proc/{pid}")
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text()
        stat = (proc / "stat").read_text()
        netns = os.readlink(proc / "ns" / "net")
        status = (proc / "status").read_text()
        env = (proc / "environ").read_bytes().decode("utf-8", "replace")
    except OSError:
        return None
    uid_line = next((ln for ln in status.splitlines() if ln.startswith("Uid:")), "")
    return _seen(boot, stat, netns, str(os.geteuid()), uid_line, env)


def _seen(boot: str, stat: str, netns: str, own: str, uid_line: str, env: str) -> Seen | None:
    who = parse_identity(f"{boot.strip()}\n{stat.strip()}\n{netns.strip()}\n")
    try:
        uids = tuple(int(u) for u in uid_line.split()[1:])
        own_uid = int(own.strip())
    except ValueError:
        return None
    if who is None or len(uids) != 4:
        return None
    prefix = f"{LAUNCH_TOKEN_ENV}="
    token = next((v[len(prefix) :] for v in env.split("\0") if v.startswith(prefix)), "")
    return Seen(who, uids, own_uid, token)


def refusal(proc: ProcessRecord, seen: Seen, journal: Path) -> str | None:
    """Why netfleet cannot prove it started the live process ``proc`` names; None if it can."""
    if proc.identity is None or proc.proof is None:
        return "the journal's record of it carries no proof that netfleet started it"
    if seen.identity != proc.identity:
        return "its start time, boot id or namespace differ from the record"
    if any(uid != seen.own_uid for uid in seen.uids):
        return f"it does not run as netfleet's user (uid {seen.own_uid})"
    proof = launch_proof(seen.token, journal, proc.host, proc.pid) if seen.token else ""
    if not hmac.compare_digest(proof, proc.proof):
        return "its environment does not hold the launch token netfleet gave it"
    return None


async def stop_stray(host: Host, proc: ProcessRecord, journal: Path) -> tuple[str, str | None]:
    """Stop one recorded process by PID, if netfleet can prove it started it (:func:`refusal`):
    ``killed``, ``gone``, ``replaced``, ``unverified`` or ``survived``, with the reason.
    HostError when the host cannot be reached."""
    running = await cmdline(host, proc.pid)
    if running is None:
        return "gone", None
    if running != proc.argv:  # the exact argv netfleet built, not a part of it
        return "replaced", None
    seen = await observe(host, proc.pid)
    if seen is None:
        return "gone", None
    why = refusal(proc, seen, journal)
    if why is not None:
        return "unverified", why
    for sig in (signal.SIGTERM, signal.SIGKILL):
        name = sig.name.removeprefix("SIG")
        await host.run(["sh", "-c", _KILL, "sh", name, str(proc.pid)], timeout=15)
        for _ in range(int(GRACE_S / POLL_S)):
            now = await cmdline(host, proc.pid)
            if now is None or now != proc.argv:
                return "killed", None
            await asyncio.sleep(POLL_S)
    return "survived", "still runs after SIGKILL"


async def sweep(
    journal: Journal,
    hosts: dict[str, Host],
    say: Callable[[str], None] | None = None,
    only: set[tuple[str, int]] | None = None,
) -> dict[str, int]:
    """Check every process the journal still has open (or those of ``only``) and stop the ones
    still running. Hosts are visited in parallel, their processes one by one. Returns a count
    per outcome."""
    open_procs = sorted(
        (p for k, p in journal.history.open_processes.items() if only is None or k in only),
        key=lambda p: (p.host, p.pid),
    )
    counts: dict[str, int] = {}

    def note(proc: ProcessRecord, outcome: str, detail: str | None = None) -> None:
        journal.stray(proc, outcome, detail)
        counts[outcome] = counts.get(outcome, 0) + 1
        if say is None:
            return
        what = f"{proc.argv[0] if proc.argv else '?'} (pid {proc.pid}, run {proc.run_key})"
        if outcome == "killed":
            say(f"stopped a stray {what} on host {proc.host}")
        elif outcome == "unverified":
            say(
                f"left {what} on host {proc.host} alone: {detail} — netfleet only stops "
                "processes it can prove it started; stop it by hand if it is yours"
            )
        elif outcome in ("unreachable", "survived"):
            say(
                f"could not stop {what} on host {proc.host}: {detail or outcome}; netfleet "
                "tries again on the next run of this campaign"
            )

    async def visit(name: str, procs: list[ProcessRecord]) -> None:
        host = hosts.get(name)
        for proc in procs:
            if host is None:
                note(proc, "unreachable", f"host {name!r} is not in the spec any more")
                continue
            try:
                outcome, detail = await stop_stray(host, proc, journal.path)
            except NetfleetError as exc:
                note(proc, "unreachable", exc.message)
                continue
            note(proc, outcome, detail)

    groups = [(name, list(procs)) for name, procs in groupby(open_procs, key=lambda p: p.host)]
    await asyncio.gather(*(visit(name, procs) for name, procs in groups))
    return counts
