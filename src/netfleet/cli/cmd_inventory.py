"""``netfleet inventory``: fleets of SSH hosts — import from Terraform/OpenTofu, show, check."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from netfleet import api
from netfleet.cli.options import FormatOpt, LabStateOpt, emit
from netfleet.errors import ExitStatus
from netfleet.report import OutputFormat
from netfleet.report.inventory import fleet_check_table, inventory_table

app = typer.Typer(
    help="Inventories of hosts (YAML lists): import from Terraform/OpenTofu, show, check.",
    no_args_is_help=True,
)

InventoryArg = Annotated[
    Path, typer.Argument(metavar="INVENTORY", help="inventory file (a YAML list of hosts)")
]


@app.command("import-terraform")
def import_terraform(
    file: Annotated[
        str, typer.Argument(metavar="FILE", help="JSON of `terraform output -json` ('-': stdin)")
    ],
    output: Annotated[
        str | None,
        typer.Option(
            "--output", "-o", help="the output that lists hosts (default: netfleet_hosts)"
        ),
    ] = None,
) -> None:
    """Turn `terraform output -json` (or `tofu output -json`) into an inventory on stdout:
    netfleet inventory import-terraform outputs.json > hosts.yaml"""
    sys.stdout.write(api.inventory_import_terraform(file, output=output))


@app.command()
def show(inventory: InventoryArg, fmt: FormatOpt = OutputFormat.table) -> None:
    """List an inventory's hosts (validated: errors name the item, field and line)."""
    emit(inventory_table(api.inventory_show(inventory), title=str(inventory)), fmt)


@app.command()
def check(
    inventory: InventoryArg,
    install: Annotated[
        bool,
        typer.Option("--install", help="install missing tools with the host's package manager"),
    ] = False,
    state_dir: LabStateOpt = None,
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """Reach every host (SSH host keys verified, login), look for iperf3 and the tools netfleet
    needs. Exit 4 when a host is not ready."""
    results = api.inventory_check(inventory, install=install, state_dir=state_dir)
    emit(fleet_check_table(results), fmt)
    if not all(r.ok for r in results):
        raise typer.Exit(int(ExitStatus.ENVIRONMENT))
