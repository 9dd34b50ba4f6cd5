"""Topologies: circle-method rounds, pairs/star/mesh expansion, spec checks, run keys."""

from __future__ import annotations

import itertools
import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from netfleet.errors import SpecError
from netfleet.plan import expand
from netfleet.plan.matrix import params_digest, run_key
from netfleet.plan.topology import circle_rounds
from netfleet.spec import load_spec


@given(st.integers(min_value=2, max_value=60))
def test_circle_rounds_meet_every_pair_once_without_overlap(n: int) -> None:
    hosts = [f"h{i}" for i in range(n)]
    rounds = circle_rounds(hosts)
    assert len(rounds) == (n - 1 if n % 2 == 0 else n)
    seen = [frozenset(p) for r in rounds for p in r]
    assert len(seen) == len(set(seen)) == n * (n - 1) // 2  # every pair exactly once
    for r in rounds:
        members = [h for p in r for h in p]
        assert len(members) == len(set(members)), "a host twice in one round"
        assert len(members) == (n if n % 2 == 0 else n - 1)  # odd n: exactly one bye


def test_odd_mesh_gives_each_host_one_bye() -> None:
    hosts = list("abcde")
    byes = [set(hosts) - {h for p in r for h in p} for r in circle_rounds(hosts)]
    assert all(len(b) == 1 for b in byes)
    assert sorted(next(iter(b)) for b in byes) == hosts


def test_small_inputs() -> None:
    assert circle_rounds([]) == [] and circle_rounds(["a"]) == []
    assert circle_rounds(["a", "b"]) == [[("a", "b")]]


SPEC = """\
campaign: topo
hosts:
  big: {kind: local}
  a: {kind: local}
  b: {kind: local}
  c: {kind: local}
  d: {kind: local}
tests:
%s
"""


def load(tmp_path: Path, tests: str, extra: str = ""):  # type: ignore[no-untyped-def]
    p = tmp_path / "s.yaml"
    p.write_text(SPEC % textwrap.indent(textwrap.dedent(tests), "  ") + extra)
    return load_spec(p)


def test_mesh_runs_every_ordered_pair_once_per_combination(tmp_path: Path) -> None:
    spec = load(
        tmp_path,
        """\
        - name: m
          topology: {kind: mesh, hosts: [a, b, c, d]}
          matrix: {parallel: [1, 2]}
        """,
    )
    runs = expand(spec)
    assert len(runs) == 4 * 3 * 2
    pairs = [(r.client, r.server, r.params.parallel) for r in runs]
    assert len(set(pairs)) == len(pairs)
    assert {(c, s) for c, s, _ in pairs} == set(itertools.permutations("abcd", 2))
    assert all(r.subject == "client" for r in runs)
    # round by round: the first 4 runs are round 1's two pairs (both ways) at parallel 1
    first = runs[:4]
    assert {frozenset((r.client, r.server)) for r in first} == {
        frozenset(("a", "d")),
        frozenset(("b", "c")),
    }
    assert all(r.params.parallel == 1 for r in first)


def test_star_pairs_and_all(tmp_path: Path) -> None:
    spec = load(
        tmp_path,
        """\
        - name: s
          topology: {kind: star, center: big, hosts: all}
          matrix: {direction: [out, in]}
        - name: p
          topology: {kind: pairs, hosts: [a, b, c, d]}
        """,
    )
    runs = expand(spec)
    star = [(r.client, r.server, r.params.direction) for r in runs if r.test == "s"]
    assert star[:4] == [
        ("a", "big", "out"),
        ("b", "big", "out"),
        ("c", "big", "out"),
        ("d", "big", "out"),
    ]
    assert len(star) == 8
    assert [(r.client, r.server) for r in runs if r.test == "p"] == [("a", "b"), ("c", "d")]


@pytest.mark.parametrize(
    ("tests", "message"),
    [
        ("- {name: p, topology: {kind: pairs, hosts: [a, b, c]}}", "even number"),
        ("- {name: s, topology: {kind: star, hosts: [a, b]}}", "needs 'center'"),
        ("- {name: m, topology: {kind: mesh, hosts: [a, a]}}", "more than once"),
        ("- {name: m, topology: {kind: mesh, hosts: [a, zz]}}", "'zz' is not in hosts"),
        ("- {name: m, topology: {kind: mesh, hosts: all, center: a}}", "'center' is for a star"),
        ("- {name: m, client: a, topology: {kind: mesh, hosts: all}}", "remove 'client:'"),
        (
            "- {name: m, topology: {kind: mesh, hosts: all}, matrix: {server: [a]}}",
            "remove matrix.server",
        ),
        ("- {name: p, topology: {kind: pairs, hosts: all}}", "explicit order"),
    ],
)
def test_bad_topologies_are_refused_with_the_fix(tmp_path: Path, tests: str, message: str) -> None:
    with pytest.raises(SpecError) as info:
        load(tmp_path, tests)
    assert message in str(info.value)
    assert "s.yaml:" in str(info.value)


def test_budget_needs_a_bitrate(tmp_path: Path) -> None:
    tests = "- {name: m, topology: {kind: mesh, hosts: all}, params: {duration: 1}}"
    with pytest.raises(SpecError, match="has no bitrate"):
        load(tmp_path, tests, "bandwidth_budget: 1gbit\n")
    tests = (
        "- {name: m, topology: {kind: mesh, hosts: all}, params: {bitrate: 600mbit, parallel: 2}}"
    )
    with pytest.raises(SpecError, match="more than the whole bandwidth_budget"):
        load(tmp_path, tests, "bandwidth_budget: 1gbit\n")
    tests = "- {name: m, topology: {kind: mesh, hosts: all}, params: {bitrate: 300mbit}}"
    assert load(tmp_path, tests, "bandwidth_budget: 1gbit\n").bandwidth_budget == "1gbit"


def test_run_keys_follow_the_documented_formula(tmp_path: Path) -> None:
    tests = "- {name: m, topology: {kind: mesh, hosts: all}, matrix: {parallel: [1, 2]}}"
    spec = load(tmp_path, tests)
    runs = expand(spec)
    for r in runs:
        digest = params_digest(r.engine, r.params)
        assert r.run_key == run_key(r.test, digest, r.client, r.server, r.repeat)
        assert r.run_key == f"m-{digest}-{r.client}-{r.server}-r{r.repeat}"
    assert len({r.run_key for r in runs}) == len(runs)
    # the digest covers every resolved parameter: different params, different digests
    assert len({params_digest(r.engine, r.params) for r in runs}) == 2
