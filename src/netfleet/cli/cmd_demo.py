"""``netfleet demo``: the whole pipeline on an emulated fleet, in under three minutes."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from netfleet import api
from netfleet.cli.console import console
from netfleet.cli.options import LabStateOpt, emit
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
    from netfleet.cli.progress import RichReporter  # here: rich.progress is not needed for --help

    with RichReporter(console) as reporter:
        outcome = api.demo(
            dir=workdir,
            state_dir=state_dir,
            reporter=reporter,
            say=lambda m: console.print(f"[dim]{m}[/]"),
        )
    res = outcome.result
    emit(res.cheatsheet, OutputFormat.table)
    for check in outcome.steady:
        mark = "[green]✓[/]" if check.ok else "[red]✗[/]"
        cloud = (
            f"; {check.cloud_gbps:.3f} Gbit/s in the cloud figures above"
            if check.cloud_gbps is not None and check.cloud_gbps != check.measured_gbps
            else ""
        )
        console.print(
            f"{mark} steady {check.direction}: avg {check.measured_gbps:.4f} Gbit/s in the lab vs "
            f"its shaper × 1448/1514 = {check.expected_gbps:.4f} ({check.delta:+.2%}){cloud}"
        )
    console.print(
        f"{res.campaign.ok}/{res.campaign.total} runs ok in {res.wall_s:.0f} s; "
        f"raw results in {workdir / 'results'}, catalog in {workdir / 'catalog'}"
    )
    for sentence, command in res.answers:  # the answer the demo's credit host was built for
        console.print(sentence, markup=False, highlight=False)
        if command:
            console.print(f"  calculator: {command}", markup=False, highlight=False)
    if res.report is not None:
        console.print(f"report: {res.report}", markup=False, highlight=False)
    else:
        console.print(f"no report: {res.report_problem}", markup=False, highlight=False)
    example = '"select direction, count(*) from runs group by 1"'
    console.print(f"try: netfleet sql --catalog {workdir / 'catalog'} {example}")
    if outcome.failed:
        raise typer.Exit(int(ExitStatus.RUNS_FAILED))
