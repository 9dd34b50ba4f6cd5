"""A lab gateway with a rate cap (seed 003: 4.7 Gbit/s on public addresses, 9.5 on private
ones): the public path through the router carries at most ``gateway.rate``, the private path
does not. Real iperf3 in a real lab, always taken down."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from netfleet import lab
from netfleet.units import goodput_ratio
from tests.labkit import lab_up, stop, wait_listening

pytestmark = [
    pytest.mark.netns,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)"),
]
CAP = 200e6


def one_flow(client_ns: str, server_ns: str, address: str) -> float:
    """Receiver goodput of one 2 s iperf3 flow, bits/s."""
    srv = subprocess.Popen(["ip", "netns", "exec", server_ns, "iperf3", "-s", "-1", "-p", "5302"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        wait_listening(server_ns, 5302, proc=srv)
        out = subprocess.run(
            ["ip", "netns", "exec", client_ns, "iperf3", "-c", address, "-p", "5302", "-J",
             "-t", "2"],
            capture_output=True, text=True, timeout=30, check=True,
        )  # fmt: skip
    finally:
        stop(srv)
    return float(json.loads(out.stdout)["end"]["sum_received"]["bits_per_second"])


def test_the_gateway_caps_the_public_path_and_not_the_private_one(tmp_path: Path) -> None:
    body = """\
        subnet: 198.18.94.0/24
        mtu: 9000
        gateway: {mtu: 1500, subnet: 198.18.194.0/24, rate: 200mbit}
        hosts:
          a: {}
          b: {}
        """
    with lab_up(tmp_path, body, prefix="gc") as (name, state):
        a, b = lab.resolve_host(name, "a", state), lab.resolve_host(name, "b", state)
        assert b.public_address is not None
        public = one_flow(a.namespace, b.namespace, b.public_address)
        private = one_flow(a.namespace, b.namespace, b.address)
    expected = CAP * goodput_ratio(1500)  # the routed path's MTU is 1500
    assert abs(public / expected - 1) < 0.05, (public, expected)
    assert private > 2 * public, (private, public)
