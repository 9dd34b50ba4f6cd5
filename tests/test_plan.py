"""Matrix expansion: product, include/exclude, repeats, order, deterministic run keys."""

from __future__ import annotations

import textwrap
from pathlib import Path

from netfleet.plan import estimate_seconds, expand
from netfleet.spec import load_spec

SPEC = """\
campaign: p
hosts:
  a: {kind: local}
  b: {kind: local}
  c: {kind: local}
tests:
  - name: t
    server: c
    params: {duration: 4, omit: 1}
    matrix: {client: [a, b], direction: [out, in], parallel: [1, 2]}
    exclude: [{client: b, parallel: 2}]
    include: [{client: a, direction: bidir, parallel: 1}]
  - name: u
    client: a
    server: b
    subject: server
repeats: 2
cooldown: 3
"""


def load(tmp_path: Path, text: str = SPEC):  # type: ignore[no-untyped-def]
    p = tmp_path / "s.yaml"
    p.write_text(textwrap.dedent(text))
    return load_spec(p)


def test_product_exclude_include_repeats(tmp_path: Path) -> None:
    runs = expand(load(tmp_path))
    # test t: 2*2*2 = 8, minus 2 excluded (b, P2), plus 1 included = 7; test u: 1; ×2 repeats
    assert len(runs) == 16
    t0 = [r for r in runs if r.test == "t" and r.repeat == 0]
    assert not any(r.client == "b" and r.params.parallel == 2 for r in t0)
    assert sum(r.params.direction == "bidir" for r in t0) == 1
    assert [r.sequence for r in runs] == list(range(16))
    assert runs[-1].test == "u" and runs[-1].subject == "server"


def test_run_keys_are_deterministic_and_unique(tmp_path: Path) -> None:
    a = [r.run_key for r in expand(load(tmp_path))]
    b = [r.run_key for r in expand(load(tmp_path))]
    assert a == b
    assert len(set(a)) == len(a)


def test_shuffle_is_seeded(tmp_path: Path) -> None:
    base = expand(load(tmp_path))
    s1 = expand(load(tmp_path, SPEC + "order: shuffled\nseed: 1\n"))
    s1b = expand(load(tmp_path, SPEC + "order: shuffled\nseed: 1\n"))
    s2 = expand(load(tmp_path, SPEC + "order: shuffled\nseed: 2\n"))
    assert [r.run_key for r in s1] == [r.run_key for r in s1b]
    assert [r.run_key for r in s1] != [r.run_key for r in s2]
    assert sorted(r.run_key for r in s1) == sorted(r.run_key for r in base)
    assert [r.run_key for r in s1] != [r.run_key for r in base]


def test_estimate(tmp_path: Path) -> None:
    spec = load(tmp_path)
    runs = expand(spec)
    measured = sum(r.params.duration + r.params.omit for r in runs)
    est = estimate_seconds(spec, runs)
    assert est > measured + 3 * (len(runs) - 1)
    assert est < measured + 3 * (len(runs) - 1) + 5 * len(runs)


def test_default_timeout_covers_the_run(tmp_path: Path) -> None:
    for r in expand(load(tmp_path)):
        assert r.timeout >= r.params.duration + r.params.omit + 10
