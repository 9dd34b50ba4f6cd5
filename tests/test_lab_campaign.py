"""End to end in real namespaces: lab → campaign with real iperf3 → store → catalog → cheat sheet.

The headline check: the cheat sheet of a shaped link matches rate × 1448/1514 within 2 %.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from netfleet.catalog import ingest
from netfleet.report.cheatsheet import cheatsheet
from netfleet.runner import run_campaign
from netfleet.spec import load_spec
from netfleet.store import ResultsRoot
from netfleet.units import goodput_ratio
from tests.labkit import lab_campaign, lab_up, unique_name

pytestmark = [
    pytest.mark.netns,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces"),
]


@pytest.fixture
def shaped_lab(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    body = """\
        subnet: 198.18.41.0/24
        hosts:
          srv: {labels: {instance_type: big}}
          cli:
            labels: {instance_type: shaped}
            out: {rate: 200mbit}
            in: {rate: 100mbit}
        """
    with lab_up(tmp_path, body) as (name, state):
        yield name, state
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert name not in listed  # lab down removed every namespace it made


@pytest.mark.slow
def test_cheatsheet_of_a_shaped_link_matches_the_shaper(
    shaped_lab: tuple[str, Path], tmp_path: Path
) -> None:
    name, state = shaped_lab
    spec_path = tmp_path / "c.yaml"
    tests = """\
        tests:
          - name: tput
            client: cli
            server: srv
            params: {duration: 4, omit: 1, interval: 1}
            matrix: {direction: [out, in]}
        """
    spec_path.write_text(lab_campaign(name, "shaped", {"srv": "srv", "cli": "cli"}, tests))
    spec = load_spec(spec_path)
    root = ResultsRoot(tmp_path / "results")
    result = asyncio.run(run_campaign(spec, root, lab_state_dir=state))
    assert result.ok == 2, [e.reason for e in result.envelopes]
    env = result.envelopes[0]
    assert env.client.facts["mtu"] == 1500
    assert env.client.facts["qdiscs"][0]["kind"] == "tbf"
    assert env.labels["instance_type"] == "shaped"

    catalog = tmp_path / "catalog"
    ingest(root, catalog)
    sheet = {
        r["direction"]: r for r in cheatsheet(catalog).records() if r["instance_type"] == "shaped"
    }
    ratio = goodput_ratio(1500)
    for direction, rate in (("out", 200e6), ("in", 100e6)):
        got = sheet[direction]["avg"] * 1e9
        assert abs(got / (rate * ratio) - 1) <= 0.02, (direction, got, rate * ratio)


@pytest.fixture
def own_namespaces() -> Iterator[tuple[str, str]]:
    """Two namespaces built by hand (not by a netfleet lab), joined by a veth pair."""
    suffix = unique_name("")
    a, b = f"usr-a-{suffix}", f"usr-b-{suffix}"

    def ip(*args: str) -> None:
        subprocess.run(["ip", *args], check=True, capture_output=True)

    try:
        ip("netns", "add", a)
        ip("netns", "add", b)
        ip("link", "add", "v0", "netns", a, "type", "veth", "peer", "name", "v1", "netns", b)
        for ns, dev, addr in ((a, "v0", "198.18.135.1/30"), (b, "v1", "198.18.135.2/30")):
            ip("-n", ns, "addr", "add", addr, "dev", dev)
            ip("-n", ns, "link", "set", dev, "up")
            ip("-n", ns, "link", "set", "lo", "up")
        yield a, b
    finally:
        for ns in (a, b):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def test_spec_can_point_at_namespaces_the_user_built(
    own_namespaces: tuple[str, str], tmp_path: Path
) -> None:
    a, b = own_namespaces
    spec_path = tmp_path / "c.yaml"
    spec_path.write_text(
        textwrap.dedent(f"""\
        campaign: mine
        hosts:
          a: {{kind: netns, namespace: {a}, address: 198.18.135.1, labels: {{instance_type: mine}}}}
          b: {{kind: netns, namespace: {b}, address: 198.18.135.2}}
        tests:
          - {{name: t, client: a, server: b, params: {{duration: 1, bitrate: 100mbit}}}}
        """)
    )
    result = asyncio.run(run_campaign(load_spec(spec_path), ResultsRoot(tmp_path / "r")))
    assert result.ok == 1, result.envelopes[0].reason
    env = result.envelopes[0]
    assert env.client.facts["interface"] == "v0"
    assert env.server.address == "198.18.135.2"


def test_missing_namespace_fails_preflight_before_anything_is_written(tmp_path: Path) -> None:
    from netfleet.errors import HostError

    spec_path = tmp_path / "c.yaml"
    spec_path.write_text(
        textwrap.dedent("""\
        campaign: gone
        hosts:
          a: {kind: netns, namespace: no-such-ns-xyz, address: 198.18.135.1}
          b: {kind: local}
        tests:
          - {name: t, client: a, server: b}
        """)
    )
    with pytest.raises(HostError, match="does not exist"):
        asyncio.run(run_campaign(load_spec(spec_path), ResultsRoot(tmp_path / "r")))
    assert not (tmp_path / "r").exists()


def test_lab_host_of_a_lab_that_is_down_is_a_clear_error(tmp_path: Path) -> None:
    from netfleet.errors import LabError

    spec_path = tmp_path / "c.yaml"
    spec_path.write_text(
        textwrap.dedent("""\
        campaign: down
        hosts:
          a: {kind: netns, lab: nolab, host: x}
          b: {kind: local}
        tests:
          - {name: t, client: a, server: b}
        """)
    )
    with pytest.raises(LabError) as info:
        asyncio.run(
            run_campaign(
                load_spec(spec_path), ResultsRoot(tmp_path / "r"), lab_state_dir=tmp_path / "st"
            )
        )
    assert "lab up" in str(info.value)
