"""Execute one planned run through its engine, and turn the outcome into an Envelope.

Whatever happens — failure, timeout, Ctrl-C — every process the run started is stopped by its
PID, and the run comes back as an Envelope to be stored.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from netfleet import __version__
from netfleet.engines.contract import Engine, EngineInfo, Outcome, StopEarly
from netfleet.errors import HostError
from netfleet.hosts import ena
from netfleet.hosts.base import Host
from netfleet.plan.matrix import PlannedRun
from netfleet.runner.bucket import check_bucket
from netfleet.runner.events import Reporter
from netfleet.runner.hostcpu import (
    SAME_KERNEL,
    SAMPLE_EVERY_S,
    EngineCpu,
    busy_note,
    cpu_times,
)
from netfleet.runner.session import RunSession, Started
from netfleet.runner.state import config_state, srd_snapshot
from netfleet.store.envelope import CommandRecord, EngineRecord, Envelope, HostRecord


@dataclass
class RunContext:
    campaign: str
    labels: dict[str, Any]
    client: Host
    server: Host
    engine: Engine
    client_engine: EngineInfo
    server_engine: EngineInfo
    facts: dict[str, dict[str, Any]]
    reporter: Reporter
    #: told of every process the run starts, as it starts (see RunSession.on_start)
    on_start: Callable[[Started], None] | None = None
    #: when a host last carried traffic / whether a run is using it now (the journal): a burst
    #: test checks its hosts' credit buckets with them (see netfleet.runner.bucket)
    last_traffic: Callable[[str], datetime | None] | None = None
    busy: Callable[[str], bool] | None = None
    #: wait for a lab host's known refill (label lab_refill_s) instead of flagging the bucket
    wait_refill: bool = False


def _now() -> datetime:
    return datetime.now(UTC)


def iso(t: datetime) -> str:
    return t.isoformat(timespec="microseconds").replace("+00:00", "Z")


async def execute(ctx: RunContext, run: PlannedRun) -> Envelope:
    """Run once and return its envelope. Re-raises CancelledError after recording the run as
    interrupted (the envelope is attached to the exception as ``envelope``)."""
    bucket = await _bucket_state(ctx, run)
    started = _now()
    session = RunSession(
        run, ctx.client, ctx.server, ctx.client_engine, ctx.server_engine, ctx.reporter
    )
    session.on_start = ctx.on_start
    if bucket is not None:
        session.notes["bucket_state"] = bucket
    cancelled: asyncio.CancelledError | None = None
    # ENA allowance counters around the run (hosts without them record nothing)
    hosts = [ctx.client, ctx.server] if ctx.client is not ctx.server else [ctx.client]
    ena_before = await ena.snapshot(hosts, ctx.facts)
    srd_before = await srd_snapshot(hosts, ctx.facts)
    srd_after: dict[str, dict[str, int]] = {}
    same_kernel = all(h.kind in SAME_KERNEL for h in hosts)
    cpu_before = cpu_times() if same_kernel else None
    engine_cpu = EngineCpu()
    sampler = asyncio.ensure_future(_sample_engines(engine_cpu, session))
    try:
        outcome = await ctx.engine.execute(session, run.params)
    except StopEarly:
        outcome = ctx.engine.salvage(session, run.params, interrupted=False)
    except TimeoutError:
        await asyncio.shield(session.interrupt_clients())
        partial = ctx.engine.salvage(session, run.params, interrupted=False)
        outcome = Outcome("failed", f"timed out after {run.timeout:g} s", partial.result)
    except HostError as exc:
        outcome = Outcome("failed", str(exc), None)
    except asyncio.CancelledError as exc:
        cancelled = exc
        await asyncio.shield(session.interrupt_clients())
        outcome = ctx.engine.salvage(session, run.params, interrupted=True)
    finally:
        sampler.cancel()
        engine_cpu.sample(session.started)  # the servers still run: their last reading
        if cancelled is None:
            await engine_cpu.sample_remote(session.started)
        await asyncio.shield(session.stop_all())
    if (cpu := busy_note(cpu_before, cpu_times() if same_kernel else None)) is not None:
        session.notes["host_cpu"] = cpu
    if (own := engine_cpu.note()) is not None:
        session.notes["engine_cpu"] = own
    if ena_before and cancelled is None:
        session.notes["ena_allowance_deltas"] = ena.deltas(
            ena_before, await ena.snapshot(hosts, ctx.facts)
        )
    if cancelled is None and any(srd_before.values()):
        srd_after = await srd_snapshot(hosts, ctx.facts)
    state = config_state(ctx.client, ctx.server, ctx.facts, srd_before, srd_after)
    lost = next((why for h in hosts if (why := h.lost())), None)
    if lost and outcome.status == "failed":  # the machine went away (spot reclaim): not a fail
        outcome = Outcome("interrupted", f"{lost}; {outcome.reason}", outcome.result)
    envelope = _envelope(ctx, run, outcome, started, time.monotonic() - session.t0, session)
    envelope.state = state
    if cancelled is not None:
        cancelled.envelope = envelope  # type: ignore[attr-defined]
        raise cancelled
    return envelope


async def _sample_engines(engine_cpu: EngineCpu, session: RunSession) -> None:
    """Read the engine processes' own CPU every :data:`SAMPLE_EVERY_S` while the run goes;
    other hosts' as often as their last reading (a command over SSH) has come back."""
    remote: asyncio.Future[None] | None = None
    try:
        while True:
            engine_cpu.sample(session.started)
            if remote is None or remote.done():
                remote = asyncio.ensure_future(engine_cpu.sample_remote(session.started))
            await asyncio.sleep(SAMPLE_EVERY_S)
    finally:
        if remote is not None:
            remote.cancel()


