"""Acquire in waves (issue 25.1) and run bounds from the catalogue (25.2): pure planning."""

from __future__ import annotations

import pytest

from netfleet.cloud.aws.plan.catalogue import InstanceInfo
from netfleet.cloud.plan import stopbound, waves

STD = "L-1216C47A"


def m(itype: str, vcpus: int, usd: float | None = 1.0) -> waves.Machine:
    return waves.Machine(itype, vcpus, usd, STD)


def held_at(plan: waves.WavePlan, t: float) -> int:
    return sum(
        mm.vcpus for s in plan.slots if s.start_s <= t < s.end_s for mm in s.job.machines
    ) + sum(mm.vcpus for mm in plan.shared)


def test_waves_hold_the_quota_and_start_as_soon_as_hosts_are_released() -> None:
    timing = waves.Timing(boot_s=100, install_s=50, release_s=10)
    jobs = [waves.Job(f"j{i}", (m("a", 8), m("a", 8)), run_s=100.0 * (i + 1)) for i in range(6)]
    plan = waves.plan(jobs, waves.Budget(vcpus={STD: 40}), timing, shared=[m("rx", 8)])
    # 8 (receiver) + 2 jobs × 16 = 40: two jobs at a time, the longest first
    assert [s.job.name for s in plan.slots[:2]] == ["j5", "j4"]
    assert plan.peak_vcpus[STD] == 40 and plan.peak_instances == 5
    ends = {s.end_s for s in plan.slots}
    for s in plan.slots:
        assert s.start_s == 0 or s.start_s in ends  # launched when another job released
        assert s.held_s == pytest.approx(160 + s.job.run_s)
    for t in sorted({s.start_s for s in plan.slots} | ends):
        assert held_at(plan, t) <= 40
    assert plan.wall_s == max(ends)
    billed = sum(2 * s.held_s for s in plan.slots) + plan.wall_s
    assert plan.instance_hours == pytest.approx(billed / 3600)
    assert plan.usd == pytest.approx(billed / 3600)
    assert plan.unfit == [] and plan.over_cost is None


def test_unlimited_budget_is_one_wave_and_short_holds_bill_a_minute() -> None:
    timing = waves.Timing(0, 0, 0)
    jobs = [waves.Job(f"j{i}", (m("a", 2, 3.6),), run_s=10.0) for i in range(3)]
    plan = waves.plan(jobs, waves.Budget(), timing)
    assert plan.waves == 1 and plan.wall_s == 10.0
    assert plan.usd == pytest.approx(3 * 3.6 * 60 / 3600)  # 60 s minimum each


def test_what_cannot_fit_names_the_limit_and_cost_is_bounded() -> None:
    jobs = [waves.Job("big", (m("x", 96),), 60.0), waves.Job("ok", (m("y", 4, 100.0),), 3600.0)]
    plan = waves.plan(jobs, waves.Budget(vcpus={STD: 64}, instances=3, max_cost=50.0))
    assert plan.unfit == [f"big: raise vCPU quota {STD} (96 > 64)"]
    assert [s.job.name for s in plan.slots] == ["ok"]
    assert plan.over_cost and "exceeds --max-cost $50.00" in plan.over_cost
    unpriced = waves.plan([waves.Job("n", (m("z", 2, None),), 60.0)], waves.Budget(max_cost=9))
    assert unpriced.usd is None and unpriced.over_cost and "cannot be bounded" in unpriced.over_cost


def test_the_receivers_gbit_bound_concurrency() -> None:
    jobs = [waves.Job(f"j{i}", (m("c", 2),), 100.0, gbps=25.0) for i in range(9)]
    plan = waves.plan(jobs, waves.Budget(gbps=100.0), waves.Timing(0, 0, 0))
    for t in {s.start_s for s in plan.slots}:
        live = [s for s in plan.slots if s.start_s <= t < s.end_s]
        assert sum(s.job.gbps for s in live) <= 100.0
    assert plan.waves == 3 and plan.wall_s == 300.0
    assert len(plan.slots) == 9


def info(perf: str, base: float | None, peak: float | None) -> InstanceInfo:
    return InstanceInfo("t.x", 2, 4.0, perf, base, peak, "required", ("x86_64",))


def test_run_bounds_follow_the_catalogue() -> None:
    fixed = stopbound.bound(info("25 Gigabit", 25.0, 25.0))
    assert fixed.seconds == stopbound.STEADY_S and not fixed.long and "no credits" in fixed.why
    r4 = stopbound.bound(info("Up to 10 Gigabit", 0.75, 10.0), bucket_gbit=2700.0)
    tau = 2700 / 9.25
    assert r4.seconds == pytest.approx(tau * 1.25 + 30) and r4.long and "τ ≈ 292 s" in r4.why
    unknown = stopbound.bound(info("Up to 10 Gigabit", 0.75, 10.0))
    assert unknown.seconds == 3630 and "bucket unknown" in unknown.why
    given = stopbound.bound(info("Up to 10 Gigabit", 0.75, 10.0), longest_burst_s=600)
    assert given.seconds == 630 and "longest plausible burst given" in given.why
    bare = stopbound.bound(None)
    assert bare.seconds == 3630 and "no catalogue figures" in bare.why
