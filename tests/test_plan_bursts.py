"""Issue 36 (Misleading 6): an adaptive burst run's expected time adds its hosts' full burst
σ / (C − ρ), from their labels or the lab's shapers, and ``run``'s "about …" is ``plan``'s
expected figure (seed 004 on the r4 lab: "expected 32 s", the run said "about 12.1 min", it
took 3 min 22 s)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from netfleet import api
from netfleet.plan.matrix import PlannedRun
from netfleet.plan.normalise import expected_wall_seconds
from netfleet.report.plan import plan_table

R4 = """\
campaign: r4-family
hosts:
  server: {kind: netns, lab: r4, host: server}
  large: {kind: netns, lab: r4, host: r4-large}
  xl4: {kind: netns, lab: r4, host: r4-4xlarge}
tests:
  - name: burst
    server: server
    matrix: {client: [large, xl4]}
    params: {duration: 180, until_steady: 3, parallel: 2}
"""


def test_issue_36_plan_adds_the_r4_lab_s_burst_to_an_adaptive_run(tmp_path: Path) -> None:
    """The r4 profile's shapers (lab not up: the shipped profile is read): r4-large bursts
    6750 Mbit / (500 − 37.5) Mbit/s = 14.6 s, r4-4xlarge 119.5 s. 001d0e3 expected each run
    to stop at until_steady + 5 intervals = 8 s."""
    spec = tmp_path / "r4.yaml"
    spec.write_text(R4)
    table = plan_table(api.plan(spec, cost=False))
    rows = {r["client"]: r for r in table.records()}
    assert rows["large"]["expected_s"] == pytest.approx(14.6 + 3 + 5)
    assert rows["xl4"]["expected_s"] == pytest.approx(119.5 + 3 + 5)
    assert any("large 14.6 s" in n and "xl4 119.5 s" in n for n in table.notes), table.notes


def test_issue_36_a_cloud_host_s_labels_give_its_burst(tmp_path: Path) -> None:
    """r4.large's catalogue figures and its bucket: 2700 Gbit / (10 − 0.75) Gbit/s = 292 s;
    a host labelled fixed-rate adds nothing; a host with no figures says so in a note."""
    spec = tmp_path / "c.yaml"
    spec.write_text(
        "campaign: c\n"
        "hosts:\n"
        "  r4: {kind: local, labels: {baseline_gbps: 0.75, peak_gbps: 10, bucket_gbit: 2700}}\n"
        "  c5: {kind: local, labels: {burstable: false, burst_s: 99}}\n"
        "  srv: {kind: local}\n"
        "tests:\n"
        "  - {name: b, server: srv, matrix: {client: [r4, c5]},"
        " params: {duration: 900, until_steady: 5}}\n"
    )
    rows = {r["client"]: r for r in plan_table(api.plan(spec, cost=False)).records()}
    assert rows["r4"]["expected_s"] == pytest.approx(2700 / 9.25 + 5 + 5)
    assert rows["c5"]["expected_s"] == pytest.approx(5 + 5)


class _Said(Exception):
    pass


class _Catch:
    """A reporter that keeps what ``run`` says at the start, then stops the campaign."""

    said: tuple[float, float | None] | None = None

    def campaign_started(
        self, runs: list[PlannedRun], estimate_s: float, most_s: float | None = None
    ) -> None:
        self.said = (estimate_s, most_s)
        raise _Said

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return lambda *a, **k: None


def test_issue_36_run_says_the_plan_s_expected_time(tmp_path: Path) -> None:
    """001d0e3's run said "about" the maximum (every adaptive run to its duration); plan said
    the first possible stop without the burst. Both now say the same expected figure."""
    from netfleet.runner import run_campaign
    from netfleet.spec import load_spec
    from netfleet.store import open_root

    spec = tmp_path / "l.yaml"
    spec.write_text(
        "campaign: l\n"
        "hosts:\n"
        "  a: {kind: local, address: 127.0.0.1, labels: {burst_s: 40}}\n"
        "  b: {kind: local, address: 127.0.0.1}\n"
        "tests:\n"
        "  - {name: t, client: a, server: b, params: {duration: 600, until_steady: 3}}\n"
    )
    planned = api.plan(spec, cost=False)
    expected = expected_wall_seconds(planned.runs, planned.estimated_seconds, planned.host_labels)
    rep = _Catch()
    campaign = load_spec(spec)
    with pytest.raises(_Said):
        asyncio.run(run_campaign(campaign, open_root(str(tmp_path / "results")), rep))  # type: ignore[arg-type]
    assert rep.said is not None
    assert rep.said[0] == pytest.approx(expected)
    assert rep.said[0] == pytest.approx((40 + 3 + 5) / 600 * planned.estimated_seconds, rel=0.01)
    assert rep.said[1] == pytest.approx(planned.estimated_seconds)
