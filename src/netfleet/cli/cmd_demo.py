"""``netfleet demo``: the whole pipeline on an emulated fleet, in under three minutes."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from netfleet.cli.cmd_run import _with_sigterm
from netfleet.cli.console import console
from netfleet.cli.options import LabStateOpt, emit
from netfleet.cli.progress import RichReporter
from netfleet.demo import TOLERANCE, run_demo
from netfleet.errors import ExitStatus
from netfleet.report import OutputFormat


def demo(
    workdir: Annotated[Path, typer.Option("--dir", help="where results and catalog go")] = Path(
        "netfleet-demo"
    ),
    state_dir: LabStateOpt = None,
) -> None:
    """Lab up (steady, credit-burst and asymmetric hosts + a big server), a campaign over both
    directions and 1 vs 2 streams, ingest, cheat sheet, lab down. Needs root."""
    with RichReporter(console) as reporter:
        res = run_demo(
            workdir,
            reporter,
            state_dir,
            run_async=lambda c: asyncio.run(_with_sigterm(c)),
            say=lambda m: console.print(f"[dim]{m}[/]"),
        )
    emit(res.cheatsheet, OutputFormat.table)
    for direction, got in sorted(res.steady_measured_gbps.items()):
        delta = got / res.steady_expected_gbps - 1
        mark = "[green]✓[/]" if abs(delta) <= TOLERANCE else "[red]✗[/]"
        console.print(
            f"{mark} steady {direction}: avg {got:.4f} Gbit/s vs shaper × 1448/1514 = "
            f"{res.steady_expected_gbps:.4f} ({delta:+.2%})"
        )
    console.print(
        f"{res.campaign.ok}/{res.campaign.total} runs ok in {res.wall_s:.0f} s; "
        f"raw results in {workdir / 'results'}, catalog in {workdir / 'catalog'}"
    )
    if res.report is not None:
        console.print(f"report: {res.report}", markup=False, highlight=False)
    else:
        console.print(f"no report: {res.report_problem}", markup=False, highlight=False)
    example = '"select direction, count(*) from runs group by 1"'
    console.print(f"try: netfleet sql --catalog {workdir / 'catalog'} {example}")
    if res.campaign.failed or not res.steady_ok:
        raise typer.Exit(int(ExitStatus.RUNS_FAILED))
