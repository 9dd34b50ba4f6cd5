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
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor

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


def _start(env: dict[str, str], quiet: bool) -> None:
    """A worker's first act: the environment of the pool's maker; Ctrl-C left to the parent."""
    if quiet:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.environ.clear()
    os.environ.update(env)


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
    return ProcessPoolExecutor(
        workers, mp_context=ctx, initializer=_start, initargs=(dict(os.environ), quiet)
    )
