"""vCPU quotas before launch (issue 12: "launches failing on vCPU quotas after half the fleet
was up"). moto has no EC2 quotas (its Service Quotas answer NoSuchResource for ``ec2``), so
the API calls are botocore Stubber responses in AWS's documented shapes (GetServiceQuota,
DescribeInstances, DescribeInstanceTypes)."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from netfleet.cloud.aws.plan import quotas
from netfleet.errors import EnvironmentProblem


@pytest.mark.parametrize(
    ("itype", "cls"),
    [
        ("c5n.large", "standard"), ("m7g.large", "standard"), ("t3.micro", "standard"),
        ("r4.large", "standard"), ("im4gn.large", "standard"), ("z1d.large", "standard"),
        ("g5.xlarge", "g"), ("vt1.3xlarge", "g"), ("p4d.24xlarge", "p"),
        ("inf1.xlarge", None), ("x2idn.16xlarge", "x"), ("x1e.xlarge", "x"), ("f1.2xlarge", None),
        ("dl1.24xlarge", None), ("trn1.2xlarge", None), ("mac1.metal", None),
        ("u-6tb1.metal", None),
    ],
)  # fmt: skip
def test_quota_class_by_family(itype: str, cls: str | None) -> None:
    assert quotas.quota_class(itype) == cls


def _clients(quota: float | None, running: list[dict[str, Any]]) -> Any:
    keys = {"region_name": "us-east-1", "aws_access_key_id": "x", "aws_secret_access_key": "x"}
    sq, ec2 = boto3.client("service-quotas", **keys), boto3.client("ec2", **keys)
    sq_stub, ec2_stub = Stubber(sq), Stubber(ec2)
    if quota is None:  # what moto's server answers for service code ec2
        sq_stub.add_client_error("get_service_quota", "NoSuchResourceException", "not found")
    else:
        sq_stub.add_response(
            "get_service_quota",
            {"Quota": {"ServiceCode": "ec2", "QuotaCode": "L-1216C47A", "Value": quota,
                       "QuotaName": "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) "
                       "instances"}},
            {"ServiceCode": "ec2", "QuotaCode": "L-1216C47A"},
        )  # fmt: skip
        ec2_stub.add_response("describe_instances", {"Reservations": [{"Instances": running}]})
        if any(i["InstanceType"] == "m5.large" for i in running):
            ec2_stub.add_response(
                "describe_instance_types",
                {"InstanceTypes": [{"InstanceType": "m5.large", "VCpuInfo": {"DefaultVCpus": 2}}]},
                {"InstanceTypes": ["m5.large"]},
            )
    sq_stub.activate()
    ec2_stub.activate()
    return {"service-quotas": sq, "ec2": ec2}


RUNNING = [
    {"InstanceId": "i-1", "InstanceType": "m5.large"},  # on-demand: counts
    {"InstanceId": "i-2", "InstanceType": "c5.large", "InstanceLifecycle": "spot"},  # spot
    {"InstanceId": "i-3", "InstanceType": "g5.xlarge"},  # another quota
]
FLEET = [("us-east-1", "c5.xlarge", 2), ("us-east-1", "inf1.xlarge", 1)]
VCPUS = {"c5.xlarge": 4, "inf1.xlarge": 4}


def test_a_fleet_above_the_quota_is_refused_before_launch() -> None:
    clients = _clients(8.0, RUNNING)
    found = quotas.check(FLEET, VCPUS, "on-demand", lambda service, _r: clients[service])
    # 2 × 4 vCPUs wanted + the running on-demand m5.large's 2 > 8
    assert found.rows == [("us-east-1", "L-1216C47A", 8, 2, 8.0)]
    assert found.notes == ["vCPU quota not checked for inf1.xlarge (another class)"]
    with pytest.raises(EnvironmentProblem, match=r"needs 8 vCPUs of L-1216C47A.*2 already run"):
        quotas.guard(found)


def test_a_fleet_within_the_quota_passes() -> None:
    clients = _clients(10.0, RUNNING)
    found = quotas.check(FLEET, VCPUS, "on-demand", lambda service, _r: clients[service])
    assert found.over == [] and found.rows == [("us-east-1", "L-1216C47A", 8, 2, 10.0)]
    quotas.guard(found)


def test_no_answer_is_a_note_never_a_refusal() -> None:
    clients = _clients(None, [])
    found = quotas.check(FLEET, VCPUS, "on-demand", lambda service, _r: clients[service])
    assert found.over == [] and any("L-1216C47A in us-east-1 not checked" in n for n in found.notes)
    quotas.guard(found)
