"""Our child processes are ours to reap.

A SIGCHLD disposition of ``SIG_IGN`` is inherited across ``exec``: started by a launcher that
ignores SIGCHLD, netfleet's children are reaped by the kernel itself, so asyncio's child watcher
finds none and logs "Unknown child process pid N, will report returncode 255", every return
code reads 255, and ``subprocess`` reports 0. Restoring the default disposition before starting
children makes the return codes real again.

And a process is named by its PID *and* its start time (:func:`start_ticks`): a PID alone may
name a later process once the first has ended.
"""

from __future__ import annotations

# ``signal``'s C half (what ``signal`` wraps in enums; loaded with the interpreter): every
# command calls this, and ``signal`` with ``threading`` cost ≈ 1.5 ms to import (issue 26)
import _signal


def reap_own_children() -> None:
    """Undo an inherited ``SIGCHLD = SIG_IGN`` (only the main thread may set a handler)."""
    if _signal.getsignal(_signal.SIGCHLD) != _signal.SIG_IGN:
        return
    try:
        _signal.signal(_signal.SIGCHLD, _signal.SIG_DFL)
    except ValueError:  # not the main thread: left as it is
        return


def stat_fields(stat: str) -> list[str]:
    """A ``/proc/PID/stat`` line's fields after the command name, from the state (field 3) on:
    field N of proc(5) is ``[N - 3]`` (the name may hold spaces and ')': split after the last)."""
    return stat[stat.rfind(")") + 2 :].split()


def start_ticks(pid: int) -> int | None:
    """Field 22 of ``/proc/PID/stat`` (start time in clock ticks after boot); None if the
    process is gone (or a zombie: it has ended)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = stat_fields(fh.read())
    except OSError:
        return None
    if len(fields) < 20 or fields[0] == "Z":
        return None
    return int(fields[19])
