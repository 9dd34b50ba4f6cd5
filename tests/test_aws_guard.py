"""The loopback-only guard: with it on, no AWS client can point anywhere but this machine."""

from __future__ import annotations

import pytest

from netfleet import aws
from netfleet.errors import EnvironmentProblem
from tests.motokit import moto_server


def test_guard_refuses_public_and_private_endpoints(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(aws.LOOPBACK_ONLY_ENV, "1")
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with pytest.raises(EnvironmentProblem, match="public endpoint"):
        aws.client("s3", "us-east-1")
    for url in ["https://s3.amazonaws.com", "http://10.0.0.5:5000", "http://198.18.0.1:5000"]:
        monkeypatch.setenv("AWS_ENDPOINT_URL", url)
        with pytest.raises(EnvironmentProblem, match="loopback"):
            aws.client("ec2", "us-east-1")


def test_guard_allows_loopback_and_moto_answers() -> None:
    with moto_server() as server:
        assert aws.is_loopback_url(server.url)
        s3 = aws.client("s3", "us-east-1")
        s3.create_bucket(Bucket="guard-test")
        assert [b["Name"] for b in s3.list_buckets()["Buckets"]] == ["guard-test"]
        ec2 = aws.client("ec2", "us-east-1")
        types = ec2.describe_instance_types(InstanceTypes=["r4.large"])["InstanceTypes"]
        cards = types[0]["NetworkInfo"]["NetworkCards"][0]
        assert cards["BaselineBandwidthInGbps"] == 0.75
