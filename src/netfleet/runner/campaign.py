"""Run a campaign: hosts → preflight → runs in order, each stored as soon as it ends."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netfleet.engines import ENGINES
from netfleet.errors import ExitStatus, NetfleetError
from netfleet.hosts.base import Host
from netfleet.hosts.registry import build_host
from netfleet.plan.matrix import PlannedRun, estimate_seconds, expand
from netfleet.runner.events import Reporter, SilentReporter
from netfleet.runner.execute import RunContext, execute
from netfleet.runner.preflight import Ready, preflight
from netfleet.spec.models import CampaignSpec
from netfleet.store.envelope import Envelope
from netfleet.store.root import ResultsRoot


@dataclass
class CampaignResult:
    total: int
    envelopes: list[Envelope] = field(default_factory=list)
    paths: list[Path] = field(default_factory=list)

    @property
    def failed(self) -> list[Envelope]:
        return [e for e in self.envelopes if e.status != "ok"]

    @property
    def ok(self) -> int:
        return sum(e.status == "ok" for e in self.envelopes)


class CampaignInterrupted(NetfleetError):
    exit_status = ExitStatus.INTERRUPTED

    def __init__(self, message: str, result: CampaignResult) -> None:
        super().__init__(message, hint="run the campaign again to redo what is missing")
        self.result = result


async def run_campaign(
    spec: CampaignSpec,
    root: ResultsRoot,
    reporter: Reporter | None = None,
    lab_state_dir: Path | None = None,
) -> CampaignResult:
    """Execute every run of ``spec``; a failed run is stored with its reason and the campaign
    goes on. Ctrl-C (task cancellation) stops the current run, stores it as interrupted and
    raises CampaignInterrupted — completed results are already on disk."""
    rep = reporter or SilentReporter()
    runs = expand(spec)
    hosts = {name: build_host(name, hs, lab_state_dir) for name, hs in spec.hosts.items()}
    rep.preflight(f"checking {len({r.client for r in runs} | {r.server for r in runs})} hosts")
    ready = await preflight(spec, hosts, runs)
    rep.campaign_started(runs, estimate_seconds(spec, runs))
    result = CampaignResult(total=len(runs))
    tests = {t.name: t for t in spec.tests}
    for i, run in enumerate(runs):
        if i and spec.cooldown:
            rep.cooldown(spec.cooldown)
            try:
                await asyncio.sleep(spec.cooldown)
            except asyncio.CancelledError:
                raise _interrupted(result, root) from None
        ctx = _context(spec, run, hosts, ready, tests[run.test].labels, rep)
        rep.run_started(run)
        try:
            envelope = await execute(ctx, run)
        except asyncio.CancelledError as exc:
            partial: Envelope | None = getattr(exc, "envelope", None)
            if partial is not None:
                _store(root, partial, result, rep, run)
            raise _interrupted(result, root) from None
        _store(root, envelope, result, rep, run)
    return result


def _store(
    root: ResultsRoot, envelope: Envelope, result: CampaignResult, rep: Reporter, run: PlannedRun
) -> None:
    path = root.write(envelope)
    result.envelopes.append(envelope)
    result.paths.append(path)
    rep.run_finished(run, envelope, path)


def _interrupted(result: CampaignResult, root: ResultsRoot) -> CampaignInterrupted:
    return CampaignInterrupted(
        f"interrupted: {result.ok} of {result.total} runs completed, their results kept under "
        f"{root.url}",
        result,
    )


def _context(
    spec: CampaignSpec,
    run: PlannedRun,
    hosts: dict[str, Host],
    ready: Ready,
    test_labels: dict[str, Any],
    rep: Reporter,
) -> RunContext:
    client, server = hosts[run.client], hosts[run.server]
    subject = client if run.subject == "client" else server
    labels = {**spec.labels, **test_labels, **subject.labels}
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
    )
