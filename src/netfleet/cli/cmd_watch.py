"""``netfleet watch SPEC --every 6h``: a campaign on a schedule, each round judged against its
rolling baseline; exit 5 while an alert is open (docs/watch.md)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from netfleet import api
from netfleet.cli.console import console
from netfleet.cli.options import CatalogOpt, LabStateOpt, ResultsOpt
from netfleet.text import plain

#: the webhook URL may carry a token: systemd units read it from this variable, not argv
WEBHOOK_ENV = "NETFLEET_WATCH_WEBHOOK"


def _series(rec: dict[str, Any]) -> str:
    s = rec.get("series", {})
    where = f"{s.get('client', '')}→{s.get('server', '')} {s.get('direction', '')}"
    extra = " ".join(v for k, v in s.items() if k in ("test", "instance_type") and v)
    return plain(f"{where} {extra} {rec.get('metric', '')}".strip(), keep_newlines=False)


def _render_round(rr: Any) -> None:
    n_alert = len(rr.open_alerts)
    colour = "red" if n_alert else "yellow" if rr.runs_failed else "green"
    building = sum(j.state == "building" for j in rr.judgements)
    console.print(
        f"[{colour}]round {rr.round}[/] {rr.time}: {rr.runs_ok} runs ok, {rr.runs_failed} "
        f"failed; {len(rr.judgements)} series, {n_alert} in alert"
        + (f", {building} building a baseline" if building else "")
    )
    for rec in rr.alerts:
        pct = rec.get("diff_percent")
        change = f"{pct:+.1f} %" if isinstance(pct, float) else "?"
        base, recent, unit = rec.get("baseline_mean"), rec.get("recent_mean"), rec.get("unit")
        values = (
            f"{base:.4g} → {recent:.4g} {plain(unit or '')}"
            if isinstance(base, float) and isinstance(recent, float)
            else ""
        )
        style = "red" if rec["event"] == "alert raised" else "green"
        console.print(f"  [{style}]{rec['event']}[/] {_series(rec)}: {values} ({change})")
    for err in rr.webhook_errors:
        console.print(f"  [yellow]{plain(err, keep_newlines=False)}[/]")


def watch(
    spec_path: Annotated[Path, typer.Argument(metavar="SPEC", help="campaign spec (YAML)")],
    every: Annotated[
        str | None,
        typer.Option("--every", help="round period, e.g. 6h (default: spec watch.every)"),
    ] = None,
    rounds: Annotated[
        int | None, typer.Option("--rounds", min=1, help="stop after N rounds (default: never)")
    ] = None,
    threshold: Annotated[
        str | None,
        typer.Option("--threshold", help="smallest change of the baseline mean that alerts [10%]"),
    ] = None,
    window: Annotated[
        int | None, typer.Option("--window", help="rounds in the rolling baseline [10]")
    ] = None,
    state: Annotated[
        Path | None,
        typer.Option("--state", help="watch state, alert log, metrics [.netfleet-watch/CAMPAIGN]"),
    ] = None,
    results: ResultsOpt = None,
    catalog: CatalogOpt = None,
    webhook: Annotated[
        str | None,
        typer.Option(
            "--webhook",
            help=f"POST each alert as JSON to this http(s) URL [env {WEBHOOK_ENV}]",
            show_default=False,
        ),
    ] = None,
    metrics_file: Annotated[
        Path | None,
        typer.Option("--metrics-file", help="OpenMetrics text file [STATE/metrics.prom]"),
    ] = None,
    metrics_listen: Annotated[
        str | None,
        typer.Option("--metrics-listen", help="also serve /metrics on a loopback ADDR:PORT"),
    ] = None,
    level: Annotated[float, typer.Option(help="confidence level of the interval")] = 0.95,
    seed: Annotated[int, typer.Option(help="bootstrap seed")] = 0,
    state_dir: LabStateOpt = None,
    print_systemd: Annotated[
        bool, typer.Option("--print-systemd", help="print a service + timer unit; run nothing")
    ] = False,
    install_systemd: Annotated[
        bool,
        typer.Option("--install-systemd", help="write the units and enable the timer; run nothing"),
    ] = False,
    unit_dir: Annotated[
        Path | None,
        typer.Option("--unit-dir", help="where --install-systemd writes [/etc/systemd/system]"),
    ] = None,
    no_enable: Annotated[
        bool, typer.Option("--no-enable", help="--install-systemd: write only, run no systemctl")
    ] = False,
) -> None:
    """Run the campaign every --every, compare each round with the rolling baseline of the same
    host pair / type / direction / test (compare's bootstrap + Welch interval) and raise an alert
    when the change is significant and ≥ --threshold; a later round back at the baseline clears
    it. Alerts: STATE/alerts.jsonl, --webhook, OpenMetrics file/endpoint. Exit 5 while an alert
    is open after the last round."""
    if webhook:  # given here, not by the variable: every local user can read it
        print(
            f"warning: --webhook on the command line is visible to every local user "
            f"(/proc/PID/cmdline, ps); the URL may hold a token: set {WEBHOOK_ENV} instead",
            file=sys.stderr,
        )
    webhook = webhook or os.environ.get(WEBHOOK_ENV) or None
    exe = str(Path(shutil.which("netfleet") or sys.argv[0]).absolute())
    result = api.watch(
        spec_path, every=every, rounds=rounds, threshold=threshold, window=window, state=state,
        results=results, catalog=catalog, webhook=webhook, metrics_file=metrics_file,
        metrics_listen=metrics_listen, level=level, seed=seed, state_dir=state_dir,
        print_systemd=print_systemd, install_systemd=install_systemd, unit_dir=unit_dir,
        no_enable=no_enable, executable=exe,
        on_round=_render_round,
    )  # fmt: skip
    if result.units is not None:
        u = result.units
        if print_systemd:
            print(f"# {u.name}.service\n{u.service}\n# {u.name}.timer\n{u.timer}")
        for path in result.installed:
            console.print(f"wrote {plain(path)}")
        return
    if result.exit_status:
        raise typer.Exit(int(result.exit_status))
