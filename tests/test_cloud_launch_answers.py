"""RunInstances' answers, each handled as what it says (issue 35): botocore retries a zone's
``InsufficientInstanceCapacity`` (HTTP 500) and throttling (503) alike, so its last attempt may
end throttled after answers of no capacity — under ``NETFLEET_AWS_FAULTS=all`` that escaped as a
raw ``ClientError`` (a traceback, exit 1). Throttling is retried as throttling, capacity falls
back to another zone, and no AWS error reaches the user raw. Against moto's server, with the
fault emulation (``netfleet_sim.awsfaults``) or, where it has no shape for the answer, a hook."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from netfleet import aws
from netfleet.cloud.aws.acquire import provision
from netfleet.cloud.aws.acquire.provision import Provisioner
from netfleet.cloud.aws.campaign import CloudSpec
from netfleet.cloud.aws.release import teardown
from netfleet.errors import EnvironmentProblem, ExitStatus
from netfleet_sim import awsfaults
from tests import awshooks, motokit
from tests.awshooks import error
from tests.motokit import MotoServer

moto = motokit.moto
fresh = motokit.fresh  # the module's moto server, reset for each test
SPEC = {
    "campaign": "nf-launch",
    "region": "us-east-1",
    "fleets": [{"instance_type": "t3.micro", "count": 1, "role": "server"}],
}


@pytest.fixture
def two_attempts(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """botocore's attempts per call cut from netfleet's ten to two: the same sequence of
    answers, without ten attempts' exponential backoff per call."""
    monkeypatch.setattr(aws, "RETRY_ATTEMPTS", 2)
    yield
    monkeypatch.delenv(awsfaults.PROFILE_ENV, raising=False)
    awsfaults.reset()


def _nothing_left(prov: Provisioner) -> None:
    prov.release()
    assert not any(teardown.remaining(aws.client("ec2", "us-east-1"), "nf-launch").values())


def test_a_throttled_last_attempt_on_a_full_zone_still_falls_back(
    fresh: MotoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, two_attempts: None
) -> None:
    """``capacity`` (no room in us-east-1a) whose 2nd attempt is throttled: botocore's first
    call ends RequestLimitExceeded after one answer of no capacity; it is retried as throttling,
    the zone answers no capacity again, and the instance runs in another zone."""
    monkeypatch.setenv(awsfaults.PROFILE_ENV, f"capacity:throttle_at={aws.RETRY_ATTEMPTS}")
    awsfaults.reset()
    prov = Provisioner(CloudSpec(**SPEC), tmp_path, poll_s=0.01)
    try:
        (host,) = prov.acquire()
        assert host.az != "us-east-1a" and host.labels["availability_zone"] == host.az
        assert awsfaults.state().injected == {
            "InsufficientInstanceCapacity": 3,  # 1 before the throttle, 2 in the retried call
            "RequestLimitExceeded": 1,
        }
    finally:
        _nothing_left(prov)


def test_throttling_past_its_budget_is_a_clear_error(
    fresh: MotoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, two_attempts: None
) -> None:
    # a budget of 2 s: the retry is refused only when the next pause (0.2, 0.4, 0.8, 1.6 s)
    # would pass it, so the first refused call gets its retry unless it took 1.8 s itself (at
    # 0.5 s, one slow first call under CI's load left no room for a retry)
    monkeypatch.setattr(provision, "THROTTLE_BUDGET_S", 2.0)
    throttled = error("RequestLimitExceeded", "Request limit exceeded.", 503)
    prov = Provisioner(CloudSpec(**SPEC), tmp_path, poll_s=0.01)
    try:
        with (
            awshooks.hooked(monkeypatch, {"ec2.RunInstances": lambda p: throttled}) as calls,
            pytest.raises(EnvironmentProblem, match="kept throttling the launch") as err,
        ):
            prov = Provisioner(CloudSpec(**SPEC), tmp_path, poll_s=0.01)
            prov.acquire()
        assert err.value.exit_status == ExitStatus.ENVIRONMENT
        assert "RequestLimitExceeded" in err.value.message and "--resume" in (err.value.hint or "")
        assert len(calls.ops("RunInstances")) >= 2  # retried as throttling first
    finally:
        _nothing_left(prov)


def test_any_other_refusal_names_its_code_not_a_traceback(
    fresh: MotoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, two_attempts: None
) -> None:
    refused = error("InvalidParameterValue", "Value (x) for parameter foo is invalid.")
    prov = Provisioner(CloudSpec(**SPEC), tmp_path, poll_s=0.01)
    try:
        with (
            awshooks.hooked(monkeypatch, {"ec2.RunInstances": lambda p: refused}) as calls,
            pytest.raises(EnvironmentProblem, match=r"AWS refused to launch t3\.micro") as err,
        ):
            prov = Provisioner(CloudSpec(**SPEC), tmp_path, poll_s=0.01)
            prov.acquire()
        assert "InvalidParameterValue" in (err.value.hint or "")
        assert len(calls.ops("RunInstances")) == 1  # not retried: it would answer the same
    finally:
        _nothing_left(prov)
