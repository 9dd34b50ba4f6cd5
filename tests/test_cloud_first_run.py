"""A real account's first campaign (issue 35, the runtime half): races between wave groups,
IAM propagation, teardown with a narrow policy, user-data failures, per-fleet zones, Fargate
capacity, credit mode, prefix lists, the heartbeat. Each against moto's server on loopback
(``tests/motokit.py``), with AWS's misbehaviour injected where moto lacks it
(``netfleet_sim.awsfaults``)."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from netfleet import aws
from netfleet.cloud.aws.provider import AwsCloud
from netfleet.cloud.aws.release import teardown
from netfleet.hosts.provider import HostRequest, MemoryLeaseLog
from netfleet.spec import load_spec
from tests import motokit
from tests.motokit import MotoServer
from tests.test_cloud_run import fresh, left, netfleet

moto = motokit.moto  # one moto server for the module
__all__ = ["fresh"]  # the results bucket made for each test
ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")


def race_spec(
    tmp_path: Path,
    campaign: str = "racy",
    itype: str = "t3.micro",
    hosts: int = 4,
    **cloud: Any,
) -> Path:
    """Issue 35's race: two client pairs, no ``role: server`` host, ``concurrency: 2`` — two
    wave groups, acquired at once."""
    names = ["a1", "a2", "b1", "b2", "c1", "c2", "d1", "d2"][:hosts]
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
            "fleets": [{"name": n, "instance_type": itype, "role": "client"} for n in names],
            **cloud,
        },
        "tests": [
            {
                "name": "tput",
                "engine": "iperf3",
                "topology": {"kind": "pairs", "hosts": names},
                "params": {"duration": 1, "omit": 0},
            }
        ],
    }
    path = tmp_path / f"{campaign}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def cloud_spec(campaign: str, server: str, *clients: str, **kw: Any) -> Any:
    """A ``cloud up`` campaign in us-east-1: one ``server`` instance, one of each client type."""
    from netfleet.cloud.aws.campaign import CloudSpec

    fleets = [{"instance_type": server, "count": 1, "role": "server"}]
    fleets += [{"instance_type": t, "count": 1, "role": "client"} for t in clients]
    return CloudSpec(campaign=campaign, region="us-east-1", fleets=fleets, duration_minutes=5, **kw)


def requests(spec_path: Path) -> list[HostRequest]:
    spec = load_spec(spec_path)
    return [HostRequest(n, h) for n, h in spec.hosts.items() if h.kind == "aws"]


def count_probes(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Each permission probe of a campaign from now on: its fleets' instance types."""
    from netfleet.cloud.aws.plan import permissions

    probed: list[list[str]] = []
    real = permissions.require

    def require(cs: Any, **kw: Any) -> Any:
        probed.append(sorted(f.instance_type for f in cs.fleets))
        return real(cs, **kw)

    monkeypatch.setattr(permissions, "require", require)
    return probed


# -- 1. two wave groups acquire at once ---------------------------------------------------------
def test_two_concurrent_first_acquires_make_one_network(
    fresh: MotoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both wave groups' first acquires at once: one VPC, one key pair, one SSH key (before:
    InvalidKeyPair.Duplicate and a second VPC); the campaign's permissions probed once (each
    acquire probed them again before)."""
    probed = count_probes(monkeypatch)
    reqs = requests(race_spec(tmp_path))
    cloud, log = AwsCloud(state_root=tmp_path / "cloud", poll_s=0.05), MemoryLeaseLog()
    cloud.prepare(reqs, 120.0)
    ec2 = aws.client("ec2", "us-east-1")

    async def go() -> list[Any]:
        return await asyncio.gather(cloud.acquire(reqs[:2], log), cloud.acquire(reqs[2:], log))

    try:
        waves = asyncio.run(go())
        assert [len(w) for w in waves] == [2, 2]
        assert len(probed) == 1, probed
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


def test_a_campaign_s_permissions_are_probed_once_for_all_its_waves(
    fresh: MotoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The probes (~17 calls to AWS) ran again at every wave's plan: once a campaign now, and
    again for the next campaign the process prepares."""
    probed = count_probes(monkeypatch)
    reqs = requests(race_spec(tmp_path))
    cloud = AwsCloud(state_root=tmp_path / "cloud", poll_s=0.05)
    cloud.prepare(reqs, 120.0)
    for wave in (reqs[:2], reqs[2:], reqs):  # each wave's plan (DescribeInstanceTypes only)
        assert cloud.catalogue(wave)
    assert len(probed) == 1 and len(probed[0]) == len(reqs), probed  # the whole campaign's
    cloud.prepare(reqs, 120.0)  # the next campaign
    cloud.catalogue(reqs[:2])
    assert len(probed) == 2, probed


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


def _one_wave(tmp_path: Path, campaign: str, hosts: int, **cloud: Any) -> tuple[AwsCloud, Any]:
    """Every host of ``campaign`` acquired in one wave (each launch in its own thread), not
    bootstrapped; the caller gives everything back (:func:`_destroy`)."""
    reqs = requests(race_spec(tmp_path, campaign, hosts=hosts, **cloud))
    cloud_ = AwsCloud(state_root=tmp_path / "cloud", poll_s=0.05)
    cloud_.prepare(reqs, 120.0)
    return cloud_, asyncio.run(cloud_.acquire(reqs, MemoryLeaseLog()))


