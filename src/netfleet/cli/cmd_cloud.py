"""``netfleet cloud``: launch, price, destroy and reap AWS resources (the lead registers this
sub-app in cli/main.py as ``app.add_typer(cmd_cloud.app, name="cloud")``)."""

from __future__ import annotations

import datetime as dt
import signal
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from netfleet import aws
from netfleet.cli.console import console
from netfleet.cli.options import FormatOpt, emit
from netfleet.cloud import costs, prices, teardown
from netfleet.cloud.campaign import CloudSpec
from netfleet.cloud.journal import CLOUD_DIR_ENV, default_root
from netfleet.cloud.provision import Provisioner
from netfleet.report import OutputFormat, Tabular
from netfleet.spec.yamlsrc import load_model
from netfleet.text import plain

app = typer.Typer(
    help="AWS: launch what a campaign measures, price it, tear it down.", no_args_is_help=True
)
prices_app = typer.Typer(help="The dated EC2/Fargate price table.", no_args_is_help=True)
app.add_typer(prices_app, name="prices")

StateOpt = Annotated[
    Path | None,
    typer.Option(
        "--state-dir",
        help=f"intent journals and keys [env {CLOUD_DIR_ENV}; default "
        "~/.local/state/netfleet/cloud]",
    ),
]
SpecArg = Annotated[Path, typer.Argument(metavar="SPEC", help="cloud campaign file (YAML)")]


def _sigterm_as_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def state_root(opt: Path | None) -> Path:
    return opt or default_root()


def _load(spec: Path) -> CloudSpec:
    return load_model(CloudSpec, spec, what="cloud campaign")


@app.command()
def plan(spec: SpecArg, state_dir: StateOpt = None, fmt: FormatOpt = OutputFormat.table) -> None:
    """Estimated cost and instance count (nothing is launched)."""
    cs = _load(spec)
    spot, why = costs.spot_prices(cs)
    priced = costs.plan(cs, prices.load(state_root(state_dir)), spot=spot)
    if why:
        priced.table.notes.append(why)
    emit(priced.table, fmt)


MaxCost = Annotated[float, typer.Option("--max-cost", help="refuse above this estimate (USD)")]
MaxInst = Annotated[int, typer.Option("--max-instances", help="refuse above this many instances")]
Yes = Annotated[bool, typer.Option("--yes", help="launch even above the limits")]


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
    cs = _load(spec)
    root = state_root(state_dir)
    spot, _ = costs.spot_prices(cs)
    costs.guard(costs.plan(cs, prices.load(root), spot=spot).estimate, max_cost, max_instances, yes)
    from netfleet.cloud import quotas

    quotas.enforce(cs, lambda line: console.print(plain(line)))
    teardown.reap(root, cs.regions, dt.datetime.now(dt.UTC), delete=True)
    prov = Provisioner(cs, root)
    previous = signal.signal(signal.SIGTERM, _sigterm_as_interrupt)
    try:
        hosts = prov.acquire()
    except BaseException:
        # error, Ctrl-C or SIGTERM: tear down before going; a SIGKILL skips this, and then
        # `cloud destroy` / `cloud reap` / the instances' own shutdown timer finish the job
        prov.release()
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
    rows = [
        [h.name, h.instance_id, h.instance_type, h.region, h.az, h.private_ip, h.public_ip]
        for h in hosts
    ]
    emit(
        Tabular(
            ["host", "instance", "type", "region", "zone", "private_ip", "public_ip"],
            rows,
            title=f"campaign {cs.campaign}",
            notes=[
                f"known_hosts pinned: {prov.journal.dir / 'known_hosts'}",
                f"expires at {prov.expires_at:%Y-%m-%dT%H:%M:%SZ}",
            ],
        ),
        OutputFormat.table,
    )
    if release:
        prov.release()
        console.print("released: 0 resources remain")


@app.command()
def destroy(
    campaign: Annotated[str, typer.Argument(help="campaign name")],
    state_dir: StateOpt = None,
    region: Annotated[list[str] | None, typer.Option(help="also sweep this region by tag")] = None,
) -> None:
    """Delete everything of CAMPAIGN, from its intent journal alone; fails if anything remains."""
    counts = teardown.destroy(state_root(state_dir), campaign, regions=region or [])
    console.print(
        f"destroyed {escape(campaign)}: " + ", ".join(f"{k}={v}" for k, v in counts.items())
    )


@app.command()
def reap(
    state_dir: StateOpt = None,
    region: Annotated[list[str] | None, typer.Option(help="also look in this region")] = None,
    delete: Annotated[bool, typer.Option("--delete", help="delete (default: dry run)")] = False,
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """Find resources whose expires-at tag has passed, in every region used (dry run default)."""
    found = teardown.reap(
        state_root(state_dir), region or [], dt.datetime.now(dt.UTC), delete=delete
    )
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
    t = prices.load(state_root(state_dir))
    rows = [[r, ty, p] for r, types in sorted(t.ec2.items()) for ty, p in sorted(types.items())]
    notes = [f"source: {t.source}", f"as of {t.as_of} ({t.path})"]
    warn = prices.stale_warning(t)
    if warn:
        notes.append("warning: " + warn)
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
) -> None:
    """Update the table from the AWS Pricing API (needs network and pricing:GetProducts)."""
    root = state_root(state_dir)
    t = prices.load(root)
    regions = region or sorted(t.ec2)
    types = sorted({ty for r in t.ec2.values() for ty in r})
    new, missing = prices.refresh(
        aws.client("pricing", "us-east-1"), t, regions, types, dt.date.today()
    )
    path = prices.save(new, root)
    console.print(f"prices refreshed as of {new.as_of}: {path}")
    for m in missing:
        console.print(f"  not found (old price kept): {escape(m)}")
