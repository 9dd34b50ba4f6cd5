"""The one parser of iperf3's received rate, on captured real output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from netfleet.engines.iperf3 import received_bps

FIX = Path(__file__).parent / "fixtures" / "iperf3"


def test_end_summary_is_the_receivers_rate() -> None:
    doc = json.loads((FIX / "tcp_1stream.json").read_text())
    want = doc["end"]["sum_received"]["bits_per_second"]
    assert received_bps(doc) == pytest.approx(want)
    assert received_bps(doc, intervals=False) == pytest.approx(want)


def test_empty_end_falls_back_to_intervals_only_when_asked() -> None:
    doc = json.loads((FIX / "tcp_omit1.json").read_text())
    kept = [iv["sum"]["bits_per_second"] for iv in doc["intervals"] if not iv["sum"]["omitted"]]
    stopped = {**doc, "end": {}}
    assert received_bps(stopped) == pytest.approx(sum(kept) / len(kept))
    assert received_bps(stopped, intervals=False) is None
    assert received_bps(None) is None and received_bps({"end": "x"}) is None
