"""Run planned runs concurrently as the scheduler allows, handing each envelope back as it ends.

Each run is an asyncio task around :func:`~netfleet.runner.execute.execute`. Ctrl-C (cancelling
the dispatch) cancels every run in flight; each stops its processes by PID and comes back as an
``interrupted`` envelope, which is handed back before the cancellation goes on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from netfleet.plan.matrix import PlannedRun
from netfleet.runner.events import Reporter
from netfleet.runner.execute import RunContext, execute
from netfleet.runner.scheduler import Scheduler
from netfleet.runner.session import Started
from netfleet.runner.waves import WaveDriver
from netfleet.store.envelope import Envelope

#: builds a run's context; the callback records each process the run starts
MakeContext = Callable[[PlannedRun, Callable[[Started], None]], RunContext]
#: called when a run has ended (ok, failed or interrupted) with the processes it started
OnFinished = Callable[[PlannedRun, Envelope, list[Started]], None]


async def _execute(ctx: RunContext, run: PlannedRun) -> tuple[Envelope, bool]:
    """(envelope, interrupted). A cancelled run still yields its envelope."""
    try:
        return await execute(ctx, run), False
    except asyncio.CancelledError as exc:
        envelope: Envelope | None = getattr(exc, "envelope", None)
        if envelope is None:
            raise
        return envelope, True


async def dispatch(
    scheduler: Scheduler,
    make_context: MakeContext,
    on_started: Callable[[PlannedRun], None],
    on_process: Callable[[PlannedRun, Started], None],
    on_finished: OnFinished,
    reporter: Reporter,
    waves: WaveDriver | None = None,
) -> None:
    """Start runs as ``scheduler`` allows until all have ended. Re-raises CancelledError (after
    every run in flight was stopped and handed to ``on_finished``) or the first unexpected
    error. ``waves``: hosts acquired and released in waves — its tasks are waited on with the
    runs (an acquire that fails is raised here)."""
    loop = asyncio.get_running_loop()
    running: dict[asyncio.Future[tuple[Envelope, bool]], tuple[PlannedRun, list[Started]]] = {}

    def launch(run: PlannedRun) -> None:
        started: list[Started] = []

        def record(entry: Started) -> None:
            started.append(entry)
            on_process(run, entry)

        ctx = make_context(run, record)
        on_started(run)
        reporter.run_started(run)
        running[asyncio.ensure_future(_execute(ctx, run))] = (run, started)

    try:
        if waves is not None:
            waves.due()
        while not scheduler.done:
            for run in scheduler.take(loop.time()):
                launch(run)
            now = loop.time()
            wake = scheduler.wakeup(now)
            waiting: set[asyncio.Future[Any]] = set(running)
            if waves is not None:  # hosts coming or going
                waiting |= waves.pending
            if not waiting:
                if wake is None:
                    raise RuntimeError("the scheduler stalled: runs pending, nothing to wait for")
                reporter.cooldown(wake - now)
                await asyncio.sleep(wake - now)
                continue
            timeout = None if wake is None else max(0.0, wake - now)
            done, _ = await asyncio.wait(
                waiting, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
            if waves is not None:
                waves.settle(t for t in done if t not in running)
            for task in done:
                if task not in running:
                    continue
                run, started = running.pop(task)
                envelope, _ = task.result()
                on_finished(run, envelope, started)
                scheduler.finished(run, loop.time())
    except BaseException:
        await asyncio.shield(_stop_all(running, on_finished))
        raise


async def _stop_all(
    running: dict[asyncio.Future[tuple[Envelope, bool]], tuple[PlannedRun, list[Started]]],
    on_finished: OnFinished,
) -> None:
    """Cancel every run in flight and hand over what each leaves."""
    for task in running:
        task.cancel()
    outcomes = await asyncio.gather(*running, return_exceptions=True)
    for (run, started), outcome in zip(running.values(), outcomes, strict=True):
        if isinstance(outcome, tuple):
            on_finished(run, outcome[0], started)
    running.clear()
