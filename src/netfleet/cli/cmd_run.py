"""``netfleet run``: execute a campaign and store every run."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Annotated, Any

import typer

from netfleet.cli.console import console
from netfleet.cli.options import LabStateOpt, ResultsOpt, emit, results_url
from netfleet.cli.progress import RichReporter
from netfleet.errors import ExitStatus
from netfleet.report import OutputFormat
from netfleet.runner import CampaignResult, run_campaign
from netfleet.spec import load_spec
from netfleet.spec.models import CampaignSpec
from netfleet.store import RawStore, open_root
from netfleet.text import plain


async def _with_sigterm(coro):  # type: ignore[no-untyped-def]
    """Run ``coro`` so that SIGTERM, like Ctrl-C, cancels it cleanly."""
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(coro)
    loop.add_signal_handler(signal.SIGTERM, task.cancel)
    try:
        return await task
    finally:
        loop.remove_signal_handler(signal.SIGTERM)


def execute_campaign(
    spec: CampaignSpec,
    root: RawStore,
    state_dir: Path | None = None,
    *,
    resume: bool = False,
    install: bool = False,
    concurrency: int | None = None,
) -> CampaignResult:
    with RichReporter(console) as reporter:
        campaign = run_campaign(
            spec,
            root,
            reporter,
            state_dir,
            resume=resume,
            install=install,
            concurrency=concurrency,
        )
        result = asyncio.run(_with_sigterm(campaign))
    n_failed = len(result.failed)
    colour = "green" if not n_failed and not result.kept_failed else "yellow"
    earlier = f" (+{result.done_before} done earlier)" if result.done_before else ""
    console.print(
        f"[{colour}]{result.ok} of {result.total} runs ok[/]{earlier}, {n_failed} failed; "
        f"raw results under {root.url}"
    )
    for env in result.failed:
        console.print(f"  [red]{plain(env.status)}[/] {plain(env.run_id)}: {plain(env.reason)}")
    if result.kept_failed:
        console.print(
            f"  [yellow]{len(result.kept_failed)} runs failed in earlier sessions and were not "
            "retried[/] (retry.on / retry.max_attempts in the spec)"
        )
    from netfleet.advice import advise
    from netfleet.report.advice import advice_table

    items = advise(e.model_dump() for e in result.envelopes)
    if items:  # what limited these runs, with the evidence
        emit(advice_table(items), OutputFormat.table)
    return result


def run(
    spec_path: Annotated[Path, typer.Argument(metavar="SPEC", help="campaign spec (YAML)")],
    results: ResultsOpt = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="show the plan, run nothing")] = False,
    state_dir: LabStateOpt = None,
    resume: Annotated[
        bool,
        typer.Option(
            "--resume",
            help="continue an earlier session of this campaign: skip completed runs, retry "
            "failed ones as the spec's retry policy says",
        ),
    ] = False,
    install: Annotated[
        bool,
        typer.Option(
            "--install",
            help="install missing tools with each host's package manager (apt/dnf/yum/apk)",
        ),
    ] = False,
    concurrency: Annotated[
        int | None,
        typer.Option("--concurrency", "-j", min=1, help="runs at once at most (default: spec)"),
    ] = None,
    max_cost: Annotated[
        float, typer.Option("--max-cost", help="cloud: refuse above this estimate (USD)")
    ] = 5.0,
    max_instances: Annotated[
        int, typer.Option("--max-instances", help="cloud: refuse above this many instances")
    ] = 10,
    yes: Annotated[bool, typer.Option("--yes", help="cloud: launch even above the limits")] = False,
) -> None:
    """Run a campaign: preflight every host, then the runs as scheduled (concurrency, host
    exclusivity, bandwidth budget), storing and journaling each as it ends. Exit 3 if any run
    failed (each failure is stored with its reason)."""
    spec = load_spec(spec_path)
    root = open_root(results_url(results, spec.results))
    cloud = any(h.kind == "aws" for h in spec.hosts.values())
    priced = None
    if dry_run or cloud:
        from netfleet import api
        from netfleet.report.plan import plan_table

        the_plan = api.plan(spec_path)
        if dry_run:
            emit(plan_table(the_plan), OutputFormat.table)
        if cloud:  # the cost guard: refuse before anything is launched
            from netfleet.cloud import costs, runs

            priced = runs.plan_cost(spec, the_plan.estimated_seconds)
            assert priced is not None
            emit(priced.table, OutputFormat.table)
            if not dry_run:
                costs.guard(priced.estimate, max_cost, max_instances, yes)
                _quota_guard(spec)
        if dry_run:
            return
    result = execute_campaign(
        spec, root, state_dir, resume=resume, install=install, concurrency=concurrency
    )
    if cloud and result.ok:
        from netfleet.cloud import runs

        since = min(e.started_at for e in result.envelopes)
        sheet, cost = runs.summary(spec, root.url, priced, since)
        emit(sheet, OutputFormat.table)
        console.print(plain(cost))
        cloud_settings = runs.cloud_spec(spec)
        if cloud_settings is not None:  # seeds 003/004: ENA per instance, CloudWatch vs iperf3
            from netfleet.cloud.checks import session_checks

            emit(session_checks(result.envelopes, cloud_settings.region), OutputFormat.table)
    if result.failed or result.kept_failed:
        raise typer.Exit(int(ExitStatus.RUNS_FAILED))


def _quota_guard(spec: Any) -> None:
    """Refuse before launch when the account's vCPU quota cannot hold the fleet."""
    from netfleet.cloud import quotas, runs

    cs = runs.cloud_spec(spec)
    if cs is None:
        return
    quotas.enforce(cs, lambda line: console.print(plain(line)))
