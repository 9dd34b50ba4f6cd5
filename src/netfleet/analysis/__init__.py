"""Burst vs baseline: segment every run's receiver series and estimate the credit bucket.

::

    from netfleet.analysis import analyze_run, analyze_catalog
    from netfleet.report.analysis_tables import runs_table
    from netfleet.report.plots import analysis_figure

    a = analyze_run("results/", RUN_ID)            # RunAnalysis: series, segmentation, credit
    a.segmentation.classification                 # steady | burst-then-baseline | erratic | ...
    a.credit.bucket, a.credit.as_wire().peak      # Estimate(value, err[, lower_bound])
    groups = analyze_catalog("catalog/", by=("instance_type", "direction"))
    svg = analysis_figure([a])                    # the series, its levels, the burst end

    from netfleet.analysis import BucketModel, burst_period
    r4 = BucketModel.of(baseline=0.75e9, peak=10e9, bucket=2700e9)   # seed 004's r4.large
    burst_period(r4, rate=10e9, seconds=10, use=0.6e9)               # ≈ 627 s

Method, bounds and formulas: docs/analysis.md.
"""

from netfleet.analysis.analyze import (
    GroupAnalysis,
    GroupCredit,
    RunAnalysis,
    analyze_group,
    analyze_phases,
    analyze_rows,
    analyze_series,
    combine,
    group_runs,
)
from netfleet.analysis.calculator import (
    BucketModel,
    DutyCycle,
    accrual_rate,
    burst_period,
    burst_seconds,
    duty_cycle,
    refill_seconds,
    rule_of_thumb_period,
)
from netfleet.analysis.credit import CreditEstimate, Drop, bucket_from_series, estimate_credit
from netfleet.analysis.estimate import Estimate
from netfleet.analysis.refill import (
    RefillEstimate,
    RefillPoint,
    RefillProbe,
    analyze_refill,
    estimate_refill,
    probes_from_phases,
    refill_points,
    regained_credit,
)
from netfleet.analysis.segments import (
    NoChangeTest,
    Segment,
    Segmentation,
    SegmentationConfig,
    segment,
)
from netfleet.analysis.series import (
    RunInfo,
    Series,
    SeriesUnavailable,
    run_from_envelope,
    series_from_rows,
)
from netfleet.analysis.sources import (
    analyze_catalog,
    analyze_document,
    analyze_file,
    analyze_run,
    analyzed_raw,
    catalog_documents,
    catalog_runs,
    find_run,
    registered_documents,
    run_document,
)

__all__ = [
    "BucketModel",
    "CreditEstimate",
    "Drop",
    "DutyCycle",
    "Estimate",
    "GroupAnalysis",
    "GroupCredit",
    "NoChangeTest",
    "RefillEstimate",
    "RefillPoint",
    "RefillProbe",
    "RunAnalysis",
    "RunInfo",
    "Segment",
    "Segmentation",
    "SegmentationConfig",
    "Series",
    "SeriesUnavailable",
    "accrual_rate",
    "analyze_catalog",
    "analyze_document",
    "analyze_file",
    "analyze_group",
    "analyze_phases",
    "analyze_refill",
    "analyze_rows",
    "analyze_run",
    "analyze_series",
    "analyzed_raw",
    "bucket_from_series",
    "burst_period",
    "burst_seconds",
    "catalog_documents",
    "catalog_runs",
    "combine",
    "duty_cycle",
    "estimate_credit",
    "estimate_refill",
    "find_run",
    "group_runs",
    "probes_from_phases",
    "refill_points",
    "refill_seconds",
    "regained_credit",
    "registered_documents",
    "rule_of_thumb_period",
    "run_document",
    "run_from_envelope",
    "segment",
    "series_from_rows",
]
