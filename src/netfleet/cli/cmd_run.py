"""``netfleet run``: execute a campaign and store every run."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Annotated

import typer

from netfleet.cli.console import console
from netfleet.cli.options import LabStateOpt, ResultsOpt, emit, results_url
from netfleet.cli.progress import RichReporter
from netfleet.errors import ExitStatus
from netfleet.report import OutputFormat
from netfleet.runner import CampaignResult, run_campaign
from netfleet.spec import load_spec
from netfleet.spec.models import CampaignSpec
from netfleet.store import ResultsRoot, open_root


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
    spec: CampaignSpec, root: ResultsRoot, state_dir: Path | None = None
) -> CampaignResult:
    with RichReporter(console) as reporter:
        result = asyncio.run(_with_sigterm(run_campaign(spec, root, reporter, state_dir)))
    n_failed = len(result.failed)
    colour = "green" if not n_failed else "yellow"
    console.print(
        f"[{colour}]{result.ok} of {result.total} runs ok[/], {n_failed} failed; "
        f"raw results under {root.url}"
    )
    for env in result.failed:
        console.print(f"  [red]{env.status}[/] {env.run_id}: {env.reason}")
    return result


def run(
    spec_path: Annotated[Path, typer.Argument(metavar="SPEC", help="campaign spec (YAML)")],
    results: ResultsOpt = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="show the plan, run nothing")] = False,
    state_dir: LabStateOpt = None,
) -> None:
    """Run a campaign: preflight every host, then each run in order, storing each as it ends.
    Exit 3 if any run failed (each failure is stored with its reason)."""
    spec = load_spec(spec_path)
    root = open_root(results_url(results, spec.results))
    if dry_run:
        from netfleet.cli.cmd_spec import plan_table

        emit(plan_table(spec_path), OutputFormat.table)
        return
    result = execute_campaign(spec, root, state_dir)
    if result.failed:
        raise typer.Exit(int(ExitStatus.RUNS_FAILED))
