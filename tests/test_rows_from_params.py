"""Issue 9 case 6: the catalog's protocol/reverse/bidir come from what the params actually hold.

Property: for any iperf3 params a spec can give and either subject, the envelope netfleet writes
(real Envelope + Iperf3Params models, the engine's own argv) gives a ``runs`` row whose
``protocol``, ``bidir`` and ``reverse`` agree with what iperf3 was told to do."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from netfleet.catalog.columns import run_row
from netfleet.engines.iperf3 import Iperf3
from netfleet.engines.params import Iperf3Params
from netfleet.store.envelope import EngineRecord, Envelope, HostRecord

#: a real iperf3 3.12 result (scripts/capture_fixtures.py)
RESULT = json.loads(
    (Path(__file__).parent / "fixtures" / "iperf3" / "tcp_1stream.json").read_text()
)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    direction=st.sampled_from(["out", "in", "bidir"]),
    protocol=st.sampled_from(["tcp", "udp"]),
    parallel=st.integers(1, 8),
    subject=st.sampled_from(["client", "server"]),
)
def test_rows_follow_the_params(direction: str, protocol: str, parallel: int, subject: str) -> None:
    params = Iperf3Params.model_validate(
        {"direction": direction, "protocol": protocol, "parallel": parallel, "duration": 3}
    )
    argv = Iperf3().client_argv(params, "198.18.0.2", 5201, subject)
    env = Envelope(
        netfleet_version="0.1.0",
        run_id="r1",
        run_key="t/0",
        campaign="c",
        test="t",
        repeat=0,
        sequence=0,
        status="ok",
        direction=params.run_direction(),
        subject=subject,  # type: ignore[arg-type]
        params=params.model_dump(),
        labels={},
        client=HostRecord(name="a", kind="local", address="198.18.0.1"),
        server=HostRecord(name="b", kind="local", address="198.18.0.2"),
        engine=EngineRecord(name="iperf3", version="3.12", argv=argv, server_argv=[]),
        started_at="2026-11-23T10:00:00Z",
        ended_at="2026-11-23T10:00:03Z",
        duration_s=3.0,
        result=RESULT,
    )
    row = run_row(json.loads(env.model_dump_json()), "x.json.gz")
    assert row["protocol"] == protocol
    assert row["bidir"] == ("--bidir" in argv)
    assert row["reverse"] == ("--reverse" in argv)
    assert row["parallel"] == parallel
