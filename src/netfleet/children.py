"""Our child processes are ours to reap.

A SIGCHLD disposition of ``SIG_IGN`` is inherited across ``exec``: started by a launcher that
ignores SIGCHLD, netfleet's children are reaped by the kernel itself, so asyncio's child watcher
finds none and logs "Unknown child process pid N, will report returncode 255", every return
code reads 255, and ``subprocess`` reports 0. Restoring the default disposition before starting
children makes the return codes real again.
"""

from __future__ import annotations

import signal
import threading


def reap_own_children() -> None:
    """Undo an inherited ``SIGCHLD = SIG_IGN`` (only the main thread may set a handler)."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGCHLD) == signal.SIG_IGN:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
