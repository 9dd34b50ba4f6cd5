"""A cloud campaign cannot touch a real account by mistake (issue 24, items 1-4).

Every AWS call goes to moto's server (its own process, loopback only; the loopback guard is on).
The "real endpoint" path is tested without sending traffic anywhere: the decision is read from
the endpoint configuration before any client exists, and where a test needs the STS call of the
real path it injects the decision ("treat this loopback endpoint as real") and moto answers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from netfleet import aws
from netfleet.cloud.aws.acquire.provision import Provisioner
from netfleet.cloud.aws.campaign import CloudSpec
from netfleet.cloud.aws.plan import prices, safety
from netfleet.errors import InputError, SpecError
from netfleet.spec import load_spec
from tests import motokit
from tests.motokit import MotoServer

moto = motokit.moto  # one moto server for the module
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SPEC = {
    "campaign": "nf-safe",
    "region": "us-east-1",
    "fleets": [
        {"instance_type": "t3.micro", "count": 1, "role": "server"},
        {"instance_type": "t3.micro", "count": 1, "role": "client"},
    ],
}


fresh = motokit.fresh  # the module's moto server, reset for each test


def example(tmp_path: Path, name: str, change: Any) -> Path:
    doc = yaml.safe_load((EXAMPLES / name).read_text())
    change(doc)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


# -- 1: backing required, sim only on loopback, confirmation before a real launch -------------
def test_a_cloud_block_must_name_its_backing(tmp_path: Path) -> None:
    path = example(tmp_path, "aws-cheatsheet.yaml", lambda d: d["cloud"].pop("backing"))
    with pytest.raises(SpecError) as err:
        load_spec(path)
    text = str(err.value)
    assert "backing" in text and "sim" in text and "ssh" in text and str(path) in text


@pytest.mark.slow
def test_sim_backing_refuses_an_endpoint_that_is_not_loopback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No AWS_ENDPOINT_URL means AWS itself: `backing: sim` is refused with exit 2 before any
    client exists (the test's loopback guard would turn any attempt into exit 4 instead)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_ENDPOINT_URL")}
    env.update(motokit.ENV, NETFLEET_CLOUD_DIR=str(tmp_path / "cloud"))
    for url in (None, "https://ec2.eu-west-1.amazonaws.com", "http://10.1.2.3:5000"):
        if url:
            env["AWS_ENDPOINT_URL"] = url
        argv = [sys.executable, "-m", "netfleet", "run", str(EXAMPLES / "aws-cheatsheet.yaml")]
        res = subprocess.run(
            [*argv, "-r", str(tmp_path / "r"), "--yes"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert res.returncode == 2, res.stdout + res.stderr
        assert "backing: sim" in res.stderr and "loopback" in res.stderr, res.stderr
        assert not (tmp_path / "cloud").exists()
    # the library refuses the same way, built in (no environment variable needed)
    monkeypatch.delenv(aws.LOOPBACK_ONLY_ENV, raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with pytest.raises(InputError, match="loopback"):
        safety.check_backing("sim", "nf-safe")
    safety.check_backing("ssh", "nf-safe")  # ssh is meant for the real service


def test_endpoint_decision_is_read_from_the_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    assert safety.target().real
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:5000")
    assert not safety.target().real
    monkeypatch.setenv("AWS_ENDPOINT_URL_ECS", "https://ecs.us-east-1.amazonaws.com")
    assert safety.target().real  # one service on the real endpoint is enough


@pytest.mark.slow
def test_a_real_launch_shows_account_regions_resources_cost_and_asks(
    fresh: MotoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real path, its decision injected: STS (answered by moto on loopback) names the
    account; without --yes and without a terminal nothing is created."""
    cs = CloudSpec(**SPEC)
    est = prices.Estimate(2, 0.0123, [], 0.3)
    real = safety.Target(real=True, endpoints={"ec2": None})
    monkeypatch.setattr(safety, "target", lambda: real)
    said: list[str] = []
    with pytest.raises(InputError, match="--yes"):
        safety.confirm(cs, est, yes=False, ask=None, say=said.append)
    text = "\n".join(said)
    assert "123456789012" in text  # moto's account, from GetCallerIdentity
    assert "us-east-1" in text and "2 instances" in text and "t3.micro" in text
    assert "$0.0123" in text and "VPC" in text
    with pytest.raises(InputError, match="not confirmed"):
        safety.confirm(cs, est, yes=False, ask=lambda q: False, say=said.append)
    # nothing confirmed: the provisioner refuses before its first create
    with pytest.raises(InputError, match="not confirmed"):
        Provisioner(cs, tmp_path).prepare()
    ec2 = aws.client("ec2", "us-east-1")
    assert not [v for v in ec2.describe_vpcs()["Vpcs"] if not v.get("IsDefault")]
    asked: list[str] = []
    safety.confirm(cs, est, yes=False, ask=lambda q: asked.append(q) or True, say=said.append)
    assert asked
    prov = Provisioner(cs, tmp_path)
    prov.prepare()
    prov.release()


# -- 3: IMDSv2 only ---------------------------------------------------------------------------
@pytest.mark.parametrize("market", ["on-demand", "spot"])
def test_every_instance_requires_imdsv2_with_hop_limit_1(
    fresh: MotoServer, tmp_path: Path, market: str
) -> None:
    prov = Provisioner(CloudSpec(**{**SPEC, "market": market}), tmp_path)
    try:
        hosts = prov.acquire()
        ec2 = aws.client("ec2", "us-east-1")
        for h in hosts:
            inst = ec2.describe_instances(InstanceIds=[h.instance_id])["Reservations"][0]
            opts = inst["Instances"][0]["MetadataOptions"]
            assert opts["HttpTokens"] == "required" and opts["HttpPutResponseHopLimit"] == 1
    finally:
        prov.release()


# -- 4: SSH must be able to reach the hosts ---------------------------------------------------
@pytest.mark.parametrize(
    ("cidr", "expect"),
    [
        (None, "controller_cidr"),
        ("127.0.0.1/32", "loopback"),
        ("10.0.0.0/8", "private"),
        ("0.0.0.0/0", "whole internet"),
    ],
)
def test_ssh_backing_needs_a_controller_cidr_that_can_reach_the_hosts(
    tmp_path: Path, cidr: str | None, expect: str
) -> None:
    def change(d: dict[str, Any]) -> None:
        d["cloud"]["backing"] = "ssh"
        if cidr is not None:
            d["cloud"]["controller_cidr"] = cidr

    with pytest.raises(SpecError) as err:
        load_spec(example(tmp_path, "aws-cheatsheet.yaml", change))
    assert expect in str(err.value) and "controller_cidr" in str(err.value)


def test_ssh_backing_with_a_public_controller_cidr_loads(tmp_path: Path) -> None:
    def change(d: dict[str, Any]) -> None:
        d["cloud"].update(backing="ssh", controller_cidr="16.0.0.7/32")

    spec = load_spec(example(tmp_path, "aws-cheatsheet.yaml", change))
    assert all(h.cloud.controller_cidr == "16.0.0.7/32" for h in spec.hosts.values() if h.cloud)
