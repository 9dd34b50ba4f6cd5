"""Stray processes: servers (or clients) a campaign started and could not confirm stopped — the
controller was killed, or a host's connection was lost. They are checked and stopped **by PID**
on their host, on exit and on the next run (``--resume`` or not), never by name.

The journal sits in the results directory, which may be shared: a record in it is a claim, not
a fact. Right after launch netfleet records who the process is — its start time
(``/proc/PID/stat`` field 22), the host's boot id and its network namespace — and before it
signals a recorded PID all three must match again *and* its command line (``/proc/PID/cmdline``)
must still end with the recorded argv. A recycled PID is left alone (``replaced``); a record
without that identity, or whose identity does not match, is refused (``unverified``) and the
reason is said: netfleet never signals a process it cannot prove it started.
Works on every host kind through ``Host.run``: ``sh``, ``cat`` and ``kill`` are all it needs.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Callable
from itertools import groupby
from pathlib import Path

from netfleet.errors import NetfleetError
from netfleet.hosts.base import Host
from netfleet.runner.journal import Journal, ProcessRecord

_KILL = 'kill -s "$1" "$2"'
_IDENTITY = (
    'cat /proc/sys/kernel/random/boot_id && cat /proc/"$1"/stat && readlink /proc/"$1"/ns/net'
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
    fields = stat[stat.rfind(")") + 2 :].split()  # comm may hold spaces and ')'
    if len(fields) < 20:
        return None
    return {"start": fields[19], "boot_id": lines[0].strip(), "netns": lines[2].strip()}


def is_ours(running: list[str], argv: list[str]) -> bool:
    """Does a process running ``running`` still run the recorded ``argv``? (``sudo -n --`` and
    the like may prefix it.)"""
    return bool(argv) and len(running) >= len(argv) and running[-len(argv) :] == argv


async def stop_stray(host: Host, proc: ProcessRecord) -> str:
    """Stop one recorded process by PID: ``killed``, ``gone``, ``replaced`` or ``survived``.
    HostError when the host cannot be reached."""
    running = await cmdline(host, proc.pid)
    if running is None:
        return "gone"
    if not is_ours(running, proc.argv):
        return "replaced"
    if proc.identity is None:
        return "unverified"
    who = await identity(host, proc.pid)
    if who is None:
        return "gone"
    if who != proc.identity:
        return "unverified"
    for sig in (signal.SIGTERM, signal.SIGKILL):
        name = sig.name.removeprefix("SIG")
        await host.run(["sh", "-c", _KILL, "sh", name, str(proc.pid)], timeout=15)
        for _ in range(int(GRACE_S / POLL_S)):
            now = await cmdline(host, proc.pid)
            if now is None or not is_ours(now, proc.argv):
                return "killed"
            await asyncio.sleep(POLL_S)
    return "survived"


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
                f"left {what} on host {proc.host} alone: the journal's record of it does not "
                "match the running process (start time, boot id, namespace) — netfleet only "
                "stops processes it can prove it started; stop it by hand if it is yours"
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
                outcome = await stop_stray(host, proc)
            except NetfleetError as exc:
                note(proc, "unreachable", exc.message)
                continue
            detail = {
                "survived": "still runs after SIGKILL",
                "unverified": "its start time, boot id or namespace differ from the record",
            }.get(outcome)
            note(proc, outcome, detail)

    groups = [(name, list(procs)) for name, procs in groupby(open_procs, key=lambda p: p.host)]
    await asyncio.gather(*(visit(name, procs) for name, procs in groups))
    return counts
