"""The ``netfleet`` command's Typer app (started by :func:`netfleet.cli.main.main`). Each command
lives in its own module: it parses its options, makes one :mod:`netfleet.api` call and renders
the answer.

Start-up is lazy: a command's module is imported only when that command runs or its own
``--help`` is asked for, and it imports only the facade (whose functions import the heavy
libraries — DuckDB, numpy, ruptures, asyncssh, boto3, matplotlib — when called).
``netfleet --help`` lists the commands from the table below without importing any of them;
``tests/test_layers.py`` keeps that table in step with the commands and checks that no
command's help loads the library behind the facade.
"""

from __future__ import annotations

import importlib
from typing import Annotated, Any

import typer
from typer import _click as click  # typer ≥0.28 vendors click: TyperGroup is built on these classes
from typer.core import TyperCommand, TyperGroup

from netfleet import __version__
from netfleet.cli.boundary import DEBUG


def _h(text: str) -> str:
    return text


#: name → (module, attribute, kind, one-line help for the listing). ``kind`` is "command" for a
#: function, "group" for a ``typer.Typer`` sub-app. The order is the order of ``--help``.
LAZY_COMMANDS: dict[str, tuple[str, str, str, str]] = {
    "schema": (
        "cmd_spec",
        "schema",
        "command",
        _h("Print the JSON Schema of a campaign spec (or, with --lab, of a lab file)."),
    ),
    "plan": (
        "cmd_spec",
        "plan",
        "command",
        _h("Expand a campaign spec into its runs and estimate the wall time. Runs nothing."),
    ),
    "run": (
        "cmd_run",
        "run",
        "command",
        _h(
            "Run a campaign: preflight every host, then the runs as scheduled; "
            "exit 3 if any run failed."
        ),
    ),
    "import": (
        "cmd_import",
        "import_",
        "command",
        _h("Import iperf3 JSON / iperf2 results netfleet did not run (--catalog: by reference)."),
    ),
    "verify": (
        "cmd_import",
        "verify",
        "command",
        _h("Hash every file an import by reference registered again: changed, corrupt, missing."),
    ),
    "export": (
        "cmd_export",
        "export",
        "command",
        _h("Print Athena / Trino / Spark DDL for the raw layout and the cheat-sheet query."),
    ),
    "ingest": (
        "cmd_catalog",
        "ingest",
        "command",
        _h("Turn raw result files into the Parquet catalog. Idempotent: only new runs are added."),
    ),
    "cheatsheet": (
        "cmd_catalog",
        "cheatsheet",
        "command",
        _h("Min / p5 / avg / p50 / p95 / max of interval goodput per group, over complete runs."),
    ),
    "sql": ("cmd_catalog", "sql", "command", _h("Run DuckDB SQL over the catalog's views.")),
    "analyze": (
        "cmd_analysis",
        "analyze",
        "command",
        _h("Segment each run's receiver series and estimate the credit bucket, each with ±."),
    ),
    "demo": (
        "cmd_demo",
        "demo",
        "command",
        _h(
            "Lab up, a campaign over both directions and 1 vs 2 streams, ingest, "
            "cheat sheet, lab down. Needs root."
        ),
    ),
    "doctor": (
        "cmd_doctor",
        "doctor",
        "command",
        _h("Check every host and client→server pair of a campaign before running it, then advice."),
    ),
    "advice": (
        "cmd_report",
        "advice",
        "command",
        _h("Advice with evidence over raw results (the same as `netfleet report advice`)."),
    ),
    "lab": (
        "cmd_lab",
        "app",
        "group",
        _h("Emulated cloud on this machine: namespaces, a switch, tbf shapers."),
    ),
    "inventory": (
        "cmd_inventory",
        "app",
        "group",
        _h("Inventories of hosts (YAML lists): import from Terraform/OpenTofu, show, check."),
    ),
    "credit": (
        "cmd_analysis",
        "credit_app",
        "group",
        _h("Network credits (token buckets): what a measured or given bucket lets you do."),
    ),
    "compare": (
        "cmd_compare",
        "compare",
        "command",
        _h(
            "Compare two campaigns or groups: difference with a bootstrap CI, effect size, verdict."
        ),
    ),
    "watch": (
        "cmd_watch",
        "watch",
        "command",
        _h("Run a campaign on a schedule; alert when a series leaves its rolling baseline."),
    ),
    "cloud": (
        "cmd_cloud",
        "app",
        "group",
        _h("AWS: plan the cost, launch, destroy and reap a campaign's machines (tag-verified)."),
    ),
    "report": ("cmd_report", "app", "group", _h("Answers over the catalog and the raw results.")),
}


def load_command(name: str) -> click.Command:
    """Import the module of one command and build its click command."""
    module_name, attr, kind, _ = LAZY_COMMANDS[name]
    module = importlib.import_module(f"netfleet.cli.{module_name}")
    target: Any = getattr(module, attr)
    # plain click help and usage errors, as for the root: typer's Rich help imports
    # rich.markdown, markdown-it and pygments, 5-7× `import typer` (issue 27.9)
    parent = typer.Typer(
        add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None
    )
    if kind == "group":  # as a sub-app of a parent, so a one-command app stays a group
        parent.add_typer(target, name=name)
    else:
        parent.command(name)(target)
        parent.command("_")(lambda: None)  # two commands: get_command builds a group
    group: Any = typer.main.get_command(parent)
    cmd: click.Command = group.commands[name]
    return cmd


class LazyGroup(TyperGroup):
    """A Typer group whose sub-commands are imported on first use."""

    _listing = False

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(LAZY_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in LAZY_COMMANDS:
            return None
        if self._listing:  # the root --help only needs each command's one-line help
            line = LAZY_COMMANDS[cmd_name][3]
            return TyperCommand(cmd_name, help=line, short_help=line)
        return load_command(cmd_name)

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False


app = typer.Typer(
    name="netfleet",
    cls=LazyGroup,
    rich_markup_mode=None,  # plain click help for the root: rich help would double start-up
    help="Measure what cloud networks really deliver: drive iperf3 across a fleet, keep every "
    "raw result, turn results into answers.\n\nExit status: 0 ok · 1 internal error · 2 invalid "
    "input · 3 some runs failed · 4 environment (host, tool, lab, permission) · 130 interrupted.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
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
