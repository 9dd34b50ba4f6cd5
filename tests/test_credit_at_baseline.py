"""Issue 27: a refill test right after a burst test on the same host starts with an empty bucket
— the best start — and must say so quickly, not sit at the baseline for the whole drain and then
call the run inconclusive. Real iperf3 over a tbf credit shaper in a lab."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from netfleet.analysis import analyze_file
from netfleet.engines.params.credit import CreditParams
from tests.labkit import lab_campaign, lab_up, run, write_spec

pytestmark = [
    pytest.mark.netns,
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces"),
]

BASE = 50e6
GOODPUT = 1448 / 1514
PARAMS = {"duration": 60, "idle": [4], "until_steady": 3, "burst_max": 15, "parallel": 1}


def test_a_drain_that_starts_at_the_baseline_ends_early_and_measures_the_refill(
    tmp_path: Path,
) -> None:
    body = """\
        subnet: 198.18.133.0/24
        hosts:
          srv: {}
          cr: {out: {rate: 50mbit, peak: 200mbit, bucket: 300mbit}}
        """
    with lab_up(tmp_path, body, prefix="cb") as (name, state):
        spec = write_spec(
            tmp_path,
            lab_campaign(
                name,
                "refill-after-burst",
                {"srv": "srv", "cr": "cr"},
                f"""\
            tests:
              - name: burst            # empties the bucket (2 s at peak, then the baseline)
                engine: iperf3
                client: cr
                server: srv
                params: {{duration: 5, parallel: 1}}
              - name: refill           # right after: the bucket is empty
                engine: credit
                client: cr
                server: srv
                params: {PARAMS}
            """,
            ),
        )
        t0 = time.monotonic()
        result = run(spec, tmp_path / "r", state)
        wall = time.monotonic() - t0
    burst, refill = result.envelopes
    assert burst.status == "ok" and refill.status == "ok", refill.reason
    assert refill.result is not None
    phases = refill.result["phases"]
    assert [p["phase"] for p in phases] == ["drain", "check", "burst"], phases
    drain, check = phases[0], phases[1]
    assert check["at_baseline"] is True
    # the drain stopped once steady (8 intervals at least, for the analysis), not at its 60 s
    assert drain["ended_s"] - drain["started_s"] < 15
    assert abs(check["level_bps"] / (BASE * GOODPUT) - 1) < 0.05
    # the plan's estimate holds for this run (each run also starts its servers: a few s)
    assert refill.duration_s is not None
    assert refill.duration_s <= CreditParams(**PARAMS).expected_seconds() + 5, refill.duration_s
    assert wall < 60
    path = result.paths[1]
    a = analyze_file(path)
    assert a.credit.kind == "baseline-only", a.credit
    assert a.credit.baseline is not None
    assert abs(a.credit.baseline.value / (BASE * GOODPUT) - 1) < 0.05
    assert any("already at its baseline" in n for n in a.credit.notes)
    assert a.refill is not None and a.refill.points, a.refill
