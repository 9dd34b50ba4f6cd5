"""A real account's first campaign (issue 35, the runtime half): races between wave groups,
IAM propagation, teardown with a narrow policy, user-data failures, per-fleet zones, Fargate
capacity, credit mode, prefix lists, the heartbeat. Each against moto's server on loopback
(``tests/motokit.py``), with AWS's misbehaviour injected where moto lacks it
(``netfleet_sim.awsfaults``)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from netfleet import aws
from netfleet.cloud.aws.provider import AwsCloud
from netfleet.hosts.provider import HostRequest, MemoryLeaseLog
from netfleet.spec import load_spec
from tests import motokit
from tests.motokit import MotoServer
from tests.test_cloud_run import fresh, left, netfleet

moto = motokit.moto  # one moto server for the module
__all__ = ["fresh"]  # the results bucket made for each test
ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")


def race_spec(tmp_path: Path, campaign: str = "racy", itype: str = "t3.micro") -> Path:
    """Issue 35's race: two client pairs, no ``role: server`` host, ``concurrency: 2`` — two
    wave groups, acquired at once."""
    doc = {
        "campaign": campaign,
        "results": f"s3://netfleet-results/{campaign}",
        "concurrency": 2,
        "cloud": {
            "region": "us-east-1",
            "placement": "same-az",
            "market": "on-demand",
            "backing": "sim",
            "expires_after_minutes": 60,
            "fleets": [
                {"name": n, "instance_type": itype, "role": "client"}
                for n in ("a1", "a2", "b1", "b2")
            ],
        },
        "tests": [
            {
                "name": "tput",
                "engine": "iperf3",
                "topology": {"kind": "pairs", "hosts": ["a1", "a2", "b1", "b2"]},
                "params": {"duration": 1, "omit": 0},
            }
        ],
    }
    path = tmp_path / f"{campaign}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def requests(spec_path: Path) -> list[HostRequest]:
    spec = load_spec(spec_path)
    return [HostRequest(n, h) for n, h in spec.hosts.items() if h.kind == "aws"]


# -- 1. two wave groups acquire at once ---------------------------------------------------------
def test_two_concurrent_first_acquires_make_one_network(fresh: MotoServer, tmp_path: Path) -> None:
    """Both wave groups' first acquires at once: one VPC, one key pair, one SSH key (before:
    InvalidKeyPair.Duplicate and a second VPC)."""
    reqs = requests(race_spec(tmp_path))
    cloud, log = AwsCloud(state_root=tmp_path / "cloud", poll_s=0.05), MemoryLeaseLog()
    cloud.prepare(reqs, 120.0)
    ec2 = aws.client("ec2", "us-east-1")

    async def go() -> list[Any]:
        return await asyncio.gather(cloud.acquire(reqs[:2], log), cloud.acquire(reqs[2:], log))

    try:
        waves = asyncio.run(go())
        assert [len(w) for w in waves] == [2, 2]
        counts = left("racy")
        assert (counts["vpcs"], counts["key-pairs"], counts["instances"]) == (1, 1, 4), counts
        # each bootstrap finds its own wave's machines
        hosts = asyncio.run(_bootstrap_each(cloud, waves)) if os.geteuid() == 0 else None
        if hosts is not None:
            assert sorted(h.name for h in hosts) == ["a1", "a2", "b1", "b2"]
    finally:
        from netfleet.cloud.release import give_back
        from netfleet.cloud.seam import Scope

        asyncio.run(give_back(cloud, Scope.of_campaign("racy", ["us-east-1"])))
    assert not any(left("racy").values())
    assert ec2.describe_vpcs(Filters=[{"Name": "tag-key", "Values": ["netfleet:campaign"]}])[
        "Vpcs"] == []  # fmt: skip
    assert not any((tmp_path / "cloud" / "racy" / "sim").glob("*/*")), "a sim lab is still up"


async def _bootstrap_each(cloud: AwsCloud, waves: list[Any]) -> list[Any]:
    hosts: list[Any] = []
    for machines in reversed(waves):  # not in acquire order
        hosts += await cloud.bootstrap(machines)
    if cloud._net is not None and cloud._net.heartbeat is not None:
        await cloud._net.heartbeat.stop()
    return hosts


@ROOT
@pytest.mark.netns
def test_the_race_campaign_runs_and_leaves_nothing(fresh: MotoServer, tmp_path: Path) -> None:
    """Issue 35's reproduction through the CLI: exit 0, every run ok, 0 resources."""
    res = netfleet(tmp_path, "run", str(race_spec(tmp_path)), "--yes")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "2 of 2 runs ok" in res.stdout, res.stdout[-3000:]
    assert "Traceback" not in res.stderr
    assert not any(left("racy").values()), left("racy")
