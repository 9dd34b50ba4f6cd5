"""``netfleet schema`` and ``netfleet plan``: look at a campaign before running it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from netfleet import api
from netfleet.cli.options import FormatOpt, emit
from netfleet.report import OutputFormat
from netfleet.report.plan import plan_table
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


def plan(
    spec: Annotated[Path, typer.Argument(help="campaign spec (YAML)")],
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """Expand a campaign spec into its runs and estimate the wall time. Runs nothing."""
    the_plan = api.plan(spec)
    emit(plan_table(the_plan), fmt)
    cloud = any(h.kind == "aws" for h in the_plan.spec.hosts.values())
    if cloud and fmt == OutputFormat.table:  # what launching would cost
        from netfleet.cloud.runs import plan_cost

        priced = plan_cost(the_plan.spec, the_plan.estimated_seconds)
        if priced is not None:
            emit(priced.table, fmt)
