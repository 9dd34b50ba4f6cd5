"""Worker processes for the data path: a ``forkserver`` pool whose workers see this process's
environment as it is NOW.

A fork server is started once per process and every worker is a fork of it, so a worker
inherits the environment the fork server was started with — not the one in place when the pool
is made. A notebook (or a test) that sets ``AWS_ENDPOINT_URL`` or credentials after its first
import would otherwise get workers that read S3 with the old ones (or none: NoCredentialsError).
Every pool hands its workers a snapshot of ``os.environ`` taken when the pool is made, applied
before their first task.
"""

from __future__ import annotations

import os
import signal
from concurrent.futures import ProcessPoolExecutor


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

    ctx = multiprocessing.get_context("forkserver")
    if preload:
        ctx.set_forkserver_preload(preload)
    return ProcessPoolExecutor(
        workers, mp_context=ctx, initializer=_start, initargs=(dict(os.environ), quiet)
    )
