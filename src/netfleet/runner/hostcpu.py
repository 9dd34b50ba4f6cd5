"""How busy the CPUs were during a run, as evidence for "host-limited".

For hosts that share the controller's kernel (``local`` and ``netns``), ``/proc/stat`` before and
after the run gives the share of CPU time that was busy. A peak measured while the CPUs were
saturated may be the host's limit, not the link's: analyze labels it so.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from netfleet.children import stat_fields
from netfleet.errors import HostError

#: kinds whose processes run on the controller's own kernel
SAME_KERNEL = frozenset({"local", "netns"})


def cpu_times(stat: Path = Path("/proc/stat")) -> tuple[int, int] | None:
    """(busy, total) jiffies over all CPUs, or None when unreadable."""
    try:
        line = stat.read_text().splitlines()[0]
    except (OSError, IndexError):
        return None
    fields = line.split()
    if not fields or fields[0] != "cpu":
        return None
    values = [int(x) for x in fields[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
    total = sum(values[:8])  # guest time is already counted in user
    return total - idle, total


def busy_note(
    before: tuple[int, int] | None, after: tuple[int, int] | None
) -> dict[str, Any] | None:
    """``notes.host_cpu`` of a run: the busy share of all CPUs between the two readings."""
    if before is None or after is None or after[1] <= before[1]:
        return None
    busy = (after[0] - before[0]) / (after[1] - before[1])
    return {
        "busy_percent": round(100 * busy, 1),
        "source": "/proc/stat of the controller's kernel (local/netns hosts), whole run",
    }


#: how often the engine processes' own CPU is read during a run (s): a process's last reading
#: before it ends is what counts, so this bounds the CPU time left out
SAMPLE_EVERY_S = 0.5


def process_cpu(pid: int, proc: Path = Path("/proc")) -> tuple[int, int, float] | None:
    """(utime + stime, start time, age) of process ``pid`` in clock ticks (/proc/PID/stat,
    /proc/uptime), or None when it is gone or unreadable."""
    try:
        text = (proc / str(pid) / "stat").read_text()
        uptime = float((proc / "uptime").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return parse_stat(text, uptime)


def parse_stat(text: str, uptime: float) -> tuple[int, int, float] | None:
    """(utime + stime, start time, age) in clock ticks from one /proc/PID/stat line and the
    machine's /proc/uptime seconds (Linux's user-visible tick, USER_HZ, is the same on every
    machine: this one's)."""
    rest = stat_fields(text)
    try:
        ticks, start = int(rest[11]) + int(rest[12]), int(rest[19])
    except (IndexError, ValueError):
        return None
    return ticks, start, uptime * os.sysconf("SC_CLK_TCK") - start


class EngineCpu:
    """The CPU the engine processes netfleet started used, by role, read from their own
    ``/proc/PID/stat`` while the run goes on (on the controller's kernel directly, on other
    hosts by a command: :meth:`sample_remote`): what iperf3's
    ``cpu_utilization_percent`` is for the engines that report none (iperf2, sockperf, irtt,
    ping). A PID whose start time changes is another process: its readings are dropped."""

    def __init__(self) -> None:
        #: (role, host, pid) → (ticks, start, age) at the last reading
        self.last: dict[tuple[str, str, int], tuple[int, int, float]] = {}

    def sample(self, started: Sequence[Any]) -> None:
        """Read every started process (``Started``: role, host, process) on a local kind."""
        for entry in started:
            pid = getattr(entry.process, "pid", None)
            if entry.host.kind not in SAME_KERNEL or not isinstance(pid, int) or pid <= 0:
                continue
            now = process_cpu(pid)
            if now is not None:
                self._keep((entry.role, entry.host.name, pid), now)

    async def sample_remote(self, started: Sequence[Any]) -> None:
        """Read the started processes on hosts of other kinds (SSH, cloud): one ``cat`` of
        /proc/uptime and their /proc/PID/stat per host. A host that cannot answer adds
        nothing."""
        by_host: dict[str, tuple[Any, list[tuple[str, int]]]] = {}
        for entry in started:
            pid = getattr(entry.process, "pid", None)
            if entry.host.kind in SAME_KERNEL or not isinstance(pid, int) or pid <= 0:
                continue
            by_host.setdefault(entry.host.name, (entry.host, []))[1].append((entry.role, pid))
        await asyncio.gather(*(self._read(h, name, e) for name, (h, e) in by_host.items()))

    async def _read(self, host: Any, name: str, entries: list[tuple[str, int]]) -> None:
        paths = [f"/proc/{pid}/stat" for _, pid in entries]
        try:
            found = await host.run(["cat", "/proc/uptime", *paths], timeout=5)
            lines = found.stdout.splitlines()
            uptime = float(lines[0].split()[0])
        except (HostError, OSError, ValueError, IndexError):
            return
        stats = {line.split(" ", 1)[0]: line for line in lines[1:] if " (" in line}
        for role, pid in entries:
            now = parse_stat(stats[str(pid)], uptime) if str(pid) in stats else None
            if now is not None:
                self._keep((role, name, pid), now)

    def _keep(self, key: tuple[str, str, int], now: tuple[int, int, float]) -> None:
        before = self.last.get(key)
        if before is None or before[1] == now[1]:  # a changed start time: the PID was reused
            self.last[key] = now

    def note(self) -> dict[str, Any] | None:
        """``notes.engine_cpu``: the busiest process's share of one CPU per role (100 = one
        CPU, over its lifetime), or None when nothing was read."""
        out: dict[str, Any] = {}
        for (role, _, _), (ticks, _, age) in self.last.items():
            if age > 0:
                out[role] = max(out.get(role, 0.0), round(100 * ticks / age, 1))
        if not out:
            return None
        out["source"] = "/proc/PID/stat of the engine processes netfleet started"
        return out
