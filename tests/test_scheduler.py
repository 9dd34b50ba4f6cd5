"""The scheduler on a virtual clock: concurrency, host exclusivity, overlap, budget, cooldown,
mesh rounds. ``simulate`` drives exactly the logic the runner uses."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netfleet.errors import InputError
from netfleet.plan import estimate_seconds, expand
from netfleet.plan.matrix import PlannedRun
from netfleet.runner.scheduler import Limits, Scheduler, Slot, simulate
from netfleet.spec import load_spec
from netfleet.spec.bandwidth import planned_bitrate
from netfleet.spec.models import CampaignSpec


def spec_of(hosts: int, tests: str, extra: str = "") -> CampaignSpec:
    names = "\n".join(f"  h{i}: {{kind: local}}" for i in range(hosts))
    text = f"campaign: s\nhosts:\n{names}\ntests:\n{textwrap.indent(tests, '  ')}\n{extra}"
    return CampaignSpec.model_validate(__import__("yaml").safe_load(text))


def overlaps(slots: list[Slot], allowed: set[str] = frozenset()) -> list[str]:  # type: ignore[assignment]
    """Hosts found in two runs at the same time (outside ``allowed``)."""
    bad = []
    for i, a in enumerate(slots):
        for b in slots[i + 1 :]:
            if a.start < b.end and b.start < a.end:
                shared = {a.run.client, a.run.server} & {b.run.client, b.run.server} - allowed
                bad += sorted(shared)
    return bad


def peak(slots: list[Slot], value=lambda s: 1.0) -> float:  # type: ignore[no-untyped-def]
    events = sorted(
        [(s.start, value(s)) for s in slots] + [(s.end, -value(s)) for s in slots],
        key=lambda e: (e[0], e[1]),
    )
    level = top = 0.0
    for _, v in events:
        level += v
        top = max(top, level)
    return top


@settings(max_examples=25, deadline=None)
@given(st.integers(min_value=2, max_value=13), st.integers(min_value=1, max_value=8))
def test_mesh_runs_in_rounds_without_a_host_twice(n: int, concurrency: int) -> None:
    spec = spec_of(n, "- {name: m, topology: {kind: mesh, hosts: all}, params: {duration: 10}}")
    runs = expand(spec)
    slots = simulate(runs, Limits(concurrency=concurrency), duration=lambda r: 1.0)
    assert len(slots) == n * (n - 1)
    assert not overlaps(slots)
    assert peak(slots) <= concurrency
    if concurrency >= n // 2:
        # equal runs: n−1 rounds (n for odd n), each a→b then b→a on every pair
        rounds = n - 1 if n % 2 == 0 else n
        assert max(s.end for s in slots) == pytest.approx(2.0 * rounds)


def test_star_is_sequential_unless_the_center_may_overlap() -> None:
    tests = "- {name: s, topology: {kind: star, center: h0, hosts: all}, params: {duration: 5}}"
    runs = expand(spec_of(6, tests))
    alone = simulate(runs, Limits(concurrency=8), duration=lambda r: 1.0)
    assert peak(alone) == 1 and max(s.end for s in alone) == 5
    shared = simulate(runs, Limits(concurrency=3, overlap=frozenset({"h0"})), lambda r: 1.0)
    assert peak(shared) == 3
    assert not overlaps(shared, allowed={"h0"})
    assert max(s.end for s in shared) == 2  # 5 clients, 3 at a time


def test_budget_caps_the_sum_of_planned_rates() -> None:
    tests = (
        "- {name: p, topology: {kind: pairs, hosts: [h0, h1, h2, h3, h4, h5, h6, h7]},\n"
        "   params: {bitrate: 300mbit, parallel: 1}, matrix: {parallel: [1, 2]}}"
    )
    spec = spec_of(8, tests, "bandwidth_budget: 1gbit\nconcurrency: 10\n")
    runs = expand(spec)
    limits = Limits.of(spec)
    assert limits.budget_bps == 1e9
    slots = simulate(runs, limits, duration=lambda r: 1.0)
    top = peak(slots, lambda s: planned_bitrate(s.run.params) or 0.0)
    assert 0 < top <= 1e9
    assert peak(slots) >= 2  # still concurrent


def test_budget_refuses_runs_without_a_bitrate() -> None:
    runs = expand(spec_of(2, "- {name: t, client: h0, server: h1}"))
    with pytest.raises(InputError, match="bandwidth budget"):
        Scheduler(runs, Limits(budget_bps=1e9))


def test_cooldown_rests_each_host() -> None:
    tests = "- {name: p, topology: {kind: pairs, hosts: [h0, h1, h2, h3]}, matrix: {omit: [0, 1]}}"
    runs = expand(spec_of(4, tests))
    slots = simulate(runs, Limits(concurrency=4, cooldown_s=5), duration=lambda r: 1.0)
    by_pair: dict[str, list[Slot]] = {}
    for s in slots:
        by_pair.setdefault(s.run.client, []).append(s)
    for pair in by_pair.values():
        first, second = sorted(pair, key=lambda s: s.start)
        assert second.start - first.end == pytest.approx(5)
    assert peak(slots) == 2


def test_sequential_estimate_matches_the_plan_estimate(tmp_path: Path) -> None:
    p = tmp_path / "s.yaml"
    p.write_text(
        "campaign: c\nhosts: {a: {kind: local}, b: {kind: local}}\n"
        "tests: [{name: t, client: a, server: b, matrix: {parallel: [1, 2, 4]}}]\ncooldown: 7\n"
    )
    spec = load_spec(p)
    runs = expand(spec)
    slots = simulate(runs, Limits.of(spec))
    assert [s.run.sequence for s in slots] == [0, 1, 2]
    assert max(s.end for s in slots) == pytest.approx(estimate_seconds(spec, runs))


def test_cli_concurrency_overrides_the_spec() -> None:
    spec = spec_of(2, "- {name: t, client: h0, server: h1}", "concurrency: 3\n")
    assert Limits.of(spec).concurrency == 3
    assert Limits.of(spec, concurrency=7).concurrency == 7
    assert (
        Limits.of(
            spec_of(2, "- {name: t, client: h0, server: h1}", "allow_host_overlap: true\n")
        ).overlap
        is None
    )


def test_plan_order_is_the_priority() -> None:
    runs: list[PlannedRun] = expand(
        spec_of(
            4,
            "- {name: t, client: h0, server: h1, matrix: {parallel: [1, 2, 3]}}\n"
            "- {name: u, client: h2, server: h3}",
        )
    )
    sched = Scheduler(runs, Limits(concurrency=4))
    first = sched.take(0.0)
    assert [r.test for r in first] == ["t", "u"]  # t's other runs wait for h0/h1
    assert sched.take(0.0) == []
    sched.finished(first[0], 1.0)
    assert [r.params.parallel for r in sched.take(1.0)] == [2]


@st.composite
def plans(draw: st.DrawFn) -> tuple[list[PlannedRun], Limits, dict[int, float]]:
    n = draw(st.integers(min_value=2, max_value=7))
    kinds = draw(
        st.lists(st.sampled_from(["mesh", "star", "pairs", "plain"]), min_size=1, max_size=3)
    )
    tests = []
    for i, kind in enumerate(kinds):
        if kind == "mesh":
            tests.append(f"- {{name: t{i}, topology: {{kind: mesh, hosts: all}}}}")
        elif kind == "star":
            tests.append(f"- {{name: t{i}, topology: {{kind: star, center: h0, hosts: all}}}}")
        elif kind == "pairs" and n >= 4:
            tests.append(f"- {{name: t{i}, topology: {{kind: pairs, hosts: [h0, h1, h2, h3]}}}}")
        else:
            tests.append(f"- {{name: t{i}, client: h{n - 1}, server: h0}}")
    runs = expand(spec_of(n, "\n".join(tests)))
    overlap = draw(st.sets(st.sampled_from([f"h{i}" for i in range(n)]), max_size=2))
    limits = Limits(
        concurrency=draw(st.integers(min_value=1, max_value=5)),
        cooldown_s=draw(st.sampled_from([0.0, 1.0])),
        overlap=frozenset(overlap),
    )
    durations = {r.sequence: float(draw(st.integers(min_value=1, max_value=4))) for r in runs}
    return runs, limits, durations


@settings(max_examples=150, deadline=None)
@given(plans())
def test_indexed_and_scanned_decisions_make_the_same_schedule(
    plan: tuple[list[PlannedRun], Limits, dict[int, float]],
) -> None:
    """Runs grouped by hosts (index) or found by scanning the plan: both must give exactly the
    greedy schedule."""
    runs, limits, durations = plan

    def length(r: PlannedRun) -> float:
        return durations[r.sequence]

    exact = simulate(runs, limits, length, window=10**9, index=False)
    indexed = simulate(runs, limits, length, window=10**9, index=True)
    assert [(s.run.sequence, s.start) for s in indexed] == [
        (s.run.sequence, s.start) for s in exact
    ]
    assert not overlaps(exact, allowed=set(limits.overlap or ()))
