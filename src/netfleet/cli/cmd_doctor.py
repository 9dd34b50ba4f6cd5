"""``netfleet doctor``: tools, capabilities, MTUs, drivers and reachability, with advice."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from netfleet import api
from netfleet.cli.options import FormatOpt, LabStateOpt, ResultsOpt, emit_all
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
    hosts, pairs, advice = doctor_tables(report.hosts, report.pairs, report.advice)
    emit_all({"hosts": hosts, "pairs": pairs, "advice": advice}, fmt)  # JSON: one document
    if any(a.severity == "error" for a in report.advice):
        # on stderr: stdout holds the listing (one JSON document with --format json)
        err = Console(stderr=True, highlight=False)
        err.print("[red]doctor found problems that will make runs fail[/]")
        raise typer.Exit(4)
