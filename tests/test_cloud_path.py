"""Seed 003's public path on the AWS provider: with ``cloud.path: public`` the hosts meet at
their public addresses. On the simulated backing (moto's server as its own process, a lab
namespace per instance) that path crosses a gateway whose MTU is 1500 while the instances' links
keep AWS's 9001, so iperf3's streams report ``pmtu 1500`` — the evidence advice's ``path-mtu``
rule reads; ``path: private`` with fleets in two regions is refused by name."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from netfleet.cloud.aws.release import teardown
from netfleet.errors import SpecError
from netfleet.spec import load_spec
from tests import motokit
from tests.labkit import wait_listening

SPEC = """
campaign: nf-path
cloud:
  region: us-east-1
  backing: sim
  path: {path}
  fleets:
    - {{name: srv, instance_type: c5n.large, role: server}}
    - {{name: cli, instance_type: c5n.large, role: client}}
tests:
  - {{name: t, engine: iperf3, server: srv, client: cli, params: {{duration: 1}}}}
"""


def spec_file(tmp_path: Path, path: str, **cloud: Any) -> Path:
    doc = yaml.safe_load(SPEC.format(path=path))
    doc["cloud"].update(cloud)
    out = tmp_path / "spec.yaml"
    out.write_text(yaml.safe_dump(doc))
    return out


def in_ns(ns: str, *argv: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", "netns", "exec", ns, *argv], capture_output=True, text=True,
                          timeout=30, check=True, **kw)  # fmt: skip


def test_private_path_across_regions_is_refused_by_name(tmp_path: Path) -> None:
    path = spec_file(tmp_path, "private", placement="cross-region")
    doc = yaml.safe_load(path.read_text())
    doc["cloud"]["fleets"][1]["region"] = "eu-west-1"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(SpecError, match=r"cloud\.path.*public addresses"):
        load_spec(path)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")
@pytest.mark.netns
def test_public_path_crosses_a_1500_gateway_between_jumbo_links(tmp_path: Path) -> None:
    from netfleet.cloud.aws.provider import AwsProvider
    from netfleet.hosts.provider import HostPool, HostRequest, MemoryLeaseLog

    spec = load_spec(spec_file(tmp_path, "public"))
    reqs = [HostRequest(n, h) for n, h in spec.hosts.items() if h.kind == "aws"]
    provider, log = AwsProvider(state_root=tmp_path / "cloud", poll_s=0.05), MemoryLeaseLog()
    seen: dict[str, Any] = {}

    async def go() -> None:
        async with HostPool(reqs, log, lambda _kind: provider) as hosts:
            srv, cli = hosts["srv"], hosts["cli"]
            seen["labels"] = {n: h.labels["path"] for n, h in hosts.items()}
            seen["addresses"] = [srv.address, cli.address]
            mtu = json.loads(in_ns(cli.namespace, "ip", "-j", "link", "show", "eth0").stdout)
            seen["mtu"] = mtu[0]["mtu"]
            server = subprocess.Popen(
                ["ip", "netns", "exec", srv.namespace, "iperf3", "-s", "-1", "-B", srv.address],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            try:
                await asyncio.to_thread(wait_listening, srv.namespace, 5201, proc=server)
                out = in_ns(cli.namespace, "iperf3", "-c", srv.address, "-t", "1", "-J")
            finally:
                server.kill()
                server.wait(timeout=10)
            doc = json.loads(out.stdout)
            seen["pmtu"] = {
                s.get("pmtu") for iv in doc["intervals"] for s in iv["streams"] if s.get("pmtu")
            }

    with motokit.moto_server():
        asyncio.run(go())
        from netfleet import aws

        left = teardown.remaining(aws.client("ec2", "us-east-1"), spec.campaign)
    assert seen["labels"] == {"srv": "public", "cli": "public"}
    # the lifecycle planned through the seam first: the catalogue and the hourly price
    from netfleet.cloud.aws.plan import prices

    hourly = prices.load(tmp_path / "cloud").ec2_hourly("us-east-1", "c5n.large")
    assert hourly is not None and provider.hourly[-1].usd == pytest.approx(2 * hourly)
    assert set(provider.offered) == {"c5n.large"}
    assert all(a.startswith("198.18.100.") for a in seen["addresses"]), seen["addresses"]
    assert seen["mtu"] == 9001 and seen["pmtu"] == {1500}, seen
    assert not any(left.values()), left
