"""Zone ID and bandwidth weighting of cloud hosts, against moto's server on loopback (its own
process). moto has no ``NetworkPerformanceOptions`` in DescribeInstances: a botocore
``after-call`` hook adds it in AWS's documented shape (``BandwidthWeighting``: default, vpc-1,
ebs-1), in front of moto's real answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from netfleet import aws
from netfleet.cloud.aws.acquire import images
from netfleet.cloud.aws.acquire.configstate import bandwidth_weighting, state_labels, zone_id
from netfleet.cloud.aws.acquire.provision import Provisioner
from netfleet.cloud.aws.campaign import CloudSpec
from tests.motokit import MotoServer
from tests.test_cloud import SPEC, fresh, moto

__all__ = ["fresh", "moto"]  # the module's moto fixtures (with test_cloud's AMIs)


def _zone_ids(ec2: Any) -> dict[str, str]:
    zones = ec2.describe_availability_zones()["AvailabilityZones"]
    return {z["ZoneName"]: z["ZoneId"] for z in zones}


@pytest.mark.slow
def test_launched_hosts_carry_the_zone_id_not_the_zone_name(
    fresh: MotoServer, tmp_path: Path
) -> None:
    prov = Provisioner(CloudSpec(**SPEC), tmp_path)
    try:
        hosts = prov.acquire()
        ids = _zone_ids(aws.client("ec2", "us-east-1"))
        for host in hosts:
            assert host.labels["zone_id"] == ids[host.az] != host.az
            assert "bandwidth_weighting" not in host.labels  # moto says nothing: not guessed
    finally:
        prov.release()


def test_bandwidth_weighting_is_read_from_describe_instances(fresh: MotoServer) -> None:
    ec2 = aws.client("ec2", "us-east-1")
    image = ec2.describe_images(Owners=[images.DEBIAN_OWNER])["Images"][0]["ImageId"]
    iid = ec2.run_instances(ImageId=image, InstanceType="m8g.large", MinCount=1, MaxCount=1)[
        "Instances"
    ][0]["InstanceId"]
    try:

        def add_weighting(parsed: dict[str, Any], **_: Any) -> None:
            for res in parsed.get("Reservations", []):
                for inst in res["Instances"]:
                    inst["NetworkPerformanceOptions"] = {"BandwidthWeighting": "vpc-1"}

        plain = ec2.describe_instances(InstanceIds=[iid])["Reservations"][0]["Instances"][0]
        assert bandwidth_weighting(plain) is None
        ec2.meta.events.register("after-call.ec2.DescribeInstances", add_weighting)
        inst = ec2.describe_instances(InstanceIds=[iid])["Reservations"][0]["Instances"][0]
        az = inst["Placement"]["AvailabilityZone"]
        assert state_labels(ec2, inst, az) == {
            "zone_id": _zone_ids(ec2)[az],
            "bandwidth_weighting": "vpc-1",
        }
        assert zone_id(ec2, az) == _zone_ids(ec2)[az]
    finally:  # the client is netfleet's (aws.client keeps it): it leaves as it came
        ec2.meta.events.unregister("after-call.ec2.DescribeInstances", add_weighting)
        ec2.terminate_instances(InstanceIds=[iid])
