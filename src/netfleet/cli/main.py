"""The ``netfleet`` command. Each command lives in its own module and calls the library."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from netfleet import __version__
from netfleet.cli import (
    cmd_analysis,
    cmd_catalog,
    cmd_demo,
    cmd_doctor,
    cmd_export,
    cmd_import,
    cmd_inventory,
    cmd_lab,
    cmd_report,
    cmd_run,
    cmd_spec,
)
from netfleet.cli.boundary import DEBUG, guarded

app = typer.Typer(
    name="netfleet",
    help="Measure what cloud networks really deliver: drive iperf3 across a fleet, keep every "
    "raw result, turn results into answers.\n\nExit status: 0 ok · 1 internal error · 2 invalid "
    "input · 3 some runs failed · 4 environment (host, tool, lab, permission) · 130 interrupted.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _version(value: bool) -> None:
    if value:
        print(f"netfleet {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="show tracebacks")] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="print the version")
    ] = False,
) -> None:
    DEBUG["on"] = debug


app.command()(cmd_spec.schema)
app.command()(cmd_spec.plan)
app.command()(cmd_run.run)
app.add_typer(cmd_lab.app, name="lab")
app.add_typer(cmd_inventory.app, name="inventory")
app.command(name="import")(cmd_import.import_)
app.command()(cmd_catalog.ingest)
app.command()(cmd_export.export)
app.command()(cmd_catalog.cheatsheet)
app.command()(cmd_catalog.sql)
app.command()(cmd_analysis.analyze)
app.add_typer(cmd_analysis.credit_app, name="credit")
app.command()(cmd_demo.demo)
app.command()(cmd_doctor.doctor)
app.add_typer(cmd_report.app, name="report")


def main() -> None:
    sys.exit(guarded(lambda: app(standalone_mode=False)))
