"""iperf3 argv construction, version gating and outcome decisions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from netfleet.engines import EngineInfo
from netfleet.engines.iperf3 import Iperf3, parse_version
from netfleet.engines.params import Iperf3Params

FIXTURES = Path(__file__).parent / "fixtures" / "iperf3"
eng = Iperf3()


@pytest.mark.parametrize(
    ("direction", "subject", "reverse"),
    [
        ("out", "client", False),
        ("in", "client", True),
        ("out", "server", True),
        ("in", "server", False),
    ],
)
def test_direction_is_relative_to_the_subject(direction: str, subject: str, reverse: bool) -> None:
    argv = eng.client_argv(Iperf3Params(direction=direction), "198.18.0.2", 20001, subject)  # type: ignore[arg-type]
    assert ("--reverse" in argv) is reverse
    assert "--bidir" not in argv


def test_all_options_map_to_flags() -> None:
    p = Iperf3Params(
        duration=2.5,
        omit=1,
        interval=0.5,
        parallel=4,
        protocol="udp",
        bitrate="50mbit",
        window="512kb",
        length="1400",
        mss=1300,
        congestion="cubic",
        affinity="0,1",
        direction="bidir",
    )
    argv = eng.client_argv(p, "198.18.0.2", 20001, "client")
    s = " ".join(argv)
    for part in [
        "--time 2.5",
        "--omit 1",
        "--interval 0.5",
        "--parallel 4",
        "--udp",
        "--bitrate 50000000",
        "--window 512000",
        "--length 1400",
        "--set-mss 1300",
        "--congestion cubic",
        "--affinity 0,1",
        "--bidir",
        "--get-server-output",
        "--json",
    ]:
        assert part in s
    assert all(isinstance(a, str) for a in argv)


def test_server_argv_is_json_one_off_on_its_own_port() -> None:
    argv = eng.server_argv(23456, "198.18.0.1")
    assert argv[:4] == ["iperf3", "--server", "--json", "--one-off"]
    assert "23456" in argv and "198.18.0.1" in argv


def test_version_parsing_and_gating() -> None:
    assert parse_version("iperf 3.12 (cJSON 1.7.15)") == (3, 12)
    assert parse_version("iperf 3.0.11") == (3, 0, 11)
    old = EngineInfo("iperf3", "3.6", (3, 6))
    new = EngineInfo("iperf3", "3.12", (3, 12))
    bidir = Iperf3Params(direction="bidir")
    assert eng.unsupported(bidir, new) == []
    [why] = eng.unsupported(bidir, old)
    assert "--bidir needs iperf3 ≥ 3.7" in why and "3.6" in why


def fixture_names() -> list[str]:
    return sorted(p.stem for p in FIXTURES.glob("*.json") if p.stem != "MANIFEST")


def test_captured_fixtures_exist() -> None:
    names = fixture_names()
    assert len(names) >= 8, names


@pytest.mark.parametrize("name", fixture_names())
def test_outcome_on_real_output(name: str) -> None:
    text = (FIXTURES / f"{name}.json").read_text()
    doc = json.loads(text)
    outcome = eng.interpret(text, "", 0, interrupted=False)
    if doc.get("error"):
        # iperf3 3.12 exits 0 on these: the error key alone must decide
        assert outcome.status == "failed"
        assert doc["error"] in (outcome.reason or "")
    else:
        assert outcome.status == "ok", outcome.reason
        assert outcome.result == doc


def test_non_json_output_fails_with_the_tail() -> None:
    o = eng.interpret("", "iperf3: error - unable to connect", 1, interrupted=False)
    assert o.status == "failed" and "unable to connect" in (o.reason or "")
    o = eng.interpret("", "", -2, interrupted=True)
    assert o.status == "interrupted"
