"""``netfleet doctor``: tools, capabilities, MTUs, drivers and reachability, with advice."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from netfleet.cli.console import console
from netfleet.cli.options import FormatOpt, LabStateOpt, emit
from netfleet.doctor import doctor as run_doctor
from netfleet.report import OutputFormat, Tabular
from netfleet.report.advice import advice_table
from netfleet.spec import load_spec


def doctor(
    spec_path: Annotated[Path, typer.Argument(metavar="SPEC", help="campaign spec (YAML)")],
    state_dir: LabStateOpt = None,
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """Check every host and client→server pair of a campaign before running it: tool versions
    and capabilities, CPUs, interface and path MTU (tracepath), NIC driver, ENA allowance
    counters, offloads, ICMP and TCP port reachability — then advice with its evidence."""
    spec = load_spec(spec_path)
    report = asyncio.run(run_doctor(spec, state_dir))
    hosts = Tabular(
        ["host", "address", "cpus", "interface", "mtu", "driver", "tools", "capabilities",
         "offloads", "ena_counters"],
        [
            [h["host"], h["address"], h["cpus"], h["interface"], h["mtu"], h["driver"],
             {k: v for k, v in h["tools"].items() if v}, [k for k, v in h["capabilities"].items()
             if v], h["offloads"], h["ena_counters"]]
            for h in report.hosts
        ],
        title="Hosts",
    )  # fmt: skip
    pairs = Tabular(
        ["client", "server", "address", "ping", "path_mtu", "interface_mtu", "port"],
        [
            [p["client"], p["server"], p["address"], p["ping"], p["path_mtu"],
             p["interface_mtu"], p["port_detail"]]
            for p in report.pairs
        ],
        title="Pairs",
    )  # fmt: skip
    for table in (hosts, pairs, advice_table(report.advice)):
        emit(table, fmt)
    if any(a.severity == "error" for a in report.advice):
        console.print("[red]doctor found problems that will make runs fail[/]")
        raise typer.Exit(4)
