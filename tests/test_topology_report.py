"""Issue 36.8: ``report topology`` averaged a 1-stream and a 2-stream run (11.03 and 12.73
Gbit/s → "11.9", a configuration nobody ran). Now the stream count that carried the most is
the row's figure, named in ``streams``, with each count's own average beside it."""

from __future__ import annotations

from pathlib import Path

import pytest

from netfleet.catalog import ingest
from netfleet.report.topology import topology_table
from netfleet.store import ResultsRoot
from tests.test_catalog import make_envelope


def test_stream_counts_are_never_averaged_together(tmp_path: Path) -> None:
    root = ResultsRoot(tmp_path / "raw")
    rates = {}
    for name in ("tcp_1stream", "tcp_p2"):
        env = make_envelope(name, name, labels={"topology": "same-az"})
        assert env.result is not None
        rates[env.params.get("parallel", 1)] = (
            env.result["end"]["sum_received"]["bits_per_second"] / 1e9
        )
        root.write(env)
    ingest(root, tmp_path / "cat")
    assert len(rates) == 2 and rates[1] != rates[2]
    [row] = topology_table(tmp_path / "cat").records()
    best = max(rates, key=lambda p: rates[p])
    assert row["throughput_gbps"] == pytest.approx(rates[best])
    assert row["streams"] == str(best) and row["throughput_runs"] == 1
    assert row["throughput_by_streams"] == f"1: {rates[1]:.2f}, 2: {rates[2]:.2f}"
    assert row["throughput_gbps"] != pytest.approx((rates[1] + rates[2]) / 2)
