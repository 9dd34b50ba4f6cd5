"""``netfleet run``: execute a campaign and store every run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from netfleet import api
from netfleet.cli.console import ask_at_terminal, console
from netfleet.cli.options import LabStateOpt, MaxRunsOpt, ResultsOpt, emit
from netfleet.errors import ExitStatus
from netfleet.report import OutputFormat
from netfleet.text import plain


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
        int,
        typer.Option("--max-instances", help="cloud: the most instances held at once (waves)"),
    ] = 10,
    yes: Annotated[
        bool,
        typer.Option(
            "--yes",
            help="cloud: confirm the launch, on real AWS without asking (never lifts a limit)",
        ),
    ] = False,
    max_runs: MaxRunsOpt = None,
    wait_refill: Annotated[
        bool,
        typer.Option(
            "--wait-refill",
            help="before a burst test on a lab host used within its refill time (its shaper's "
            "bucket ÷ rate), wait for the refill instead of flagging the bucket",
        ),
    ] = False,
) -> None:
    """Run a campaign: preflight every host, then the runs as scheduled (concurrency, host
    exclusivity, bandwidth budget), storing and journaling each as it ends. Exit 3 if any run
    failed (each failure is stored with its reason)."""
    from netfleet.cli.progress import RichReporter
    from netfleet.report.advice import advice_table
    from netfleet.report.plan import plan_table

    with RichReporter(console) as reporter:
        outcome = api.run(
            spec_path,
            results=results,
            dry_run=dry_run,
            state_dir=state_dir,
            resume=resume,
            install=install,
            concurrency=concurrency,
            max_cost=max_cost,
            max_runs=max_runs,
            wait_refill=wait_refill,
            max_instances=max_instances,
            yes=yes,
            reporter=reporter,
            say=lambda line: console.print(plain(line)),
            show=lambda table: emit(table, OutputFormat.table),
            ask=ask_at_terminal(),
        )
    result = outcome.result
    if result is None:  # a dry run: the plan, and what launching would cost
        if outcome.plan is not None:
            emit(plan_table(outcome.plan), OutputFormat.table)
        if outcome.cost is not None:
            emit(outcome.cost, OutputFormat.table)
        return
    n_failed = len(result.failed)
    colour = "green" if not n_failed and not result.kept_failed else "yellow"
    earlier = f" (+{result.done_before} done earlier)" if result.done_before else ""
    console.print(
        f"[{colour}]{result.ok} of {result.total} runs ok[/]{earlier}, {n_failed} failed; "
        f"raw results under {plain(outcome.results)}"
    )
    for env in result.failed:
        console.print(f"  [red]{plain(env.status)}[/] {plain(env.run_id)}: {plain(env.reason)}")
    if result.kept_failed:
        console.print(
            f"  [yellow]{len(result.kept_failed)} runs failed in earlier sessions and were not "
            "retried[/] (retry.on / retry.max_attempts in the spec)"
        )
    if outcome.advice:  # what limited these runs, with the evidence
        emit(advice_table(outcome.advice), OutputFormat.table)
    for table in (outcome.cloud_sheet, outcome.cloud_checks):
        if table is not None:
            emit(table, OutputFormat.table)
            if table is outcome.cloud_sheet and outcome.cloud_cost:
                console.print(plain(outcome.cloud_cost))
    if outcome.failed:
        raise typer.Exit(int(ExitStatus.RUNS_FAILED))
