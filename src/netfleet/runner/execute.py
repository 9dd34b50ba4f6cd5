"""Execute one planned run: server up on its own port, client, live rate, server down, outcome.

Whatever happens — failure, timeout, Ctrl-C — the server and client are stopped by the PIDs we
started, and the run comes back as an Envelope to be stored.
"""

from __future__ import annotations

import asyncio
import signal
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from netfleet import __version__
from netfleet.engines.base import Engine, EngineInfo, Outcome
from netfleet.errors import HostError
from netfleet.hosts.base import Host, Process
from netfleet.plan.matrix import PlannedRun
from netfleet.runner.events import Reporter
from netfleet.store.envelope import EngineRecord, Envelope, HostRecord

PORT_BASE = 20000
PORT_SPAN = 20000
SERVER_READY_S = 10.0


@dataclass
class RunContext:
    campaign: str
    labels: dict[str, Any]
    client: Host
    server: Host
    engine: Engine
    client_engine: EngineInfo
    facts: dict[str, dict[str, Any]]
    reporter: Reporter


def _now() -> datetime:
    return datetime.now(UTC)


def _iso(t: datetime) -> str:
    return t.isoformat(timespec="microseconds").replace("+00:00", "Z")


async def _wait_listening(host: Host, proc: Process, port: int) -> bool:
    """True once ``port`` is listening on ``host``; False if the server died first."""
    deadline = time.monotonic() + SERVER_READY_S
    while time.monotonic() < deadline:
        if proc.returncode is not None:
            return False
        res = await host.run(["ss", "-Hltn", f"sport = :{port}"], timeout=10)
        if res.returncode == 0 and res.stdout.strip():
            return True
        await asyncio.sleep(0.05)
    return False


async def _start_server(ctx: RunContext, run: PlannedRun) -> tuple[Process, list[str], int]:
    last = ""
    for attempt in range(5):
        port = PORT_BASE + (run.sequence * 7 + attempt * 7919) % PORT_SPAN
        argv = ctx.engine.server_argv(port, ctx.server.address)
        proc = await ctx.server.start(argv)
        if await _wait_listening(ctx.server, proc, port):
            return proc, argv, port
        await proc.stop(grace=1)
        last = (proc.stderr or proc.stdout).strip()[-300:]
    raise HostError(
        f"host {ctx.server.name}: the {ctx.engine.name} server did not start: {last or 'no output'}"
    )


async def execute(ctx: RunContext, run: PlannedRun) -> Envelope:
    """Run once and return its envelope. Re-raises CancelledError after recording the run as
    interrupted (the envelope is attached to the exception as ``envelope``)."""
    started = _now()
    t0 = time.monotonic()
    server: Process | None = None
    client: Process | None = None
    server_argv: list[str] = []
    client_argv: list[str] = []
    outcome: Outcome
    cancelled: asyncio.CancelledError | None = None
    try:
        server, server_argv, port = await _start_server(ctx, run)
        client_argv = ctx.engine.client_argv(run.params, ctx.server.address, port, run.subject)
        client = await ctx.client.start(client_argv)
        await _follow(ctx, run, client, t0)
        outcome = ctx.engine.interpret(
            client.stdout, client.stderr, client.returncode or 0, interrupted=False
        )
    except TimeoutError:
        assert client is not None
        client.send(signal.SIGINT)
        await client.stop(grace=3, first=signal.SIGINT)
        outcome = ctx.engine.interpret(
            client.stdout, client.stderr, client.returncode or 0, interrupted=False
        )
        outcome = Outcome("failed", f"timed out after {run.timeout:g} s", outcome.result)
    except HostError as exc:
        outcome = Outcome("failed", str(exc), None)
    except asyncio.CancelledError as exc:
        cancelled = exc
        if client is not None:
            await asyncio.shield(client.stop(grace=3, first=signal.SIGINT))
            outcome = ctx.engine.interpret(
                client.stdout, client.stderr, client.returncode or 0, interrupted=True
            )
        else:
            outcome = Outcome("interrupted", "interrupted before the client started", None)
    finally:
        if server is not None:
            await asyncio.shield(server.stop(grace=2))
        if client is not None and client.returncode is None:
            await asyncio.shield(client.stop(grace=1, first=signal.SIGKILL))
    envelope = _envelope(
        ctx, run, outcome, started, time.monotonic() - t0, client, client_argv, server_argv
    )
    if cancelled is not None:
        cancelled.envelope = envelope  # type: ignore[attr-defined]
        raise cancelled
    return envelope


async def _follow(ctx: RunContext, run: PlannedRun, client: Process, t0: float) -> None:
    """Wait for the client, reporting the live rate of its namespace twice a second."""
    deadline = t0 + run.timeout
    last_bytes = ctx.client.live_bytes(client)
    last_t = time.monotonic()
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        try:
            await client.wait(min(0.5, remaining))
            return
        except TimeoutError:
            pass
        now_bytes = ctx.client.live_bytes(client)
        now_t = time.monotonic()
        if now_bytes is not None and last_bytes is not None and now_t > last_t:
            # rx+tx of the client's interfaces: a TCP flow shows its data plus small ACKs.
            ctx.reporter.run_progress(
                run, now_t - t0, (now_bytes - last_bytes) * 8 / (now_t - last_t)
            )
        last_bytes, last_t = now_bytes, now_t


def _record(host: Host, facts: dict[str, Any]) -> HostRecord:
    return HostRecord(
        name=host.name, kind=host.kind, address=host.address, labels=dict(host.labels), facts=facts
    )


def _envelope(
    ctx: RunContext,
    run: PlannedRun,
    outcome: Outcome,
    started: datetime,
    elapsed: float,
    client: Process | None,
    client_argv: list[str],
    server_argv: list[str],
) -> Envelope:
    stamp = started.strftime("%Y%m%dT%H%M%S%fZ")
    return Envelope(
        netfleet_version=__version__,
        run_id=f"{run.run_key}-{stamp}",
        run_key=run.run_key,
        campaign=ctx.campaign,
        test=run.test,
        repeat=run.repeat,
        sequence=run.sequence,
        status=outcome.status,
        reason=outcome.reason,
        direction=run.params.direction,
        subject=run.subject,
        params=run.params.model_dump(),
        labels=ctx.labels,
        client=_record(ctx.client, ctx.facts.get(ctx.client.name, {})),
        server=_record(ctx.server, ctx.facts.get(ctx.server.name, {})),
        engine=EngineRecord(
            name=ctx.engine.name,
            version=ctx.client_engine.version,
            argv=client_argv,
            server_argv=server_argv,
        ),
        started_at=_iso(started),
        ended_at=_iso(_now()),
        duration_s=round(elapsed, 6),
        result=outcome.result,
        stdout_text=None if outcome.result is not None or client is None else client.stdout[-4000:],
        stderr_text=(client.stderr[-4000:] or None) if client is not None else None,
    )
