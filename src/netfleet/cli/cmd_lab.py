"""``netfleet lab``: bring an emulated fleet of namespaces up and down."""

from __future__ import annotations

from typing import Annotated

import typer

from netfleet import api
from netfleet.cli.console import console
from netfleet.cli.options import FormatOpt, LabStateOpt, emit
from netfleet.report import OutputFormat
from netfleet.text import plain

app = typer.Typer(
    help="Emulated cloud on this machine: namespaces, a switch, tbf shapers.", no_args_is_help=True
)


@app.command()
def up(
    lab: Annotated[
        str, typer.Argument(metavar="LAB", help="lab file (YAML) or a shipped profile name")
    ],
    state_dir: LabStateOpt = None,
) -> None:
    """Create the lab's namespaces, links, addresses and shapers (needs root)."""
    from netfleet.report.lab import lab_hosts_table

    state = api.lab_up(lab, state_dir=state_dir)
    console.print(f"lab [bold]{plain(state.name)}[/] is up:")
    emit(lab_hosts_table(state.status), OutputFormat.table)
    console.print(f"tear it down with: netfleet lab down {plain(state.name)}")


@app.command()
def down(
    name: Annotated[str, typer.Argument(help="lab name (see netfleet lab status)")],
    state_dir: LabStateOpt = None,
) -> None:
    """Remove exactly what the lab created (also after a crash). Idempotent."""
    removed = api.lab_down(name, state_dir=state_dir)
    console.print(
        plain(
            f"lab {name}: removed {len(removed)} namespaces"
            + (f" ({', '.join(removed)})" if removed else "")
        )
    )


@app.command()
def status(
    name: Annotated[str | None, typer.Argument(help="one lab; default all")] = None,
    state_dir: LabStateOpt = None,
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """Show labs, their hosts, shapers (with live counters) and processes. Without root it
    only reads the state files (processes and counters need root)."""
    from netfleet.report.lab import lab_hosts_table

    table = lab_hosts_table(api.lab_status(name, state_dir=state_dir))
    if not table.rows and fmt is OutputFormat.table:
        console.print("no lab is up")
        return
    emit(table, fmt)


@app.command()
def profiles(fmt: FormatOpt = OutputFormat.table) -> None:
    """List the lab profiles shipped with netfleet."""
    from netfleet.report.lab import lab_profiles_table

    emit(lab_profiles_table(api.lab_profiles()), fmt)
