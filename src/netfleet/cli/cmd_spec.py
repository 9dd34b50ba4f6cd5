"""``netfleet schema`` and ``netfleet plan``: look at a campaign before running it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from netfleet import api
from netfleet.cli.options import FormatOpt, MaxRunsOpt, ResultsOpt, emit
from netfleet.report import OutputFormat
from netfleet.report.plan import plan_table


def schema(
    lab: Annotated[bool, typer.Option("--lab", help="the lab file's schema instead")] = False,
) -> None:
    """Print the JSON Schema of a campaign spec (or, with --lab, of a lab file)."""
    print(json.dumps(api.schema(lab=lab), indent=2))


def plan(
    spec: Annotated[Path, typer.Argument(help="campaign spec (YAML)")],
    fmt: FormatOpt = OutputFormat.table,
    max_runs: MaxRunsOpt = None,
    results: ResultsOpt = None,
) -> None:
    """Expand a campaign spec into its runs and estimate the wall time. Runs nothing. Says
    which burstable hosts a burst test would use within their refill time (the journals under
    the results root)."""
    the_plan = api.plan(spec, cost=fmt == OutputFormat.table, max_runs=max_runs, results=results)
    emit(plan_table(the_plan), fmt)
    if the_plan.cost is not None:  # what launching would cost
        emit(the_plan.cost, fmt)
