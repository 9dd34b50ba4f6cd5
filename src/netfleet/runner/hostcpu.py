"""How busy the CPUs were during a run, as evidence for "host-limited".

For hosts that share the controller's kernel (``local`` and ``netns``), ``/proc/stat`` before and
after the run gives the share of CPU time that was busy. A peak measured while the CPUs were
saturated may be the host's limit, not the link's: analyze labels it so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