def _destroy(cloud: AwsCloud, campaign: str) -> None:
    from netfleet.cloud.release import give_back
    from netfleet.cloud.seam import Scope

    asyncio.run(give_back(cloud, Scope.of_campaign(campaign, ["us-east-1"])))
    assert not any(left(campaign).values()), left(campaign)


# -- 7. known_hosts of a wave -------------------------------------------------------------------
def test_a_wave_coming_up_together_pins_every_host_key(
    fresh: MotoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Six instances come up together; the first known_hosts rewrite stalls (a busy disk):
    every instance's key is pinned (before: that stale rewrite landed last and lost the
    others' lines)."""
    from netfleet import durable

    real, writes = durable.atomic_write, []

    def slow_disk(*args: Any, **kwargs: Any) -> Any:
        writes.append(args[0])
        if len(writes) == 1:  # the first rewrite stalls while the others come up
            time.sleep(1.5)
        return real(*args, **kwargs)

    monkeypatch.setattr(durable, "atomic_write", slow_disk)
    cloud, machines = _one_wave(tmp_path, "pins", 6)
    try:
        pinned = (tmp_path / "cloud" / "pins" / "known_hosts").read_text().splitlines()
        for m in machines:
            assert any(line.startswith(m.detail.private_ip + " ") for line in pinned), (
                m.detail.name,
                pinned,
            )
    finally:
        _destroy(cloud, "pins")


# -- leak 5: public-path launches in parallel ---------------------------------------------------
def test_public_path_launches_lock_only_the_prefix_list_change(
    fresh: MotoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``path: public``: a wave's RunInstances all go out before the first host's address
    joins the prefix list (before: each launch, wait for running included, waited for the
    one before it — a wave booted one by one, billed idle)."""
    from tests.awshooks import hooked

    stamps: dict[str, list[float]] = {"run": [], "modify": []}

    def run(params: dict[str, Any]) -> None:
        if not params.get("DryRun"):  # not the permission probe
            stamps["run"].append(time.monotonic())

    def modify(params: dict[str, Any]) -> None:
        stamps["modify"].append(time.monotonic())

    def booting(params: dict[str, Any]) -> None:
        time.sleep(0.4)  # an instance takes a while to be running

    handlers = {
        "ec2.RunInstances": run,
        "ec2.ModifyManagedPrefixList": modify,
        "ec2.DescribeInstances": booting,
    }
    with hooked(monkeypatch, handlers):
        cloud, _ = _one_wave(tmp_path, "pub", 4, path="public")
    try:
        assert len(stamps["run"]) == 4 and len(stamps["modify"]) == 4, stamps
        assert max(stamps["run"]) < min(stamps["modify"]), stamps
        # and every address did join the list, none lost to a stale version
        ec2 = aws.client("ec2", "us-east-1")
        (plist,) = ec2.describe_managed_prefix_lists(
            Filters=[{"Name": "tag:netfleet:campaign", "Values": ["pub"]}]
        )["PrefixLists"]
        entries = ec2.get_managed_prefix_list_entries(PrefixListId=plist["PrefixListId"])
        assert len(entries["Entries"]) == 4, entries
    finally:
        _destroy(cloud, "pub")


# -- leak 2: burstable types in credit mode standard -------------------------------------------
def test_burstable_types_launch_in_standard_credit_mode(
    fresh: MotoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """T3/T3a/T4g launch *unlimited* unless told: surplus credits are billed on top of the
    hourly price the estimate counts. netfleet asks for ``standard``; other families get no
    credit specification (AWS refuses one for them)."""
    from netfleet.cloud.aws.acquire.provision import Provisioner
    from tests.awshooks import hooked

    spec = cloud_spec("credits", "t3.micro", "t4g.nano", "m5.large")
    with hooked(monkeypatch) as calls:
        prov = Provisioner(spec, tmp_path)  # its clients are hooked
        try:
            prov.acquire()
        finally:
            prov.release()
    asked = {p["InstanceType"]: p.get("CreditSpecification") for p in calls.ops("RunInstances")}
    standard = {"CpuCredits": "standard"}
    assert asked == {"t3.micro": standard, "t4g.nano": standard, "m5.large": None}, asked


# -- leak 3: a released host's address leaves the prefix list ----------------------------------
def test_a_released_hosts_address_leaves_the_prefix_list(fresh: MotoServer, tmp_path: Path) -> None:
    """``path: public``: releasing a host (its last run ended) takes its public /32 out of the
    campaign's prefix list (before: it stayed, and whoever AWS gave the address next was
    admitted by the next waves' security group)."""
    from netfleet.cloud.release import give_back
    from netfleet.cloud.seam import Scope

    cloud, machines = _one_wave(tmp_path, "unadmit", 2, path="public")
    try:
        ec2 = aws.client("ec2", "us-east-1")
        (plist,) = ec2.describe_managed_prefix_lists(
            Filters=[{"Name": "tag:netfleet:campaign", "Values": ["unadmit"]}]
        )["PrefixLists"]

        def held() -> set[str]:
            got = ec2.get_managed_prefix_list_entries(PrefixListId=plist["PrefixListId"])
            return {e["Cidr"] for e in got["Entries"]}

        gone, kept = machines
        assert held() == {f"{gone.detail.public_ip}/32", f"{kept.detail.public_ip}/32"}
        assert asyncio.run(give_back(cloud, Scope.of_lease(gone.lease))).outcome == "released"
        assert held() == {f"{kept.detail.public_ip}/32"}
    finally:
        _destroy(cloud, "unadmit")


# -- 6a/6b: seed 002 as written -----------------------------------------------------------------
def test_a_type_that_cannot_boot_the_image_is_refused_before_anything_exists(
    fresh: MotoServer, tmp_path: Path
) -> None:
    """t1.micro boots paravirtual images only (DescribeInstanceTypes'
    SupportedVirtualizationTypes, as AWS answers it: ``netfleet_sim.awsfaults``), netfleet's
    are HVM: refused naming the type and the fix, before a VPC exists (before: RunInstances'
    InvalidParameterCombination, raw, mid-study)."""
    from netfleet.cloud.aws.acquire.provision import Provisioner
    from netfleet.errors import InputError

    spec = cloud_spec("pv", "t2.micro", "t1.micro")
    with pytest.raises(InputError, match=r"t1\.micro boots only paravirtual images") as err:
        Provisioner(spec, tmp_path).acquire()
    assert "t2.micro" in str(err.value.hint)
    assert not any(left("pv").values())


def test_fleets_whose_types_share_no_zone_each_get_a_zone_offering_theirs(
    fresh: MotoServer, tmp_path: Path
) -> None:
    """No zone of us-east-1 offers both vt1.3xlarge (a, d) and trn1.2xlarge (c, f) in moto's
    offerings (AWS's): each fleet goes to the first zone offering its type, preferring one
    already used, and a note says so (before: "no zone of us-east-1 offers all of …", the
    campaign refused)."""
    from netfleet.cloud.aws.acquire.provision import Provisioner

    spec = cloud_spec("zones", "t3.micro", "vt1.3xlarge", "trn1.2xlarge", placement="same-az")
    prov = Provisioner(spec, tmp_path)
    try:
        prov.prepare()
        assert [s.az for s in prov.sites] == ["us-east-1a", "us-east-1a", "us-east-1c"]
        assert len(prov.notes) == 1 and "no zone of us-east-1 offers all" in prov.notes[0]
        subnets = aws.client("ec2", "us-east-1").describe_subnets(
            Filters=[{"Name": "tag:netfleet:campaign", "Values": ["zones"]}]
        )["Subnets"]
        assert sorted(s["AvailabilityZone"] for s in subnets) == ["us-east-1a", "us-east-1c"]
    finally:
        prov.release()


def test_a_released_hosts_address_leaves_every_regions_prefix_list(
    fresh: MotoServer, tmp_path: Path
) -> None:
    """A campaign spanning us-east-1 and eu-west-1 (no peering: hosts meet at their public
    addresses, each region's prefix list holding every host's /32): releasing the host in
    us-east-1 takes its /32 out of eu-west-1's list as well as its own region's (before: the
    other region's security group still admitted whoever AWS gave the address next)."""
    from netfleet.cloud.release import give_back
    from netfleet.cloud.seam import Scope

    fleets = [
        {"name": "a1", "instance_type": "t3.micro", "role": "client"},
        {"name": "a2", "instance_type": "t3.micro", "role": "client", "region": "eu-west-1"},
    ]
    cloud, machines = _one_wave(tmp_path, "twoplaces", 2, placement="cross-region", fleets=fleets)
    regions = ["us-east-1", "eu-west-1"]
    try:
        lists = {}
        for region in regions:
            ec2 = aws.client("ec2", region)
            (plist,) = ec2.describe_managed_prefix_lists(
                Filters=[{"Name": "tag:netfleet:campaign", "Values": ["twoplaces"]}]
            )["PrefixLists"]
            lists[region] = (ec2, plist["PrefixListId"])

        def held(region: str) -> set[str]:
            ec2, plist = lists[region]
            got = ec2.get_managed_prefix_list_entries(PrefixListId=plist)
            return {e["Cidr"] for e in got["Entries"]}

        gone, kept = machines
        assert (gone.detail.region, kept.detail.region) == ("us-east-1", "eu-west-1")
        both = {f"{gone.detail.public_ip}/32", f"{kept.detail.public_ip}/32"}
        assert [held(r) for r in regions] == [both, both]
        assert asyncio.run(give_back(cloud, Scope.of_lease(gone.lease))).outcome == "released"
        assert [held(r) for r in regions] == [{f"{kept.detail.public_ip}/32"}] * 2
    finally:
        asyncio.run(give_back(cloud, Scope.of_campaign("twoplaces", regions)))
    for region in regions:
        assert not any(teardown.remaining(aws.client("ec2", region), "twoplaces").values())
