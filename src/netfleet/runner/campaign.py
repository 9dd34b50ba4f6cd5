"""Run a campaign: hosts → journal → strays → preflight → runs as scheduled, each stored (and
journaled) as soon as it ends."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from netfleet.engines import ENGINES
from netfleet.errors import ExitStatus, NetfleetError
from netfleet.hosts.base import Host
from netfleet.hosts.provider import HostPool, HostRequest, release_leftovers
from netfleet.hosts.registry import get_provider
from netfleet.plan.bounds import bound_runs
from netfleet.plan.matrix import PlannedRun, expand
from netfleet.plan.normalise import expected_wall_seconds
from netfleet.runner.bucket import refill_warnings
from netfleet.runner.dispatch import dispatch
from netfleet.runner.events import Reporter, SilentReporter
from netfleet.runner.execute import RunContext
from netfleet.runner.journal import Journal, journal_path, recent_traffic
from netfleet.runner.leases import JournalLeases
from netfleet.runner.preflight import Ready, preflight
from netfleet.runner.resume import Selection, recover, select
from netfleet.runner.scheduler import Limits, Scheduler, estimate_wall_seconds
from netfleet.runner.session import Started
from netfleet.runner.strays import LOCAL_KINDS, identity, local_identity, sweep
from netfleet.runner.tools import required_tools
from netfleet.runner.waves import AcquirePlan, WaveDriver
from netfleet.spec.models import CampaignSpec
from netfleet.store.envelope import Envelope
from netfleet.store.root import RawStore


@dataclass
class CampaignResult:
    #: runs this session set out to do
    total: int
    envelopes: list[Envelope] = field(default_factory=list)
    paths: list[Path] = field(default_factory=list)
    #: with --resume: runs completed by earlier sessions (skipped)
    done_before: int = 0
    #: with --resume: run keys that failed earlier and were not retried (policy, attempts)
    kept_failed: list[str] = field(default_factory=list)

    @property
    def failed(self) -> list[Envelope]:
        return [e for e in self.envelopes if e.status != "ok"]

    @property
    def ok(self) -> int:
        return sum(e.status == "ok" for e in self.envelopes)


class CampaignInterrupted(NetfleetError):
    exit_status = ExitStatus.INTERRUPTED

    def __init__(self, message: str, result: CampaignResult) -> None:
        super().__init__(message, hint="netfleet run --resume SPEC continues where it stopped")
        self.result = result


async def run_campaign(
    spec: CampaignSpec,
    root: RawStore,
    reporter: Reporter | None = None,
    lab_state_dir: Path | None = None,
    *,
    resume: bool = False,
    install: bool = False,
    concurrency: int | None = None,
    waves: AcquirePlan | None = None,
    wait_refill: bool = False,
) -> CampaignResult:
    """Execute the runs of ``spec`` as its scheduling limits allow (``concurrency`` overrides
    the spec's); a failed run is stored with its reason and the campaign goes on. Ctrl-C (task
    cancellation) stops the runs in flight, stores them as interrupted and raises
    CampaignInterrupted — completed results are already on disk.

    Every step is journaled (``RESULTS/.netfleet/journal/CAMPAIGN.jsonl``): with ``resume``,
    runs an earlier session completed are skipped and failed ones retried by ``spec.retry``.
    Processes an earlier session left running are stopped by PID before anything starts, and
    this session's before it returns. ``install`` installs missing tools (package manager).

    ``waves`` (cloud campaigns, :mod:`netfleet.runner.waves`): its groups' hosts are acquired
    when their round is due, under its budget, and each released after its last run; adaptive
    runs are bounded by its ``max_run_s``; its ``expected_s`` is told to the providers."""
    rep = reporter or SilentReporter()
    runs = expand(spec)
    if waves is not None:
        runs = waves.order(bound_runs(runs, waves.max_run_s))
    limits = Limits.of(spec, concurrency)
    need = required_tools(runs)  # the engines' tools per host, for a provider's checks
    requests = [
        HostRequest(name, hs, lab_state_dir, tuple(need.get(name, ())))
        for name, hs in spec.hosts.items()
    ]
    root.flush_pending()  # results a failed upload left spooled (S3 roots)
    root.check_access()  # an S3 root that refuses a write fails now, before any host exists
    with Journal(journal_path(root.journal_root, spec.campaign)) as journal:
        log = JournalLeases(journal)
        # hosts an earlier session acquired and could not release (kill -9), before ours
        await asyncio.shield(release_leftovers(log.open_leases(), get_provider, log, rep.note))
        pool = HostPool(
            requests, log, get_provider, rep.note,
            later=waves.later if waves else (), expected_s=waves.expected_s if waves else None,
        )  # fmt: skip
        try:
            async with pool as hosts:
                return await _run(
                    spec, root, rep, runs, limits, hosts, journal, resume, install,
                    pool.release_early, (pool, waves) if waves else None, wait_refill,
                )  # fmt: skip
        except asyncio.CancelledError:  # Ctrl-C / SIGTERM while acquiring hosts or in preflight
            raise _interrupted(CampaignResult(total=len(runs)), root) from None


async def _run(
    spec: CampaignSpec,
    root: RawStore,
    rep: Reporter,
    runs: list[PlannedRun],
    limits: Limits,
    hosts: dict[str, Host],
    journal: Journal,
    resume: bool,
    install: bool,
    release_early: Callable[[str], Awaitable[bool]] | None = None,
    by_wave: tuple[HostPool, AcquirePlan] | None = None,
    wait_refill: bool = False,
) -> CampaignResult:
    if resume:
        recover(journal, root, spec.campaign)
        chosen = select(runs, journal, spec.retry)
        rep.note(
            f"resuming: {len(chosen.done)} of {len(runs)} runs done earlier, "
            f"{len(chosen.todo)} to run"
            + (f", {len(chosen.kept_failed)} failed and not retried" if chosen.kept_failed else "")
        )
    else:
        if journal.history.unfinished:
            rep.note("an earlier session did not finish; `netfleet run --resume` would continue it")
        chosen = Selection(list(runs))
    todo = chosen.todo
    later = {h for h in by_wave[1].later if h not in hosts} if by_wave else set()
    scheduler = Scheduler(todo, limits, absent=later)
    result = CampaignResult(
        total=len(todo), done_before=len(chosen.done), kept_failed=chosen.kept_failed
    )
    if journal.history.skipped:  # a torn line after a crash, or lines someone else wrote
        rep.note(journal.history.skipped)
    await sweep(journal, hosts, rep.note)  # strays of earlier sessions, before anything starts
    if not todo:
        return result
    mine: set[tuple[str, int]] = set()
    identities: list[asyncio.Future[None]] = []
    # runs left per host: a host an owning provider made (a cloud instance) is released as soon
    # as its last run ends, not at the campaign's end (issue 25.1)
    left_on: Counter[str] = Counter()
    for r in todo:
        left_on.update({r.client, r.server})
    releases: list[asyncio.Future[bool]] = []
    driver: WaveDriver | None = None
    try:
        now = [r for r in todo if r.client not in later and r.server not in later]
        used = {r.client for r in now} | {r.server for r in now}
        rep.preflight(
            f"checking {len(used)} hosts"
            + (f" ({len(later)} more as their wave comes)" if later else "")
        )
        ready = await preflight(spec, hosts, now, install=install, say=rep.note)
        if by_wave is not None:
            pool, plan = by_wave

            async def bring(names: list[str], runs: list[PlannedRun]) -> None:
                await pool.acquire(names)  # the provider launches them together
                more = await preflight(spec, hosts, runs, install=install, say=rep.note)
                ready.engines.update(more.engines)
                ready.facts.update(more.facts)

            driver = WaveDriver(plan, todo, bring, scheduler.arrive, pool.release_early, rep.note)
        journal.session("resume" if resume else "fresh", planned=len(runs), todo=len(todo))
        most = estimate_wall_seconds(todo, limits)
        known = {name: {**h.labels} for name, h in hosts.items()}
        rep.campaign_started(todo, expected_wall_seconds(todo, most, known), most)
        tests = {t.name: t for t in spec.tests}

        elsewhere = recent_traffic(root.journal_root, skip=spec.campaign)
        for line in refill_warnings(todo, known, elsewhere):
            rep.note(line)

        def last_traffic(host: str) -> datetime | None:
            """This campaign's journal, else another campaign's under the same root."""
            theirs = elsewhere.get(host)
            times = (journal.history.last_traffic_at(host), theirs.at if theirs else None)
            return max((t for t in times if t is not None), default=None)

        def context(run: PlannedRun, on_start: Callable[[Started], None]) -> RunContext:
            ctx = _context(spec, run, hosts, ready, tests[run.test].labels, rep, on_start)
            ctx.last_traffic = last_traffic
            ctx.busy = journal.history.busy
            ctx.wait_refill = wait_refill
            return ctx

        def on_process(run: PlannedRun, entry: Started) -> None:
            pid, token = entry.process.pid, entry.process.launch_token
            mine.add((entry.host.name, pid))
            where = (run.run_key, entry.host.name, pid, entry.argv, entry.role)
            if entry.host.kind in LOCAL_KINDS:  # same kernel: identity in the same record
                journal.process(*where, local_identity(pid), token=token)
                return
            journal.process(*where, token=token)
            identities.append(asyncio.ensure_future(_record_identity(journal, entry.host, pid)))

        def on_finished(run: PlannedRun, envelope: Envelope, started: list[Started]) -> None:
            path = root.write(envelope)
            stopped = [(e.host.name, e.process.pid) for e in started if e.process.ended]
            journal.run_finished(run.run_key, envelope.status, envelope.run_id, str(path), stopped)
            result.envelopes.append(envelope)
            result.paths.append(path)
            rep.run_finished(run, envelope, path)
            for name in {run.client, run.server}:
                left_on[name] -= 1
                if left_on[name] or (driver is not None and driver.host_done(name)):
                    continue
                if release_early is not None:
                    releases.append(asyncio.ensure_future(release_early(name)))

        def on_started(run: PlannedRun) -> None:
            journal.run_started(run.run_key, run.sequence)

        try:
            await dispatch(scheduler, context, on_started, on_process, on_finished, rep, driver)
        except asyncio.CancelledError:
            raise _interrupted(result, root) from None
    finally:
        if driver is not None:
            await asyncio.shield(driver.stop())
            if driver.waves:
                rep.note(_waves_text(driver))
        await asyncio.shield(asyncio.gather(*identities, *releases, return_exceptions=True))
        left = {k for k in journal.history.open_processes if k in mine}
        if left:  # this session's processes that could not be confirmed stopped
            await asyncio.shield(sweep(journal, hosts, rep.note, only=left))
    return result


def _waves_text(driver: WaveDriver) -> str:
    peak = ", ".join(f"{k} {v:g}" for k, v in sorted(driver.peak.items()))
    return (
        f"acquired in {len(driver.waves)} waves: "
        + "; ".join(", ".join(w) for w in driver.waves)
        + (f" (peak held: {peak})" if peak else "")
    )


async def _record_identity(journal: Journal, host: Host, pid: int) -> None:
    """Journal who ``pid`` is (start time, boot id, namespace) so that no later session — and no
    forged journal line — can make netfleet signal a process it did not start."""
    try:
        ident = await identity(host, pid)
    except NetfleetError:
        return
    if ident is not None:
        journal.process_identity(host.name, pid, ident)


def _interrupted(result: CampaignResult, root: RawStore) -> CampaignInterrupted:
    return CampaignInterrupted(
        f"interrupted: {result.ok} of {result.total} runs completed, their results kept under "
        f"{root.url}",
        result,
    )


def _gateway_of_server(labels: dict[str, Any], server: Host) -> None:
    """A run crosses a lab's gateway when its server is reached there (the client connects
    to the server's public address, whichever end is the subject): the gateway's label is the
    server's."""
    from netfleet.lab.gateway import RATE_LABEL

    labels.pop(RATE_LABEL, None)
    if RATE_LABEL in server.labels:
        labels[RATE_LABEL] = server.labels[RATE_LABEL]


def _context(
    spec: CampaignSpec,
    run: PlannedRun,
    hosts: dict[str, Host],
    ready: Ready,
    test_labels: dict[str, Any],
    rep: Reporter,
    on_start: Callable[[Started], None] | None = None,
) -> RunContext:
    client, server = hosts[run.client], hosts[run.server]
    subject = client if run.subject == "client" else server
    labels = {**spec.labels, **test_labels, **subject.labels}
    _gateway_of_server(labels, server)
    client_info = ready.engines[(client.name, run.engine)]
    return RunContext(
        campaign=spec.campaign,
        labels=labels,
        client=client,
        server=server,
        engine=ENGINES[run.engine],
        client_engine=client_info,
        server_engine=ready.engines.get((server.name, run.engine), client_info),
        facts=ready.facts,
        reporter=rep,
        on_start=on_start,
    )
