"""A campaign's plan as a table: one row per run, with the estimated wall time."""

from __future__ import annotations

from typing import TYPE_CHECKING

from netfleet.tabular import Tabular

if TYPE_CHECKING:
    from netfleet.plan.matrix import PlannedRun
    from netfleet.plan.normalise import HostLabels
    from netfleet.plan.summary import Plan


def plan_table(planned: Plan) -> Tabular:
    """One row per planned run, the wall-time estimate in the notes."""
    from netfleet.plan.normalise import (
        expected_run_seconds,
        expected_wall_seconds,
        normalised,
    )

    spec, runs, est = planned.spec, planned.runs, planned.estimated_seconds
    labels = planned.host_labels
    expected = expected_wall_seconds(runs, est, labels)
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
            expected_run_seconds(r, labels),
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
            *_bursts_note(runs, labels),
            *(f"refill: {line}" for line in planned.refill),
        ],
        decimals=1,
    )


def _bursts_note(runs: list[PlannedRun], labels: HostLabels) -> list[str]:
    """Which burst lengths the expected times rest on, or that none is known."""
    from netfleet.engines.burstable import full_burst_s
    from netfleet.plan.normalise import run_burst_s

    adaptive = [r for r in runs if getattr(r.params, "until_steady", None) is not None]
    if not adaptive:
        return []
    hosts = sorted({h for r in adaptive for h in (r.client, r.server)})
    known = {h: b for h in hosts if (b := full_burst_s(labels.get(h, {}))) is not None}
    if not known:
        return [
            "adaptive runs: no host's burst length is known (labels burst_s, or bucket_gbit with "
            "baseline_gbps and peak_gbps; a lab's shapers): expected_s leaves the burst out"
        ]
    said = ", ".join(f"{h} {b:,.1f} s" for h, b in known.items())
    missing = [r for r in adaptive if run_burst_s(r, labels) is None]
    rest = f"; {len(missing)} adaptive runs with no known burst" if missing else ""
    return [f"expected_s adds each host's full burst σ / (C − ρ): {said}{rest}"]
