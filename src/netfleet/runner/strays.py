"""Stray processes: servers (or clients) a campaign started and could not confirm stopped — the
controller was killed, or a host's connection was lost. They are checked and stopped **by PID**
on their host, on exit and on the next run (``--resume`` or not), never by name.

Before signalling, the PID's command line (``/proc/PID/cmdline``) must still end with the argv
the journal recorded — a recycled PID running something else is left alone (``replaced``).
Works on every host kind through ``Host.run``: ``sh``, ``cat`` and ``kill`` are all it needs.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from itertools import groupby

from netfleet.errors import NetfleetError
from netfleet.hosts.base import Host
from netfleet.runner.journal import Journal, ProcessRecord

_KILL = 'kill -s "$1" "$2"'
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
            note(proc, outcome, None if outcome != "survived" else "still runs after SIGKILL")

    groups = [(name, list(procs)) for name, procs in groupby(open_procs, key=lambda p: p.host)]
    await asyncio.gather(*(visit(name, procs) for name, procs in groups))
    return counts