async def _bucket_state(ctx: RunContext, run: PlannedRun) -> dict[str, Any] | None:
    """Before a burst test: wait for a known refill, or say the bucket may be partial."""
    if ctx.last_traffic is None:
        return None
    hosts = {ctx.client.name: ctx.client.labels, ctx.server.name: ctx.server.labels}
    busy = ctx.busy or (lambda _: False)
    check = check_bucket(run, hosts, ctx.last_traffic, busy, wait_refill=ctx.wait_refill)
    if check.message:
        ctx.reporter.note(check.message)
    if check.wait_s > 0:
        await asyncio.sleep(check.wait_s)
    return check.note


def _record(host: Host, facts: dict[str, Any]) -> HostRecord:
    return HostRecord(
        name=host.name,
        kind=host.kind,
        address=host.address,
        labels=dict(host.labels),
        facts=facts,
    )


def _envelope(
    ctx: RunContext,
    run: PlannedRun,
    outcome: Outcome,
    started: datetime,
    elapsed: float,
    session: RunSession,
) -> Envelope:
    stamp = started.strftime("%Y%m%dT%H%M%S%fZ")
    clients, servers = session.clients(), session.servers()
    client_text = clients[-1].process if clients else None
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
        direction=run.params.run_direction(),
        subject=run.subject,
        params=run.params.model_dump(),
        labels=ctx.labels,
        client=_record(ctx.client, ctx.facts.get(ctx.client.name, {})),
        server=_record(ctx.server, ctx.facts.get(ctx.server.name, {})),
        engine=EngineRecord(
            name=ctx.engine.name,
            version=ctx.client_engine.version,
            argv=clients[0].argv if clients else [],
            server_argv=servers[0].argv if servers else [],
            commands=[
                CommandRecord(
                    role=e.role, host=e.host.name, argv=e.argv, returncode=e.process.returncode
                )
                for e in session.started
            ],
        ),
        started_at=iso(started),
        ended_at=iso(_now()),
        duration_s=round(elapsed, 6),
        result=outcome.result,
        stdout_text=(
            None
            if outcome.result is not None or client_text is None
            else client_text.stdout[-4000:]
        ),
        stderr_text=(client_text.stderr[-4000:] or None) if client_text is not None else None,
        notes=session.notes,
        outputs=session.outputs,
    )
