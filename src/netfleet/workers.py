"""Worker processes for the data path: a ``forkserver`` pool whose workers see this process's
environment as it is NOW.

A fork server is started once per process and every worker is a fork of it, so a worker
inherits the environment the fork server was started with — not the one in place when the pool
is made. A notebook (or a test) that sets ``AWS_ENDPOINT_URL`` or credentials after its first
import would otherwise get workers that read S3 with the old ones (or none: NoCredentialsError).
Every pool hands its workers a snapshot of ``os.environ`` taken when the pool is made, applied
before their first task.

Every Python process netfleet starts never imports from the working directory (issue 37): the
fork server and multiprocessing's resource tracker are ``python -c …``, and ``-c`` (like ``-m``)
puts the working directory first on ``sys.path`` — a ``multiprocessing.py`` another user planted
in the folder root runs netfleet from would be imported as root. They are started here, at once,
with ``PYTHONSAFEPATH=1`` (:func:`safe_python_env`); a ``python -m`` netfleet starts itself passes
``-P`` (:data:`SAFE_PYTHON`).

No worker outlives the process that made its pool. A worker holds both ends of its task queue
and the fork server's liveness pipe, so after a ``kill -9`` (or the out-of-memory killer) of
the maker nothing would tell them: the workers, the fork server and the resource tracker would
wait forever, as root. Each worker watches its maker through a pidfd and ends when it ends;
then the fork server and the resource tracker see their pipes close and end too.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor

from netfleet.children import start_ticks

#: the interpreter and the flag a ``python -m`` child of netfleet starts with: ``-P``, never the
#: working directory on ``sys.path``
SAFE_PYTHON = (sys.executable, "-P")

_ENV_LOCK = threading.Lock()


@contextlib.contextmanager
def safe_python_env() -> Iterator[None]:
    """``PYTHONSAFEPATH=1`` in this process's environment while a Python child is started by
    code netfleet does not own (multiprocessing's fork server and resource tracker): the child
    never puts the working directory on ``sys.path``; the variable is put back as it was."""
    with _ENV_LOCK:
        before = os.environ.get("PYTHONSAFEPATH")
        os.environ["PYTHONSAFEPATH"] = "1"
        try:
            yield
        finally:
            if before is None:
                del os.environ["PYTHONSAFEPATH"]
            else:
                os.environ["PYTHONSAFEPATH"] = before


def _start(env: dict[str, str], quiet: bool, maker: tuple[int, int | None]) -> None:
    """A worker's first act: the environment of the pool's maker; Ctrl-C left to the parent;
    an end with the maker's (:func:`_end_with`)."""
    if quiet:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.environ.clear()
    os.environ.update(env)
    _end_with(*maker)


def _end_with(pid: int, started: int | None) -> None:
    """End this worker when the process ``pid`` (started at ``started``: its
    :func:`~netfleet.children.start_ticks`) has ended: a thread waits on a pidfd of it
    (readable once it has ended) or, where pidfds are refused (a kernel before 5.3, a seccomp
    filter), reads its start time again each second. The pidfd is checked to be that process,
    not a later one under the same PID; a maker already gone ends the worker now. ``os._exit``:
    a worker only reads (the maker writes and commits), so nothing is cut short but work
    nobody is left to take. Without pidfds and /proc, nothing is watched."""
    try:
        fd: int | None = os.pidfd_open(pid)
    except ProcessLookupError:
        os._exit(1)
    except OSError:
        fd = None
    if started is not None and start_ticks(pid) != started:
        os._exit(1)
    if fd is None and started is None:
        return
    threading.Thread(
        target=_watch, args=(fd, pid, started), name="netfleet-maker-watch", daemon=True
    ).start()


def _watch(fd: int | None, pid: int, started: int | None) -> None:
    """:func:`_end_with`'s thread: until the maker has ended, then this process ends."""
    if fd is not None:
        select.select([fd], [], [])
    else:
        while start_ticks(pid) == started:
            time.sleep(1)
    os._exit(1)


def process_pool(
    workers: int, preload: list[str] | None = None, quiet: bool = True
) -> ProcessPoolExecutor:
    """``workers`` forkserver processes with this process's current environment; ``preload``:
    modules the fork server imports once for every worker; ``quiet``: workers ignore SIGINT
    (the parent stops handing out work and keeps what is written)."""
    import multiprocessing
    from multiprocessing import forkserver, resource_tracker

    ctx = multiprocessing.get_context("forkserver")
    if preload:
        ctx.set_forkserver_preload(preload)
    with safe_python_env():  # started now, never later from the working directory
        resource_tracker.ensure_running()
        forkserver.ensure_running()
    maker = (os.getpid(), start_ticks(os.getpid()))
    pool = ProcessPoolExecutor(
        workers, mp_context=ctx, initializer=_start, initargs=(dict(os.environ), quiet, maker)
    )
    # Every worker started at the first task handed out, before the pool's manager thread
    # runs, as CPython does for "fork" pools. Otherwise (CPython 3.11-3.13, "forkserver") each
    # task handed out may start one more worker, and one started while the manager thread
    # stops a pool a killed worker broke is joined but never stopped: the command hung.
    pool._safe_to_dynamically_spawn_children = False  # type: ignore[attr-defined]
    return pool
