"""The configuration state EC2 knows about a launched instance, as host labels recorded with
every run (``Envelope.state``, docs/format.md): the zone **ID** (``use1-az1``: the same
physical zone in every account, where zone *names* are shuffled per account) from
DescribeAvailabilityZones, and the 8th-generation bandwidth weighting (``default``, ``vpc-1``,
``ebs-1``) from DescribeInstances ``NetworkPerformanceOptions.BandwidthWeighting``.

ENA Express is not read here: its ground truth is the NIC's ``ena_srd_mode`` counter, read
around every run (:mod:`netfleet.hosts.srd`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def zone_id(ec2: Any, zone_name: str) -> str | None:
    """The zone ID of an availability zone name in this account, None when EC2 does not say."""
    zones = ec2.describe_availability_zones(ZoneNames=[zone_name]).get("AvailabilityZones", [])
    found = next((z.get("ZoneId") for z in zones if z.get("ZoneName") == zone_name), None)
    return str(found) if found else None


def bandwidth_weighting(instance: Mapping[str, Any]) -> str | None:
    """An instance's bandwidth weighting, None when DescribeInstances carries none (types
    without the option)."""
    options = instance.get("NetworkPerformanceOptions")
    value = options.get("BandwidthWeighting") if isinstance(options, Mapping) else None
    return str(value) if value else None


def state_labels(ec2: Any, instance: Mapping[str, Any], zone_name: str) -> dict[str, str]:
    """``zone_id`` and ``bandwidth_weighting`` labels, each only when known."""
    out: dict[str, str] = {}
    if found := zone_id(ec2, zone_name):
        out["zone_id"] = found
    if weighting := bandwidth_weighting(instance):
        out["bandwidth_weighting"] = weighting
    return out
