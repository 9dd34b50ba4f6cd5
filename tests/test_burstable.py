"""Which min_duration an adaptive run uses, and when a flat level may be called steady."""

from __future__ import annotations

import pytest

from netfleet.analysis.analyze import analyze_series
from netfleet.analysis.series import RunInfo
from netfleet.engines.burstable import (
    LONGEST_DOCUMENTED_BURST_S,
    adaptive_verdict,
    default_min_duration,
    fixed_basis,
    fleet_burstability,
    host_burstability,
    steady_evidence,
)
from tests.bucketsim import token_bucket_series


@pytest.mark.parametrize(
    ("labels", "kind"),
    [
        ({"burstable": True}, "burstable"),
        ({"burstable": "false"}, "fixed"),
        ({"network_performance": "Up to 10 Gigabit"}, "burstable"),
        ({"network_performance": "25 Gigabit"}, "fixed"),
        ({"instance_type": "r4.large"}, "unknown"),
        # catalogue figures (DescribeInstanceTypes labels, strings as the catalogue writes them)
        ({"baseline_gbps": "25", "peak_gbps": "25"}, "fixed"),
        ({"baseline_gbps": 0.75, "peak_gbps": 10.0}, "burstable"),
        ({"baseline_gbps": "0.75"}, "unknown"),
    ],
)
def test_labels_say_what_is_known(labels: dict[str, object], kind: str) -> None:
    assert host_burstability(labels) == kind


def test_any_burstable_host_makes_the_run_burstable() -> None:
    assert fleet_burstability([{"burstable": False}, {"burstable": True}]) == "burstable"
    assert fleet_burstability([{"burstable": False}, {}]) == "unknown"
    assert fleet_burstability([{"burstable": False}, {"burstable": False}]) == "fixed"


def test_default_min_duration_depends_on_the_host() -> None:
    assert default_min_duration(None, "burstable", 7200).seconds == LONGEST_DOCUMENTED_BURST_S
    assert default_min_duration(None, "burstable", 600).seconds == 600  # capped at duration
    unknown = default_min_duration(None, "unknown", 7200)
    assert unknown.seconds == LONGEST_DOCUMENTED_BURST_S
    assert "unknown" in unknown.basis and "burstable: false" in unknown.basis
    assert default_min_duration(None, "fixed", 7200).seconds == 0
    assert default_min_duration(45, "burstable", 7200).seconds == 45  # the spec wins


def test_steady_needs_evidence() -> None:
    common = {"drop_seen_at": None, "at_target": False}
    assert steady_evidence(**common, burstability="unknown", span=30) is None
    assert steady_evidence(**common, burstability="burstable", span=3600) is not None
    assert steady_evidence(**common, burstability="fixed", span=30) == "host known fixed-rate"
    assert steady_evidence(drop_seen_at=32, at_target=False, burstability="unknown", span=62)


def test_catalogue_figures_or_a_given_longest_burst_bound_the_wait() -> None:
    """Issue 27.8: a steady host without min_duration no longer waits the whole duration when
    its catalogue figures say no credits, or when the spec gives the longest plausible burst;
    and the run says which."""
    hosts = [{"baseline_gbps": "10", "peak_gbps": "10"}, {"baseline_gbps": 10, "peak_gbps": 10}]
    why = fixed_basis(hosts)
    assert why == "catalogue figures: baseline = peak (10 Gbit/s), no credits"
    fixed = default_min_duration(None, fleet_burstability(hosts), 300, fixed_why=why)
    assert fixed.seconds == 0 and fixed.basis.startswith("catalogue figures")
    assert fixed_basis([{"burstable": False}]) == "host known fixed-rate"
    given = default_min_duration(None, "unknown", 300, longest_burst=20)
    assert given.seconds == 20 and "longest plausible burst given" in given.basis
    assert default_min_duration(None, "unknown", 10, longest_burst=20).seconds == 10
    assert default_min_duration(5, "unknown", 300, longest_burst=20).seconds == 5
    common = {"drop_seen_at": None, "at_target": False, "burstability": "unknown"}
    assert steady_evidence(**common, span=19, longest_burst=20) is None
    ev = steady_evidence(**common, span=21, longest_burst=20)
    assert ev == "ran 21 s, longer than the longest plausible burst given (20 s)"


def test_old_results_without_a_drop_are_no_drop() -> None:
    """Results written before the fix: stop "steady" at 30 s with no drop seen."""
    old = {"stop": "steady", "drop_seen_at_s": None, "stopped_at_s": 30.0}
    assert adaptive_verdict(old) == "no drop within 30 s (a longer burst is possible)"
    assert adaptive_verdict({**old, "drop_seen_at_s": 12.0}) is None


def test_issue_9_case_1_a_32_s_burst_stopped_at_30_s_is_not_steady() -> None:
    """The reported trap: until_steady 30 stopped at 30.0 s inside a 32 s burst at 95.6 Mbit/s
    (baseline 19.1): analyze said "steady 95.64". Same series, same notes: now "no-drop"."""
    series = token_bucket_series(95.6e6, 19.1e6, (95.6e6 - 19.1e6) * 32, 30, jitter=0.002)
    notes = {"adaptive": {"stop": "steady", "drop_seen_at_s": None, "stopped_at_s": 30.0}}
    a = analyze_series(RunInfo("r1", notes=notes), series)
    assert a.segmentation.classification == "steady"  # one flat level, as before
    assert a.credit.kind == "no-drop" and a.classification == "no-drop"
    assert "no drop within 30 s" in a.credit.reason
    # the same series from a host known fixed-rate may be steady
    fixed = {"adaptive": {**notes["adaptive"], "steady_evidence": "host known fixed-rate"}}
    assert analyze_series(RunInfo("r2", notes=fixed), series).credit.kind == "steady"


def test_issue_36_a_steady_level_above_the_catalogue_baseline_is_the_burst() -> None:
    """r4.4xlarge in the r4 lab (×0.05): 001d0e3 stopped at 94 s inside its 119.5 s burst and
    analyze said "steady 9.46 Gbit/s" beside the host's own ``baseline_gbps: 5``. The run's
    evidence ("level drop seen") does not outweigh the catalogue: the level is the burst."""
    series = token_bucket_series(473e6, 250e6, (473e6 - 250e6) * 200, 94, jitter=0.002)
    notes = {"adaptive": {"stop": "steady", "steady_evidence": "level drop seen at 94.0 s",
                          "drop_seen_at_s": 94.0, "stopped_at_s": 94.04}}  # fmt: skip
    labels = {"instance_type": "r4.4xlarge", "baseline_gbps": 5, "peak_gbps": 10,
              "lab_scale": 0.05}  # fmt: skip
    a = analyze_series(RunInfo("r1", notes=notes, labels=labels), series)
    assert a.credit.kind == "no-drop"
    assert a.credit.reason == (
        "steady 9.46 Gbit/s (cloud units: the lab's ÷ 0.05) but the catalogue baseline is "
        "5 Gbit/s: still in the burst"
    )
    # at the baseline the same labels agree with the verdict
    base = token_bucket_series(250e6, 250e6, 0.0, 60, jitter=0.002)
    assert analyze_series(RunInfo("r2", notes=notes, labels=labels), base).credit.kind == "steady"
