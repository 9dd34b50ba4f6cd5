"""Issue 9, case 1: an adaptive run must not stop inside a burst and call its peak "steady".

Real iperf3 in a lab namespace: a credit host whose burst (≈15 s) outlasts ``until_steady`` (4–6 s)
with no ``min_duration`` in the spec — before the fix the run stopped at ≈3 s on the peak and
analyze said "steady". Now the lab host is known burstable, so the default ``min_duration``
waits for the burst to end (or the maximum) and the level is only called steady with evidence.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from netfleet.analysis.analyze import RunAnalysis
from netfleet.analysis.sources import analyze_file
from netfleet.catalog import ingest
from netfleet.report.topology import topology_table
from tests.labkit import lab_campaign, lab_up, run, write_spec

pytestmark = [
    pytest.mark.netns,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces"),
]

# burst: 1500 Mbit of credit at 150 − 50 Mbit/s = 15 s at peak, then 50 Mbit/s; fix: a steady host.
# 15 s, not 10: on a loaded CI machine the early stop below once came at 10.0 s, the burst's edge.
LAB = """\
    subnet: 198.18.43.0/24
    hosts:
      srv: {}
      cr:
        labels: {instance_type: credit}
        out: {rate: 50mbit, peak: 150mbit, bucket: 1500mbit}
      fix:
        labels: {instance_type: fixed}
        out: {rate: 80mbit}
    """


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    with lab_up(tmp_path, LAB, prefix="e") as made:
        yield made


def spec(tmp_path: Path, name: str, client: str, params: str) -> Path:
    tests = f"""\
        tests:
          - name: a
            client: {client}
            server: srv
            params: {params}
        """
    hosts = {"srv": "srv", client: client}
    return write_spec(tmp_path, lab_campaign(name, "evidence", hosts, tests), f"{client}.yaml")


def one_run(
    tmp_path: Path, lab: tuple[str, Path], client: str, params: str
) -> tuple[dict[str, Any], RunAnalysis, float]:
    """One adaptive run: its ``notes.adaptive``, the analysis of its raw file, and how long
    the run itself took (its ``duration_s``)."""
    name, state = lab
    result = run(spec(tmp_path, name, client, params), tmp_path / "r", state)
    [env] = result.envelopes
    assert env.status == "ok", env.reason
    return env.notes["adaptive"], analyze_file(Path(result.paths[0])), env.duration_s


@pytest.mark.slow
def test_a_burst_longer_than_until_steady_is_not_called_steady(
    lab: tuple[str, Path], tmp_path: Path
) -> None:
    adaptive, analysis, _ = one_run(tmp_path, lab, "cr", "{duration: 24, until_steady: 4}")
    assert adaptive["burstability"] == "burstable"
    assert adaptive["min_duration_s"] == 24  # the longest documented burst, capped at duration
    # it ran past the burst: either it saw the drop, or it says it could not tell
    assert adaptive["stopped_at_s"] > 15
    if adaptive["verdict"] == "steady":
        assert "level drop" in adaptive["steady_evidence"]
    # the analysed level is not the peak taken for steady: a burst, or "no drop"
    assert analysis.credit.kind in ("burst", "no-drop"), analysis.credit


def test_a_fixed_rate_host_may_stop_early_and_says_why(
    lab: tuple[str, Path], tmp_path: Path
) -> None:
    adaptive, analysis, took = one_run(tmp_path, lab, "fix", "{duration: 30, until_steady: 6}")
    assert adaptive["burstability"] == "fixed"
    assert adaptive["verdict"] == "steady"
    assert adaptive["steady_evidence"] == "host known fixed-rate"
    # well before the 30 s maximum: the run's own time, not the test's (a first analysis
    # imports SciPy, seconds on a busy machine)
    assert took < 25
    assert analysis.credit.kind == "steady"


def test_without_evidence_the_run_says_no_drop(lab: tuple[str, Path], tmp_path: Path) -> None:
    """An explicit short min_duration on the burst host: the run stops inside the burst, and
    everything says "no drop within N s", never steady."""
    params = "{duration: 24, until_steady: 6, min_duration: 0}"
    adaptive, analysis, _ = one_run(tmp_path, lab, "cr", params)
    assert adaptive["stop"] == "steady" and adaptive["stopped_at_s"] < 15  # inside the burst
    assert adaptive["verdict"] == "no-drop"
    assert "no drop within" in adaptive["verdict_text"]
    assert analysis.credit.kind == "no-drop"
    assert "a longer burst is possible" in analysis.credit.reason
    assert analysis.classification == "no-drop"


def test_a_burst_test_right_after_traffic_records_a_possibly_partial_bucket(
    lab: tuple[str, Path], tmp_path: Path
) -> None:
    """Issue 9 case 3 for real: a burst test minutes (here: seconds) after other traffic on the
    credit host is recorded as ``bucket_state: possibly-partial`` and analyze says so."""
    name, state = lab
    tests = """\
        tests:
          - {name: first, client: cr, server: srv, params: {duration: 3}}
          - name: burst
            client: cr
            server: srv
            params: {duration: 20, until_steady: 6, min_duration: 0}
        """
    path = write_spec(tmp_path, lab_campaign(name, "partial", {"srv": "srv", "cr": "cr"}, tests))
    result = run(path, tmp_path / "r", state)
    first, burst = result.envelopes
    assert "bucket_state" not in first.notes  # not a burst test
    assert burst.notes["bucket_state"]["state"] == "possibly-partial"
    assert burst.notes["bucket_state"]["hosts"][0]["host"] == "cr"
    # it stops early, on the peak (≈ 6 s; the bucket lasts ≈ 12 s more): no end summary. A
    # maximum of 8 s was once reached first in CI (a noisy peak on a busy machine), and the
    # run ended with iperf3's summary
    assert burst.notes["adaptive"]["stop"] == "steady", burst.notes["adaptive"]
    analysis = analyze_file(Path(result.paths[1]))
    assert any("possibly-partial" in n for n in analysis.credit.notes)
    # issue 9 case 5: the adaptive run has no end summary: blank with a reason, never 0.00
    ingest(tmp_path / "r", tmp_path / "cat")
    table = topology_table(tmp_path / "cat", by="test")
    rows = {r[0]: dict(zip(table.columns, r, strict=True)) for r in table.rows}
    assert rows["first"]["throughput_gbps"] > 0
    assert rows["burst"]["throughput_gbps"] is None
    assert any("no end summary" in n for n in table.notes)
