"""``netfleet cloud``: launch, price, destroy and reap AWS resources."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from netfleet import api
from netfleet.cli.console import ask_at_terminal, console
from netfleet.cli.options import FormatOpt, ResultsOpt, emit
from netfleet.report import OutputFormat, Tabular
from netfleet.text import plain

if TYPE_CHECKING:
    from netfleet.api._selftest import Step as SelftestStep

app = typer.Typer(
    help="AWS: launch what a campaign measures, price it, tear it down.", no_args_is_help=True
)
prices_app = typer.Typer(help="The dated EC2/Fargate price table.", no_args_is_help=True)
app.add_typer(prices_app, name="prices")

StateOpt = Annotated[
    Path | None,
    typer.Option(
        "--state-dir",
        help=f"intent journals and keys [env {api.CLOUD_DIR_ENV}; default "
        "~/.local/state/netfleet/cloud]",
    ),
]
SpecArg = Annotated[Path, typer.Argument(metavar="SPEC", help="cloud campaign file (YAML)")]


@app.command()
def plan(spec: SpecArg, state_dir: StateOpt = None, fmt: FormatOpt = OutputFormat.table) -> None:
    """Estimated cost and instance count (nothing is launched)."""
    emit(api.cloud_plan(spec, state_dir=state_dir), fmt)


MaxCost = Annotated[float, typer.Option("--max-cost", help="refuse above this estimate (USD)")]
MaxInst = Annotated[int, typer.Option("--max-instances", help="refuse above this many instances")]
Yes = Annotated[
    bool,
    typer.Option(
        "--yes",
        help="confirm the launch, on real AWS without asking (never lifts --max-cost/"
        "--max-instances)",
    ),
]


@app.command()
def up(
    spec: SpecArg,
    state_dir: StateOpt = None,
    max_cost: MaxCost = 5.0,
    max_instances: MaxInst = 10,
    yes: Yes = False,
    release: Annotated[
        bool,
        typer.Option(
            "--release",
            help="tear down right after (a check that the account can launch and clean up)",
        ),
    ] = False,
) -> None:
    """Reap expired leftovers, then launch the campaign's machines (torn down on any error)."""
    launched = api.cloud_up(
        spec,
        state_dir=state_dir,
        max_cost=max_cost,
        max_instances=max_instances,
        yes=yes,
        release=release,
        say=lambda line: console.print(plain(line)),
        show=lambda table: emit(table, OutputFormat.table),
        ask=ask_at_terminal(),
    )
    emit(launched.table(), OutputFormat.table)
    if launched.released:
        console.print("released: 0 resources remain")


@app.command()
def destroy(
    campaign: Annotated[str, typer.Argument(help="campaign name")],
    state_dir: StateOpt = None,
    region: Annotated[list[str] | None, typer.Option(help="also sweep this region by tag")] = None,
) -> None:
    """Delete everything of CAMPAIGN, from its intent journal alone; fails if anything remains."""
    counts = api.cloud_destroy(campaign, state_dir=state_dir, region=region)
    console.print(
        f"destroyed {escape(campaign)}: " + ", ".join(f"{k}={v}" for k, v in counts.items())
    )


