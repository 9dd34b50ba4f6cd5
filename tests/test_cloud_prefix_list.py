"""Hosts that meet at their public addresses are admitted through a managed prefix list
(issue 24 item 5), against moto's server (its own process, loopback only).

A security group's reference to itself matches traffic from its members' *private* addresses
only: with ``path: public`` in one region nothing admitted the public ones; across regions one
/32 rule per host went into every region's group (the 60-rule limit above ~57 hosts). Now each
region has one tagged prefix list holding every host's public /32, referenced by one rule."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from netfleet import aws
from netfleet.cloud.aws import filters
from netfleet.cloud.aws.acquire.provision import Provisioner
from netfleet.cloud.aws.campaign import CloudSpec
from netfleet.cloud.aws.release import teardown
from netfleet.errors import EnvironmentProblem
from tests import motokit
from tests.motokit import MotoServer

moto = motokit.moto


fresh = motokit.fresh  # the module's moto server, reset for each test


def spec(**over: Any) -> CloudSpec:
    base: dict[str, Any] = {
        "campaign": "nf-pub",
        "region": "us-east-1",
        "path": "public",
        "fleets": [
            {"instance_type": "t3.micro", "role": "server"},
            {"instance_type": "t3.micro", "role": "client"},
        ],
    }
    return CloudSpec(**{**base, **over})


def admitted(region: str, sg_id: str) -> tuple[set[str], list[dict[str, Any]]]:
    """The public /32s the group admits through its prefix list, and its rules."""
    ec2 = aws.client("ec2", region)
    (sg,) = ec2.describe_security_groups(GroupIds=[sg_id])["SecurityGroups"]
    cidrs: set[str] = set()
    for rule in sg["IpPermissions"]:
        for ref in rule.get("PrefixListIds", []):
            entries = ec2.get_managed_prefix_list_entries(PrefixListId=ref["PrefixListId"])
            cidrs |= {e["Cidr"] for e in entries["Entries"]}
    return cidrs, sg["IpPermissions"]


@pytest.mark.slow
def test_public_path_in_one_region_admits_the_hosts_public_addresses(
    fresh: MotoServer, tmp_path: Path
) -> None:
    prov = Provisioner(spec(), tmp_path, poll_s=0.01)
    hosts = prov.acquire()
    assert all(h.public_ip for h in hosts)
    net = prov.networks["us-east-1"]
    cidrs, _ = admitted("us-east-1", net.sg_id)
    assert cidrs == {f"{h.public_ip}/32" for h in hosts}
    prov.release()
    ec2 = aws.client("ec2", "us-east-1")
    left = ec2.describe_managed_prefix_lists(Filters=filters.owned("nf-pub", None))
    assert not left["PrefixLists"]
    assert not any(teardown.remaining(ec2, "nf-pub").values())


@pytest.mark.slow
def test_across_regions_each_group_has_one_prefix_list_rule_not_one_per_host(
    fresh: MotoServer, tmp_path: Path
) -> None:
    fleets = [
        {"instance_type": "t3.micro", "role": "server", "count": 3},
        {"instance_type": "t3.micro", "role": "client", "region": "eu-west-1", "count": 2},
    ]
    cs = spec(path="auto", placement="cross-region", fleets=fleets)
    prov = Provisioner(cs, tmp_path, poll_s=0.01)
    hosts = prov.acquire()
    every = {f"{h.public_ip}/32" for h in hosts}
    for region, net in prov.networks.items():
        cidrs, rules = admitted(region, net.sg_id)
        assert cidrs == every, region
        host_rules = [r for rule in rules for r in rule.get("IpRanges", []) if "/32" in r["CidrIp"]]
        assert not host_rules, host_rules  # no per-host rule any more
    prov.release()
    for region in ("us-east-1", "eu-west-1"):
        assert not any(teardown.remaining(aws.client("ec2", region), "nf-pub").values())


def test_more_public_hosts_than_a_group_can_admit_is_refused_before_anything_exists(
    fresh: MotoServer, tmp_path: Path
) -> None:
    """A prefix list counts its maximum entries against the group's rule quota (60 inbound
    rules by default): 60 public hosts + the group's own rule do not fit."""
    cs = spec(fleets=[{"instance_type": "t3.micro", "count": 60}])
    with pytest.raises(EnvironmentProblem, match="rules per security group") as err:
        Provisioner(cs, tmp_path).prepare()
    assert "L-0EA8095F" in (err.value.hint or "")
    vpcs = aws.client("ec2", "us-east-1").describe_vpcs(Filters=filters.owned("nf-pub", None))
    assert not vpcs["Vpcs"]
