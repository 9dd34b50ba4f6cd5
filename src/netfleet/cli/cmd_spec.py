"""``netfleet schema`` and ``netfleet plan``: look at a campaign before running it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from netfleet import api
from netfleet.cli.options import FormatOpt, emit
from netfleet.report import OutputFormat, Tabular
from netfleet.spec import spec_schema


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
    planned = api.plan(spec_path)
    spec, runs, est = planned.spec, planned.runs, planned.estimated_seconds
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
            r.params.measured_seconds(),
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
            "seconds",
            "params",
        ],
        rows,
        title=f"campaign {spec.campaign}",
        notes=[
            f"{len(runs)} runs, estimated wall time {est:.0f} s ({est / 60:.1f} min) "
            f"incl. {spec.cooldown:g} s cooldown between runs; order {spec.order}"
            + (f"; up to {planned.concurrency} at once" if planned.concurrency > 1 else "")
        ],
        decimals=1,
    )


def plan(
    spec: Annotated[Path, typer.Argument(help="campaign spec (YAML)")],
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """Expand a campaign spec into its runs and estimate the wall time. Runs nothing."""
    emit(plan_table(spec), fmt)
