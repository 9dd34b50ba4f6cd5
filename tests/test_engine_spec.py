"""Spec and lab-file checks for the new engines, chroot/via hosts, gateway and flow cap."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from netfleet.lab import plan
from netfleet.lab.flowcap import batch, bytecode
from netfleet.lab.models import LabSpec
from netfleet.spec.models import CampaignSpec


def spec(host: dict[str, Any], test: dict[str, Any] | None = None) -> CampaignSpec:
    return CampaignSpec.model_validate(
        {
            "campaign": "x",
            "hosts": {"a": host, "b": {"kind": "local"}},
            "tests": [test or {"name": "t", "client": "a", "server": "b"}],
        }
    )


def test_chroot_and_via_are_checked() -> None:
    ok = spec({"kind": "netns", "lab": "l", "host": "h", "via": "gateway", "chroot": "/var/x"})
    assert ok.hosts["a"].chroot == "/var/x"  # type: ignore[union-attr]
    with pytest.raises(ValidationError, match="for lab hosts"):
        spec({"kind": "netns", "namespace": "n", "address": "198.18.0.1", "via": "gateway"})
    with pytest.raises(ValidationError):
        spec({"kind": "netns", "lab": "l", "host": "h", "chroot": "relative/dir"})


@pytest.mark.parametrize(
    ("engine", "params"),
    [
        ("latency", {"tool": "sockperf", "size": 90, "duration": 30}),
        ("ping", {"count": 50, "size": 1400, "interval": 0.2}),
        ("iperf2", {"parallel": 8, "window": "500kb", "length": "8kb"}),
        ("iperf3-multi", {"parallel": 8, "processes": 4}),
        ("throughput", {"tool": "auto", "window": "500kb", "length": "8kb"}),
    ],
)
def test_new_engines_validate(engine: str, params: dict[str, Any]) -> None:
    s = spec({"kind": "local"}, {"name": "t", "engine": engine, "client": "a", "server": "b",
                                 "params": params})  # fmt: skip
    assert s.tests[0].engine == engine


def test_bad_engine_params_are_refused() -> None:
    with pytest.raises(ValidationError, match=r"processes"):
        bad = {"parallel": 1, "processes": 4}
        spec({"kind": "local"}, {"name": "t", "engine": "iperf3-multi", "client": "a",
                                 "server": "b", "params": bad})  # fmt: skip
    with pytest.raises(ValidationError):
        spec({"kind": "local"}, {"name": "t", "engine": "latency", "client": "a", "server": "b",
                                 "params": {"tool": "uperf"}})  # fmt: skip


def lab(**extra: Any) -> LabSpec:
    return LabSpec.model_validate({"name": "g", "mtu": 9000, "hosts": {"a": {}, "b": {}}, **extra})


def test_gateway_gives_public_addresses_and_a_router() -> None:
    state = plan(lab(gateway={"mtu": 1500, "subnet": "198.18.100.0/24"}))
    assert state.gateway is not None and state.gateway["address"] == "198.18.0.254"
    assert state.gateway["mtu"] == 1500 and state.gateway["link_mtu"] == 9000
    assert state.hosts["b"].public_address == "198.18.100.2"
    with pytest.raises(ValidationError, match="overlaps"):
        lab(gateway={"subnet": "198.18.0.0/25"})
    with pytest.raises(ValidationError, match=r"198\.18\.0\.0/15"):
        lab(gateway={"subnet": "10.0.0.0/24"})


def test_flow_cap_is_a_rate_and_excludes_shapers() -> None:
    spec_ = LabSpec.model_validate({"name": "g", "hosts": {"a": {"flow_cap": "300mbit"}}})
    assert spec_.hosts["a"].flow_cap == 300e6
    with pytest.raises(ValidationError, match="either flow_cap"):
        LabSpec.model_validate(
            {"name": "g", "hosts": {"a": {"flow_cap": "1gbit", "out": {"rate": "1gbit"}}}}
        )


def test_flow_cap_batch_is_one_class_per_bucket_and_a_bpf_filter() -> None:
    lines = batch("eth0", 200e6)
    assert sum(" htb rate 200000000bit ceil 200000000bit" in x for x in lines) == 256
    code = bytecode().split(",")
    assert code[0] == "15" and len(code) == 16 and code[-1] == "6 0 0 0"  # ret #0 last
    assert lines[-1].startswith("filter add dev eth0 parent 1: prio 1 bpf bytecode")
