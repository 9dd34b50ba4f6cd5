"""The loopback-only guard: with it on, no AWS client can point anywhere but this machine."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from botocore.config import Config

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


def test_a_client_is_kept_until_the_aws_setup_changes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """aws.client returns the client it made for the same call and setup; a changed variable,
    a rewritten credentials file or other options give a new one, and the guard still runs
    first; a forked child makes its own."""
    creds = tmp_path / "credentials"
    creds.write_text("[default]\naws_access_key_id = a\naws_secret_access_key = b\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(creds))
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    one = aws.client("ec2", "us-east-1")
    assert aws.client("ec2", "us-east-1") is one
    assert aws.client("ec2", "us-west-2") is not one
    assert aws.client("ecs", "us-east-1") is not one
    assert aws.client("ec2", "us-east-1", config=Config(connect_timeout=3)) is not one
    monkeypatch.setenv("AWS_PROFILE", "default")
    two = aws.client("ec2", "us-east-1")
    assert two is not one
    creds.write_text("[default]\naws_access_key_id = c\naws_secret_access_key = d\n")
    three = aws.client("ec2", "us-east-1")
    assert three is not two
    assert three._request_signer._credentials.access_key == "c"
    monkeypatch.setenv(aws.LOOPBACK_ONLY_ENV, "1")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://10.0.0.5:5000")
    with pytest.raises(EnvironmentProblem, match="loopback"):
        aws.client("ec2", "us-east-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    kept = aws.client("ec2", "us-east-1")
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: a client of its own, not its parent's (nor its connections)
        os.write(w, b"1" if aws.client("ec2", "us-east-1") is not kept else b"0")
        os._exit(0)
    os.close(w)
    assert os.read(r, 1) == b"1"
    os.close(r)
    assert os.waitpid(pid, 0)[1] == 0