@app.command()
def reap(
    state_dir: StateOpt = None,
    region: Annotated[list[str] | None, typer.Option(help="also look in this region")] = None,
    delete: Annotated[bool, typer.Option("--delete", help="delete (default: dry run)")] = False,
    all_owners: Annotated[
        bool,
        typer.Option("--all-owners", help="also other installations' expired campaigns"),
    ] = False,
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """Find this installation's resources whose expires-at tag has passed, in every region used
    (dry run default)."""
    found = api.cloud_reap(state_dir=state_dir, region=region, delete=delete, all_owners=all_owners)
    rows = [[e.region, e.campaign, e.expires_at, e.counts] for e in found]
    emit(
        Tabular(
            ["region", "campaign", "expires_at", "resources"],
            rows,
            title="expired campaigns" + ("" if delete else " (dry run: --delete to remove)"),
        ),
        fmt,
    )


@prices_app.command("show")
def prices_show(state_dir: StateOpt = None, fmt: FormatOpt = OutputFormat.table) -> None:
    """The price table in use, with its source and date."""
    found = api.cloud_prices(state_dir=state_dir)
    t = found.table
    rows = [[r, ty, p] for r, types in sorted(t.ec2.items()) for ty, p in sorted(types.items())]
    notes = [f"source: {t.source}", f"as of {t.as_of} ({t.path})"]
    if found.stale:
        notes.append("warning: " + found.stale)
    emit(
        Tabular(
            ["region", "instance_type", "usd_per_hour"],
            rows,
            title="EC2 on-demand",
            notes=notes,
            decimals=4,
        ),
        fmt,
    )


@prices_app.command("refresh")
def prices_refresh(
    state_dir: StateOpt = None,
    region: Annotated[list[str] | None, typer.Option(help="regions (default: the table's)")] = None,
    instance_type: Annotated[
        list[str] | None,
        typer.Option("--instance-type", help="also price these types (any, not only the table's)"),
    ] = None,
) -> None:
    """Update the table from the AWS Pricing API (needs network and pricing:GetProducts)."""
    done = api.cloud_prices_refresh(state_dir=state_dir, region=region, instance_type=instance_type)
    console.print(f"prices refreshed as of {done.table.as_of}: {done.path}")
    for m in done.missing:
        console.print(f"  not found (old price kept): {escape(m)}")


@app.command()
def selftest(
    region: Annotated[str, typer.Option("--region", help="the region to test")] = "us-east-1",
    instance_type: Annotated[
        str, typer.Option("--instance-type", help="the two instances' type (nano/micro)")
    ] = "t3.micro",
    seconds: Annotated[
        float, typer.Option("--seconds", help="the iperf3 run's length (1-60 s)")
    ] = 10.0,
    results: ResultsOpt = None,
    backing: Annotated[
        str,
        typer.Option(
            "--backing",
            help="ssh: measure the instances; sim: lab namespaces stand in for them (root, "
            "loopback endpoints only: netfleet's own tests)",
        ),
    ] = "ssh",
    controller_cidr: Annotated[
        str | None,
        typer.Option(
            "--controller-cidr",
            help="this machine's public address/32 (the security group admits SSH from it; "
            "backing ssh)",
        ),
    ] = None,
    max_cost: Annotated[
        float, typer.Option("--max-cost", help="refuse above this estimate (USD)")
    ] = 0.10,
    yes: Yes = False,
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """Run the smallest campaign that makes every call a study makes — credentials,
    permissions, quotas, image, network, launch, readiness, a 10 s iperf3 between two small
    instances, the result stored, release — and report each step (time, what AWS answered,
    the fix); nothing is left behind. Run it first on a new account (about $0.01). Exit 0
    when every step passed; else 2 (refused), 3 (the measurement failed), 4 (the account is
    not ready), 6 (resources may remain: netfleet cloud destroy netfleet-selftest)."""
    from contextlib import nullcontext

    from netfleet.cli.progress import RichReporter

    live = fmt is OutputFormat.table

    def step_line(step: SelftestStep) -> None:
        colour = {"ok": "green", "warn": "yellow", "fail": "red"}.get(step.status, "dim")
        took = "" if step.seconds is None else f" ({step.seconds:.1f} s)"
        console.print(f"[{colour}]{step.status:>7}[/] {escape(step.name)}{took}")
        if step.name == "image":
            console.print(
                "        now the campaign itself: plan, network, launch, readiness, iperf3, "
                "release (a few minutes on AWS)"
            )

    def say_line(line: str) -> None:
        console.print(plain(line))

    def say_on_stderr(line: str) -> None:  # the account and cost before a real launch
        print(plain(line), file=sys.stderr)

    with RichReporter(console) if live else nullcontext() as reporter:
        found = api.cloud_selftest(
            region=region,
            instance_type=instance_type,
            seconds=seconds,
            results=results,
            backing=backing,
            controller_cidr=controller_cidr,
            max_cost=max_cost,
            yes=yes,
            reporter=reporter,
            say=say_line if live else say_on_stderr,
            ask=ask_at_terminal(),
            on_step=step_line if live else None,
        )
    emit(found.table(), fmt)
    if found.exit_status:
        raise typer.Exit(found.exit_status)
