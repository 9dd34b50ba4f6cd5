"""Adaptive duration for real: iperf3 in a lab namespace stops once the baseline is steady."""

from __future__ import annotations

import asyncio
import os
import secrets
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from netfleet import lab
from netfleet.catalog import connect, ingest
from netfleet.runner import run_campaign
from netfleet.spec import load_spec
from netfleet.store import ResultsRoot

pytestmark = [
    pytest.mark.netns,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces"),
]


@pytest.fixture
def credit_lab(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    name = "a" + secrets.token_hex(3)
    state = tmp_path / "labstate"
    f = tmp_path / "lab.yaml"
    # burst: 300 Mbit of credit at 200 - 50 Mbit/s ≈ 2 s at peak, then 50 Mbit/s
    f.write_text(
        textwrap.dedent(f"""\
        name: {name}
        subnet: 198.18.42.0/24
        hosts:
          srv: {{}}
          cr:
            labels: {{instance_type: credit}}
            out: {{rate: 50mbit, peak: 200mbit, bucket: 300mbit}}
        """)
    )
    lab.up(lab.load_lab(f), state_dir=state)
    try:
        yield name, state
    finally:
        lab.down(name, state_dir=state)


def test_adaptive_run_stops_once_the_baseline_is_steady(
    credit_lab: tuple[str, Path], tmp_path: Path
) -> None:
    name, state = credit_lab
    spec_path = tmp_path / "c.yaml"
    spec_path.write_text(
        textwrap.dedent(f"""\
        campaign: adaptive
        hosts:
          srv: {{kind: netns, lab: {name}, host: srv}}
          cr: {{kind: netns, lab: {name}, host: cr}}
        tests:
          - name: a
            client: cr
            server: srv
            params: {{duration: 40, until_steady: 4, min_duration: 30}}
        """)
    )
    root = ResultsRoot(tmp_path / "r")
    t0 = time.monotonic()
    result = asyncio.run(run_campaign(load_spec(spec_path), root, lab_state_dir=state))
    elapsed = time.monotonic() - t0
    [env] = result.envelopes
    assert env.status == "ok", env.reason
    adaptive = env.notes["adaptive"]
    assert adaptive["stop"] == "steady"
    assert adaptive["drop_seen_at_s"] is not None  # the burst ended, so min_duration is moot
    assert elapsed < 25, elapsed  # far less than the 40 s maximum
    assert "server_stdout" in env.outputs
    # the stored result still holds every interval up to the stop
    assert env.result is not None
    assert len(env.result["intervals"]) >= adaptive["stopped_at_s"] - 1

    ingest(root, tmp_path / "cat")
    con = connect(tmp_path / "cat")
    rows = con.execute(
        "select count(*), max(bits_per_second), min(bits_per_second) from intervals "
        "where side = 'server' and role = 'receiver' and kind = 'sum' and seconds > 0.5"
    ).fetchone()
    assert rows is not None
    n, top, low = rows
    assert n >= 4
    assert top > 150e6 and low < 60e6  # burst and baseline both seen by the receiver


@pytest.mark.slow
def test_adaptive_run_with_iperf3_318_reads_the_json_stream(
    credit_lab: tuple[str, Path], tmp_path: Path
) -> None:
    """The 3.17+ path: the client (iperf3 3.18 from a Debian 13 root) streams JSON events."""
    from netfleet.lab.chroot import ensure_root

    root_dir = ensure_root()
    name, state = credit_lab
    spec_path = tmp_path / "c.yaml"
    spec_path.write_text(
        textwrap.dedent(f"""\
        campaign: adaptive318
        hosts:
          srv: {{kind: netns, lab: {name}, host: srv}}
          cr: {{kind: netns, lab: {name}, host: cr, chroot: {root_dir}}}
        tests:
          - name: a
            client: cr
            server: srv
            params: {{duration: 40, until_steady: 4, min_duration: 30}}
        """)
    )
    result = asyncio.run(
        run_campaign(load_spec(spec_path), ResultsRoot(tmp_path / "r"), lab_state_dir=state)
    )
    [env] = result.envelopes
    assert env.status == "ok", env.reason
    assert env.engine.version.startswith("3.18")
    assert "--json-stream" in env.engine.argv
    adaptive = env.notes["adaptive"]
    assert adaptive["stop"] == "steady" and adaptive["live_source"] == "client json-stream"
    assert adaptive["drop_seen_at_s"] is not None
    assert env.result is not None
    # the stream was rebuilt into iperf3's --json shape, with every interval
    assert len(env.result["intervals"]) >= adaptive["stopped_at_s"] - 1
    assert env.result["start"]["version"].startswith("iperf 3.18")
