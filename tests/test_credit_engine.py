"""The credit test for real: drain the bucket, idle T, burst — refill grows with T, then caps."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from netfleet.engines.iperf3_live import parse_text_intervals
from tests.labkit import lab_campaign, lab_up, run, write_spec

pytestmark = [
    pytest.mark.netns,
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces"),
]

BASE, PEAK, BUCKET_MBIT = 50e6, 200e6, 300


def regained_mbit(server_text: str, baseline: float) -> float:
    """Credits spent in a burst: what the receiver got above the baseline."""
    ivs = [iv for iv in parse_text_intervals(server_text, 1) if iv.end - iv.start > 0.5]
    return sum(max(0.0, iv.bits_per_second - baseline) * (iv.end - iv.start) for iv in ivs) / 1e6


def test_credit_phases_measure_refill_and_cap(tmp_path: Path) -> None:
    body = f"""\
        subnet: 198.18.131.0/24
        hosts:
          srv: {{}}
          cr: {{out: {{rate: 50mbit, peak: 200mbit, bucket: {BUCKET_MBIT}mbit}}}}
        """
    with lab_up(tmp_path, body, prefix="c") as (name, state):
        spec = write_spec(
            tmp_path,
            lab_campaign(
                name,
                "refill",
                {"srv": "srv", "cr": "cr"},
                """\
            tests:
              - name: refill
                engine: credit
                client: cr
                server: srv
                params: {duration: 30, idle: [2, 12], until_steady: 3, burst_max: 30,
                          parallel: 1}
            """,
            ),
        )
        result = run(spec, tmp_path / "r", state)
    [env] = result.envelopes
    assert env.status == "ok", env.reason
    assert env.result is not None
    phases = env.result["phases"]
    assert [p["phase"] for p in phases] == ["drain", "burst", "burst"]
    assert [p["idle_s"] for p in phases] == [None, 2, 12]
    baseline = phases[0]["adaptive"]["level_bps"]
    assert abs(baseline / (BASE * 1448 / 1514) - 1) < 0.05
    short, long_ = (regained_mbit(p["server_stdout"], baseline) for p in phases[1:])
    goodput = 1448 / 1514
    # refill at the baseline rate: 2 s idle regains about 2 × 50 Mbit
    assert 0.6 * 100 * goodput < short < 1.5 * 100 * goodput, short
    # 12 s would regain 600 Mbit, but the bucket holds 300: the cap shows
    assert abs(long_ / (BUCKET_MBIT * goodput) - 1) < 0.2, long_
