"""A campaign's plan as a table: one row per run, with the estimated wall time."""

from __future__ import annotations

from typing import TYPE_CHECKING

from netfleet.tabular import Tabular

if TYPE_CHECKING:
    from netfleet.plan.summary import Plan


def plan_table(planned: Plan) -> Tabular:
    """One row per planned run, the wall-time estimate in the notes."""
    from netfleet.plan.normalise import expected_wall_seconds, normalised

    spec, runs, est = planned.spec, planned.runs, planned.estimated_seconds
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
            + (f"; up to {planned.concurrency} at once" if planned.concurrency > 1 else ""),
            "expected_s: adaptive runs stop once steady (a burst adds its length); "
            "max_s: every phase at its maximum. normalised: rates in bit/s, sizes in bytes.",
        ],
        decimals=1,
    )
