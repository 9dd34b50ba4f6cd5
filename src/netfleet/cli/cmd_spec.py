"""``netfleet schema`` and ``netfleet plan``: look at a campaign before running it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from netfleet.cli.options import FormatOpt, emit
from netfleet.plan import estimate_seconds, expand
from netfleet.plan.normalise import expected_wall_seconds, normalised
from netfleet.report import OutputFormat, Tabular
from netfleet.runner.scheduler import Limits, estimate_wall_seconds
from netfleet.spec import load_spec, spec_schema


def schema(
    lab: Annotated[bool, typer.Option("--lab", help="the lab file's schema instead")] = False,
) -> None:
    """Print the JSON Schema of a campaign spec (or, with --lab, of a lab file)."""
    if lab:
        from netfleet.lab import lab_schema

        print(json.dumps(lab_schema(), indent=2))
    else:
        print(json.dumps(spec_schema(), indent=2))


def plan_table(spec_path: Path) -> Tabular:
    spec = load_spec(spec_path)
    runs = expand(spec)
    limits = Limits.of(spec)
    est = (
        estimate_wall_seconds(runs, limits)
        if limits.concurrency > 1
        else estimate_seconds(spec, runs)
    )
    expected = expected_wall_seconds(runs, est)
    rows = [
        [
            r.sequence,
            r.run_key,
            r.test,
            r.engine,
            r.client,
            r.server,
            r.subject,
            r.params.run_direction(),
            r.params.summary(),
            r.params.expected_seconds(),
            r.params.measured_seconds(),
            normalised(r.params.model_dump(exclude_defaults=True)),
            r.params.model_dump(exclude_defaults=True),
        ]
        for r in runs
    ]
    return Tabular(
        [
            "seq",
            "run_key",
            "test",
            "engine",
            "client",
            "server",
            "subject",
            "direction",
            "summary",
            "expected_s",
            "max_s",
            "normalised",
            "params",
        ],
        rows,
        title=f"campaign {spec.campaign}",
        notes=[
            f"{len(runs)} runs, estimated wall time {expected:.0f} s ({expected / 60:.1f} min) "
            f"expected, at most {est:.0f} s ({est / 60:.1f} min), "
            f"incl. {spec.cooldown:g} s cooldown between runs; order {spec.order}"
            + (f"; up to {limits.concurrency} at once" if limits.concurrency > 1 else ""),
            "expected_s: adaptive runs stop once steady (a burst adds its length); "
            "max_s: every phase at its maximum. normalised: rates in bit/s, sizes in bytes.",
        ],
        decimals=1,
    )


def plan(
    spec: Annotated[Path, typer.Argument(help="campaign spec (YAML)")],
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """Expand a campaign spec into its runs and estimate the wall time. Runs nothing."""
    emit(plan_table(spec), fmt)
