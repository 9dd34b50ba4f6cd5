"""Running the library's coroutines from synchronous code: SIGTERM cancels like Ctrl-C, and a
caller already inside an event loop (a Jupyter notebook) is served from a worker thread."""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


async def _with_sigterm(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` so that SIGTERM, like Ctrl-C, cancels it cleanly; a cancellation it does
    not turn into its own error (``run`` raises CampaignInterrupted) is a KeyboardInterrupt.

    Only the first SIGTERM cancels: a later one must not cut short the release the first one
    started (hosts, cloud instances); it is ignored, also after ``coro`` ends while
    ``asyncio.run`` still waits for release threads (:func:`run_sync` gives the caller's
    handler back once it returns). Ctrl-C still interrupts."""
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(coro)
    stopped: list[int] = []

    def stop() -> None:
        if stopped:  # releasing already
            return
        stopped.append(signal.SIGTERM)
        task.cancel()

    loop.add_signal_handler(signal.SIGTERM, stop)
    try:
        return await task
    except asyncio.CancelledError:
        if stopped:
            raise KeyboardInterrupt from None
        raise
    finally:
        loop.remove_signal_handler(signal.SIGTERM)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # until asyncio.run has its threads back


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coro)``; in the main thread SIGTERM cancels it cleanly (the runs in flight
    are stored as interrupted). Inside a running event loop it runs on a worker thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        if threading.current_thread() is threading.main_thread():
            previous = signal.getsignal(signal.SIGTERM)
            try:
                return asyncio.run(_with_sigterm(coro))
            finally:  # the caller's handler back
                signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)
        return asyncio.run(coro)
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()
