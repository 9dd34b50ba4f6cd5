"""``netfleet doctor``: tools, capabilities, MTUs, drivers and reachability, with advice."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from netfleet import api
from netfleet.cli.console import console
from netfleet.cli.options import FormatOpt, LabStateOpt, ResultsOpt, emit
from netfleet.report import OutputFormat


def doctor(
    spec_path: Annotated[Path, typer.Argument(metavar="SPEC", help="campaign spec (YAML)")],
    state_dir: LabStateOpt = None,
    fmt: FormatOpt = OutputFormat.table,
    results: ResultsOpt = None,
) -> None:
    """Check every host and client→server pair of a campaign before running it: tool versions
    and capabilities, CPUs, interface and path MTU (tracepath), NIC driver, ENA allowance
    counters, offloads, ICMP and TCP port reachability — then advice with its evidence; and
    a warning per provider rule revised since the campaign's earlier results were taken."""
    from netfleet.report.doctor import doctor_tables

    report = api.doctor(spec_path, state_dir=state_dir, results=results)
    for table in doctor_tables(report.hosts, report.pairs, report.advice):
        emit(table, fmt)
    if any(a.severity == "error" for a in report.advice):
        console.print("[red]doctor found problems that will make runs fail[/]")
        raise typer.Exit(4)
