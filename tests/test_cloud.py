"""The AWS provider against moto's server (its own process, loopback only).

Where moto lacks an API — placement groups, DependencyViolation, the Pricing API — the tests use
botocore's Stubber with responses shaped like AWS's (said at each test)."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from netfleet import aws
from netfleet.cloud.aws import filters
from netfleet.cloud.aws.acquire import images
from netfleet.cloud.aws.acquire.provision import TAG_CAMPAIGN, Provisioner
from netfleet.cloud.aws.campaign import CloudSpec
from netfleet.cloud.aws.journal import Journal
from netfleet.cloud.aws.plan import catalogue, prices
from netfleet.cloud.aws.release import teardown
from netfleet.cloud.bootstrap.userdata import render
from netfleet.cloud.journal import client_token
from netfleet.errors import InputError
from tests import forkkit, motokit
from tests.motokit import KILL_POINTS, MotoServer

DEBIAN = images.DEBIAN_OWNER


def _ami(ami_id: str, name: str, day: str, arch: str = "x86_64", **over: str) -> dict[str, Any]:
    return {"ami_id": ami_id, "name": name, "owner_id": DEBIAN, "architecture": arch,
            "creation_date": f"{day}T18:20:00.000Z", "state": "available", "public": True,
            "image_type": "machine", "virtualization_type": "hvm", **over}  # fmt: skip


#: The module's AMIs, as moto's MOTO_AMIS_PATH file (moto registers every image it creates under
#: its own account, so Debian's owner id can only come in this way): Debian 12 twice (the newer
#: must win) and for arm64, Debian 13 for amd64 only, and images the lookup must pass over — a
#: backports build (another name), a newer one still pending, and a newer one owned by another
#: account. Names and dates follow Debian's ("debian-12-amd64-20240717-1811").
DEBIAN_AMIS = [
    _ami("ami-0deb12a00000001", "debian-12-amd64-20240102-1614", "2024-01-02"),
    _ami("ami-0deb12a00000002", "debian-12-amd64-20240717-1811", "2024-07-17"),
    _ami("ami-0deb12b00000001", "debian-12-arm64-20240717-1811", "2024-07-17", "arm64"),
    _ami("ami-0deb12c00000001", "debian-12-backports-amd64-20240801-1811", "2024-08-01"),
    _ami("ami-0deb12d00000001", "debian-12-amd64-20240901-1811", "2024-09-01", state="pending"),
    _ami(
        "ami-0bad000000000001",
        "debian-12-amd64-20991231-0000",
        "2099-12-31",
        owner_id="999999999999",
    ),
    _ami("ami-0deb13a00000001", "debian-13-amd64-20250814-2204", "2025-08-14"),
]


@pytest.fixture(scope="module")
def moto(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    """One moto server for the module, whose AMIs are :data:`DEBIAN_AMIS`."""
    amis = tmp_path_factory.mktemp("amis") / "amis.json"
    amis.write_text(json.dumps(DEBIAN_AMIS))
    with motokit.moto_server(env={"MOTO_AMIS_PATH": str(amis)}) as srv:
        yield srv


SPEC = {
    "campaign": "nf-test",
    "region": "us-east-1",
    "fleets": [
        {"instance_type": "t3.micro", "count": 1, "role": "server"},
        {"instance_type": "r4.large", "count": 1, "role": "client"},
    ],
    "duration_minutes": 5,
}


fresh = motokit.fresh  # the module's moto server, reset for each test


def test_catalogue_reads_advertised_network_figures(fresh: MotoServer) -> None:
    info = catalogue.describe(aws.client("ec2", "us-east-1"), ["r4.large", "c5n.large"])
    r4 = info["r4.large"]
    assert (r4.baseline_gbps, r4.peak_gbps, r4.burstable) == (0.75, 10.0, True)
    assert r4.labels()["network_performance"].startswith("Up to")
    assert info["c5n.large"].baseline_gbps == 3.0
    assert catalogue.measured_ratio(0.6, r4) == pytest.approx(0.8)


def test_acquire_release_leaves_nothing(fresh: MotoServer, tmp_path: Path) -> None:
    prov = Provisioner(CloudSpec(**SPEC), tmp_path)
    hosts = prov.acquire()
    assert [h.instance_type for h in hosts] == ["t3.micro", "r4.large"]
    assert hosts[1].labels["burstable"] == "true"
    ec2 = aws.client("ec2", "us-east-1")
    inst = ec2.describe_instances(InstanceIds=[hosts[0].instance_id])["Reservations"][0]
    tags = {t["Key"]: t["Value"] for t in inst["Instances"][0]["Tags"]}
    assert tags[TAG_CAMPAIGN] == "nf-test" and "netfleet:expires-at" in tags
    # host keys pinned before any connection: one line per address, ed25519
    pinned = hosts[0].known_hosts.read_text().splitlines()
    assert any(line.startswith(hosts[0].private_ip + " ssh-ed25519 ") for line in pinned)
    assert oct(hosts[0].identity_file.stat().st_mode & 0o777) == "0o600"
    # the journal: an intent before every create, the id after
    recs = [json.loads(x) for x in prov.journal.path.read_text().splitlines()]
    assert [r["op"] for r in recs[:2]] == ["intent", "created"]
    assert "PRIVATE KEY" not in prov.journal.path.read_text()
    before = teardown.remaining(ec2, "nf-test")
    assert before["instances"] == 2 and before["vpcs"] == 1 and before["key-pairs"] == 1
    # the campaign's VPC reaches the internet: public addresses on launch, a gateway, a route
    assert before["internet-gateways"] == 1 and before["route-tables"] == 1
    net = prov.network
    assert net is not None and net.igw_id is not None
    sn = ec2.describe_subnets(SubnetIds=[net.subnet_id])["Subnets"][0]
    assert sn["MapPublicIpOnLaunch"] is True
    (rtb,) = ec2.describe_route_tables(
        Filters=[{"Name": f"tag:{TAG_CAMPAIGN}", "Values": ["nf-test"]}]
    )["RouteTables"]
    assert {"DestinationCidrBlock": "0.0.0.0/0", "GatewayId": net.igw_id}.items() <= next(
        r for r in rtb["Routes"] if r.get("DestinationCidrBlock") == "0.0.0.0/0"
    ).items()
    assert [a["SubnetId"] for a in rtb["Associations"]] == [net.subnet_id]
    (igw,) = ec2.describe_internet_gateways(InternetGatewayIds=[net.igw_id])["InternetGateways"]
    assert igw["Attachments"][0]["VpcId"] == net.vpc_id
    totals = prov.release()
    assert not any(totals.values())
    assert all(r.deleted for r in Journal(tmp_path, "nf-test").read().resources)
    # teardown order: the gateway and the route table go before the subnet, the VPC last
    order = [json.loads(x) for x in prov.journal.path.read_text().splitlines()]
    order = [r["kind"] for r in order if r["op"] == "deleted"]
    assert order.index("instance") < order.index("internet-gateway") < order.index("subnet")
    assert order.index("route-table") < order.index("subnet") < order.index("vpc") == len(order) - 1


def test_destroy_only_deletes_tagged_resources(fresh: MotoServer, tmp_path: Path) -> None:
    """A journal edited to name a foreign instance must not make netfleet terminate it."""
    ec2 = aws.client("ec2", "us-east-1")
    ami = ec2.describe_images()["Images"][0]["ImageId"]
    foreign = ec2.run_instances(ImageId=ami, InstanceType="t3.micro", MinCount=1, MaxCount=1)
    fid = foreign["Instances"][0]["InstanceId"]
    j = Journal(tmp_path, "nf-test")
    j.intent("instance", "us-east-1", "x")
    j.created("instance", "us-east-1", "x", fid)
    teardown.destroy(tmp_path, "nf-test")
    state = ec2.describe_instances(InstanceIds=[fid])["Reservations"][0]["Instances"][0]["State"]
    assert state["Name"] == "running"


def test_reap_finds_expired_by_tag(fresh: MotoServer, tmp_path: Path) -> None:
    past = dt.datetime.now(dt.UTC) - dt.timedelta(hours=5)
    spec = CloudSpec(**{**SPEC, "campaign": "nf-old", "expires_after_minutes": 60})
    Provisioner(spec, tmp_path, now=past).acquire()
    Provisioner(CloudSpec(**SPEC), tmp_path).acquire()  # not expired: must survive
    now = dt.datetime.now(dt.UTC)
    dry = teardown.reap(tmp_path, [], now, delete=False, poll_s=0.1)
    assert [e.campaign for e in dry] == ["nf-old"] and dry[0].counts["instances"] == 2
    teardown.reap(tmp_path, [], now, delete=True, poll_s=0.1)
    ec2 = aws.client("ec2", "us-east-1")
    assert not any(teardown.remaining(ec2, "nf-old").values())
    assert teardown.remaining(ec2, "nf-test")["instances"] == 2
    teardown.destroy(tmp_path, "nf-test")


def test_client_token_is_deterministic() -> None:
    assert client_token("a", "vpc", "main") == client_token("a", "vpc", "main")
    assert client_token("a", "vpc", "main") != client_token("b", "vpc", "main")
    assert len(client_token("a", "instance", "x" * 200)) <= 64  # AWS's limit


def test_user_data_carries_host_key_and_dead_mans_switch() -> None:
    from netfleet.cloud.bootstrap.hostkeys import generate

    hk = generate("h")
    doc = json.loads(render(hk, 90).split("\n", 1)[1])
    assert doc["ssh_keys"]["ed25519_public"] == hk.public_openssh
    # the switch: a transient systemd timer at boot (PID 1 directly: no D-Bus needed that
    # early), backed by shutdown's own timer once the machine is up
    (timer,) = doc["bootcmd"]
    assert timer[0] == "systemd-run" and "--on-active=90min" in timer
    assert timer[-2:] == ["/usr/bin/systemctl", "poweroff"]
    assert doc["runcmd"][0] == ["shutdown", "-P", "+90"]
    # then set -e: a failed install stops cloud-init's runcmd script before the marker, each
    # command run through netfleet_step, whose trap writes the failing one for readiness
    cmds = steps(doc)
    # AL2023: one dnf call for what its repositories have (no iperf 2, no sockperf there),
    # strict: a failure is a failure
    assert cmds[0] == ["dnf", "install", "-y", "iproute", "iproute-tc", "ethtool",
                       "iperf3", "iputils"]  # fmt: skip
    assert not any("apt-get" in c for c in cmds)
    # /usr/sbin's tools linked onto a login's PATH
    assert cmds[1][:2] == ["ln", "-sf"] and cmds[2][-1] == "/usr/local/bin/ethtool"
    # the last command (cloud-init's final stage, after the packages) writes the ready marker
    assert cmds[3:] == [["mkdir", "-p", "/var/lib/netfleet"],
                        ["touch", "/var/lib/netfleet/ready"]]  # fmt: skip


def steps(doc: dict[str, Any]) -> list[list[str]]:
    """The commands of a user-data's runcmd after ``set -e``, each through ``netfleet_step``
    (its string lines before: the function and the trap writing the failing command)."""
    runcmd = doc["runcmd"]
    at = runcmd.index("set -e")
    assert runcmd[at - 2].startswith("netfleet_step() {") and runcmd[at - 1].startswith("trap ")
    assert "/var/lib/netfleet/failed" in runcmd[at - 1]
    assert all(c[0] == "netfleet_step" for c in runcmd[at + 1 :])
    return [c[1:] for c in runcmd[at + 1 :]]


def test_user_data_for_debian_uses_apt() -> None:
    """Debian: package lists first (a fresh AMI has none), then one install per package,
    waiting for the dpkg lock; the same switch; the ready marker last."""
    from netfleet.cloud.bootstrap.hostkeys import generate

    doc = json.loads(render(generate("h"), 30, "debian-12").split("\n", 1)[1])
    assert doc["bootcmd"][0][0] == "systemd-run" and doc["runcmd"][0] == ["shutdown", "-P", "+30"]
    cmds = steps(doc)
    update, *installs = cmds[:-4]
    assert cmds[-1] == ["touch", "/var/lib/netfleet/ready"]
    assert update[:3] == ["env", "DEBIAN_FRONTEND=noninteractive", "apt-get"]
    assert update[-1] == "update" and "DPkg::Lock::Timeout=600" in update
    assert [c[-1] for c in installs] == ["iproute2", "ethtool", "iperf3", "iperf", "sockperf",
                                         "iputils-ping", "irtt"]  # fmt: skip
    assert all("install" in c and "-y" in c for c in installs)
    assert not any("dnf" in c for c in doc["runcmd"])
    # a host whose runs use iperf3 only gets iperf3 (and the base tools), nothing else
    only = steps(json.loads(render(generate("h"), 30, "debian-12", ["iperf3"]).split("\n", 1)[1]))
    assert [c[-1] for c in only[1:-4]] == ["iproute2", "ethtool", "iperf3"]
    assert images.FAMILIES["debian-12"].user == "admin"
    assert images.FAMILIES["al2023"].user == "ec2-user"


@pytest.mark.parametrize(
    ("image", "engine", "refused"),
    [("al2023", "iperf2", "iperf"), ("al2023", "irtt", "irtt"), ("al2023", "iperf3", None),
     ("debian-12", "iperf2", None), ("debian-12", "irtt", None)],
)  # fmt: skip
def test_an_engine_the_image_lacks_is_refused_before_launch(
    image: str, engine: str, refused: str | None
) -> None:
    """AL2023's repositories have no iperf 2, sockperf or irtt: a campaign whose runs need them
    there is an input error naming host, image, tool and engine (nothing is launched)."""
    from types import SimpleNamespace

    from netfleet.cloud.bootstrap.userdata import check_images
    from netfleet.runner.tools import BASE_TOOLS, engine_tools

    cloud = SimpleNamespace(backing="ssh", image_family=image, ami=None)
    tools = (*BASE_TOOLS, *engine_tools(engine))
    req = SimpleNamespace(name="srv", spec=SimpleNamespace(cloud=cloud, fargate=None), tools=tools)
    if refused is None:
        check_images([req])
        return
    with pytest.raises(InputError) as err:
        check_images([req])
    msg = err.value.message
    assert f"host srv: image {image} has no package for {refused}" in msg
    assert engine in msg and "debian-12" in (err.value.hint or "")
    cloud.backing = "sim"  # the sim's namespaces use this machine's tools: nothing to refuse
    check_images([req])


def test_cost_guard_and_stale_prices() -> None:
    from netfleet.cloud.aws.plan.costs import guard

    table = prices.load(None)
    est = prices.estimate(table, "us-east-1", [("r4.large", 4)], duration_minutes=52)
    assert est.usd == pytest.approx(0.133 * 4 * 1.0)  # 52 min + 8 min overhead = 1 h
    guard(est, max_cost=1.0, max_instances=4, yes=False)
    with pytest.raises(InputError, match="max-cost"):
        guard(est, max_cost=0.5, max_instances=4, yes=False)
    with pytest.raises(InputError, match="max-instances"):
        guard(est, max_cost=9, max_instances=3, yes=False)
    # --yes confirms a launch; it never lifts a limit (issue 25.6)
    with pytest.raises(InputError, match="max-instances"):
        guard(est, max_cost=0.5, max_instances=3, yes=True)
    with pytest.raises(InputError, match="exceeds --max-cost"):
        guard(est, max_cost=0.5, max_instances=4, yes=True)
    unknown = prices.estimate(table, "us-east-1", [("x9.huge", 1)], 5)
    for yes in (False, True):
        with pytest.raises(InputError, match="cannot be bounded"):
            guard(unknown, max_cost=100, max_instances=9, yes=yes)
    warn = prices.stale_warning(table, today=table.as_of + dt.timedelta(days=91))
    assert warn and "refresh" in warn
    assert prices.stale_warning(table, today=table.as_of) is None


def test_prices_refresh_from_pricing_api(tmp_path: Path) -> None:
    """moto has no Pricing API: Stubber with a GetProducts answer shaped like AWS's."""
    import botocore.session

    pricing = botocore.session.get_session().create_client(
        "pricing", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    item = {
        "product": {"attributes": {"instanceType": "r4.large", "regionCode": "us-east-1"}},
        "terms": {
            "OnDemand": {
                "T1": {
                    "priceDimensions": {"D1": {"unit": "Hrs", "pricePerUnit": {"USD": "0.1400"}}}
                }
            }
        },
    }
    with Stubber(pricing) as stub:
        stub.add_response("get_products", {"PriceList": [json.dumps(item)]})
        stub.add_response("get_products", {"PriceList": []})
        stub.add_response("get_products", {"PriceList": []})  # AmazonECS: no Fargate answer
        new, missing = prices.refresh(
            pricing, prices.load(None), ["us-east-1"], ["r4.large", "zz.nano"], dt.date(2026, 11, 1)
        )
    assert new.ec2_hourly("us-east-1", "r4.large") == 0.14
    assert missing == ["us-east-1/zz.nano", "us-east-1/fargate"]
    assert new.as_of == dt.date(2026, 11, 1)
    assert new.ec2_source_of("us-east-1", "r4.large").as_of == dt.date(2026, 11, 1)
    assert new.ec2_source_of("us-east-1", "m5.large").as_of < dt.date(2026, 11, 1)
    prices.save(new, tmp_path)
    assert prices.load(tmp_path).ec2_hourly("us-east-1", "r4.large") == 0.14


def test_security_group_delete_retries_dependency_violation() -> None:
    """moto deletes an in-use group at once; AWS answers DependencyViolation until the ENIs are
    gone — Stubber replays that sequence."""
    import botocore.session

    ec2 = botocore.session.get_session().create_client(
        "ec2", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    with Stubber(ec2) as stub:
        for _ in range(2):
            stub.add_client_error("delete_security_group", "DependencyViolation", "in use")
        stub.add_response("delete_security_group", {})
        teardown.retry(lambda: ec2.delete_security_group(GroupId="sg-1"), delay=0.01)
        stub.assert_no_pending_responses()
    with Stubber(ec2) as stub:
        stub.add_client_error("delete_security_group", "InvalidGroup.NotFound", "gone")
        teardown._ignore_missing(lambda: ec2.delete_security_group(GroupId="sg-1"))
        stub.add_client_error("delete_security_group", "UnauthorizedOperation", "no")
        with pytest.raises(ClientError):
            teardown._ignore_missing(lambda: ec2.delete_security_group(GroupId="sg-1"))


# The internet gateway and route table get only their `after:` points: `before:` leaves the
# same resources as the previous step's `after:` plus an intent (destroy goes by tag either way);
# `after:internet-gateway` leaves an unattached gateway the journal has no id for, and
# `after:route-table` a table without its route and association. Those two are named in their
# per-region form (`<point>@<region>`, fired right after the plain one).
PROVISION_POINTS = [
    *(f"{when}:{kind}" for kind in ("vpc", "subnet") for when in ("before", "after")),
    "after:internet-gateway@us-east-1",
    "after:route-table@us-east-1",
    *(f"{w}:{k}" for k in ("security-group", "key-pair", "instance") for w in ("before", "after")),
    "after:acquire",
]
TEARDOWN_POINTS = [
    "teardown:before-terminate",
    "teardown:after-terminate",
    "teardown:after-wait-terminated",
    "teardown:after-spot-requests",
    "teardown:after-key-pair",
    "teardown:after-security-group",
    "teardown:after-internet-gateway",
    "teardown:after-route-table",
    "teardown:after-subnet",
    "teardown:after-vpc",
]
# cmd_cloud is not registered in cli/main.py yet (the lead wires it): run the sub-app through the
# same error boundary main() uses.
CLI = (
    "import sys; from netfleet.cli.boundary import guarded; from netfleet.cli.cmd_cloud import app;"
    " sys.exit(guarded(lambda: app(prog_name='netfleet cloud', standalone_mode=False)))"
)


def _cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``python -c CLI *args``: a process of its own, forked from a pre-loaded one
    (tests/forkkit.py: the kill -9 walks start dozens)."""
    return forkkit.run(CLI, args, env, timeout=120)


@pytest.mark.slow
def test_kill_9_at_every_step_then_destroy_leaves_zero(fresh: MotoServer, tmp_path: Path) -> None:
    """The controller (a real subprocess: ``netfleet cloud up --release``) SIGKILLs itself at each
    provisioning and teardown step in turn; ``cloud destroy`` (also a subprocess) from the
    journal alone must then leave 0 tagged resources of every type, counted through the API.
    Each step is its own campaign, so two run side by side (the subprocesses' start-up is most
    of the time)."""
    from concurrent.futures import ThreadPoolExecutor

    kinds = ["instances", "key-pairs", "security-groups", "internet-gateways", "route-tables",
             "subnets", "vpcs"]  # fmt: skip
    # what the kill must have left at the new steps (the table shows them all)
    expect = {
        "after:internet-gateway@us-east-1": (0, 0, 0, 1, 0, 1, 1),
        "after:route-table@us-east-1": (0, 0, 0, 1, 1, 1, 1),
        "teardown:after-internet-gateway": (0, 0, 0, 0, 1, 1, 1),
        "teardown:after-route-table": (0, 0, 0, 0, 0, 1, 1),
    }

    def one(n: int, point: str) -> tuple[str, dict[str, Any], dict[str, Any]]:
        campaign = f"nf-fault-{n}"
        spec = tmp_path / f"c{n}.yaml"
        spec.write_text(
            f"campaign: {campaign}\nfleets: [{{instance_type: t3.micro, count: 1}}]\n"
            "duration_minutes: 1\n"
        )
        ec2 = aws.client("ec2", "us-east-1")
        state = tmp_path / f"s{n}"
        env = {**os.environ, **KILL_POINTS, "NETFLEET_FAULT_AT": point}
        killed = _cli(["up", str(spec), "--state-dir", str(state), "--release"], env)
        assert killed.returncode == -9, (point, killed.stderr[-2000:])
        left = teardown.remaining(ec2, campaign)
        if point in expect:
            assert tuple(left[k] for k in kinds) == expect[point], (point, left)
        env.pop("NETFLEET_FAULT_AT")
        if n % 4 == 0:  # the CLI itself now and then; the library call otherwise (faster)
            done = _cli(["destroy", campaign, "--state-dir", str(state)], env)
            assert done.returncode == 0, (point, done.stderr[-2000:])
        else:
            teardown.destroy(state, campaign, poll_s=0.1)
        counts = teardown.remaining(ec2, campaign)
        assert not any(counts.values()), (point, counts)
        return point, left, counts

    with ThreadPoolExecutor(2) as pool:
        points = PROVISION_POINTS + TEARDOWN_POINTS
        rows = list(pool.map(one, range(len(points)), points))
    print(
        "\nkill -9 at                       left by kill: " + " ".join(kinds) + " → after destroy"
    )
    for point, left, counts in rows:
        print(
            f"{point:32} "
            + " ".join(f"{left[k] or 0:>{len(k)}}" for k in kinds)
            + f"  → {sum(v or 0 for v in counts.values())}"
        )


def test_sim_backing_matches_the_r4_profile(fresh: MotoServer) -> None:
    """The generated lab shapes r4.large exactly like the hand-written r4 profile (seed 004)."""
    from netfleet.lab import load_lab
    from netfleet_sim.instances import lab_spec

    types = ["r4.large", "c5n.large", "c5n.18xlarge"]
    info = catalogue.describe(aws.client("ec2", "us-east-1"), types)
    lab = lab_spec(
        "awssim",
        [
            ("r4l", info["r4.large"], {}),
            ("c5n", info["c5n.large"], {}),
            ("big", info[types[2]], {}),
        ],
    )
    profile = load_lab("r4").hosts["r4-large"].out
    got = lab.hosts["r4l"].out
    assert profile is not None and got is not None
    assert (got.rate, got.peak, got.bucket) == (profile.rate, profile.peak, profile.bucket)
    assert lab.hosts["c5n"].labels["credit_source"] == "assumed"  # "Up to 25", no seed figure
    steady = lab.hosts["big"].out
    assert steady is not None and steady.peak is None and steady.rate == 100e9 * 0.05


def test_ena_and_cloudwatch_cross_check(fresh: MotoServer, tmp_path: Path) -> None:
    """moto keeps no real metrics: the datapoints are put first (put_metric_data), then read
    back by the same call a real run makes."""
    from netfleet.cloud.aws.collect.checks import cross_check

    ec2 = aws.client("ec2", "us-east-1")
    ami = ec2.describe_images()["Images"][0]["ImageId"]
    iid = ec2.run_instances(ImageId=ami, InstanceType="c5n.large", MinCount=1, MaxCount=1)[
        "Instances"
    ][0]["InstanceId"]
    cw = aws.client("cloudwatch", "us-east-1")
    start = dt.datetime.now(dt.UTC).replace(microsecond=0) - dt.timedelta(minutes=5)
    end = start + dt.timedelta(minutes=10)
    empty = cross_check(cw, iid, "NetworkOut", start, end, 1e9)
    assert empty.cloudwatch_bytes is None and empty.verdict.startswith("no data")
    for minute, value in ((1, 6e8), (2, 5e8)):
        cw.put_metric_data(
            Namespace="AWS/EC2",
            MetricData=[
                {
                    "MetricName": "NetworkOut",
                    "Dimensions": [{"Name": "InstanceId", "Value": iid}],
                    "Timestamp": start + dt.timedelta(minutes=minute),
                    "Value": value,
                    "Unit": "Bytes",
                }
            ],
        )
    ok = cross_check(cw, iid, "NetworkOut", start, end, 1.05e9)
    assert ok.cloudwatch_bytes == 1.1e9 and ok.verdict.startswith("agrees")
    bad = cross_check(cw, iid, "NetworkOut", start, end, 2e9)
    assert bad.verdict.startswith("mismatch")


def test_ena_attribute_check() -> None:
    """moto rejects the enaSupport attribute ("Unknown attribute"): Stubber with AWS's shape."""
    import botocore.session

    from netfleet.cloud.aws.collect.checks import ena_enabled

    ec2 = botocore.session.get_session().create_client(
        "ec2", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    with Stubber(ec2) as stub:
        stub.add_response(
            "describe_instance_attribute",
            {"InstanceId": "i-1", "EnaSupport": {"Value": True}},
            {"InstanceId": "i-1", "Attribute": "enaSupport"},
        )
        stub.add_response("describe_instance_attribute", {"InstanceId": "i-2"})
        assert ena_enabled(ec2, "i-1") is True
        assert ena_enabled(ec2, "i-2") is False


@pytest.mark.parametrize("name", ["aws-cheatsheet", "aws-credits"])
def test_example_cloud_specs_plan(name: str, tmp_path: Path) -> None:
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "NETFLEET_CLOUD_DIR": str(tmp_path)}
    out = _cli(["plan", str(root / "examples" / f"{name}.cloud.yaml")], env)
    assert out.returncode == 0, out.stderr
    assert "estimated cost: $" in out.stdout and "instances in us-east-1" in out.stdout


def test_up_refuses_above_max_cost_without_launching(fresh: MotoServer, tmp_path: Path) -> None:
    root = Path(__file__).resolve().parent.parent
    spec = str(root / "examples" / "aws-credits.cloud.yaml")
    out = _cli(["up", spec, "--state-dir", str(tmp_path), "--max-cost", "0.01"], dict(os.environ))
    assert out.returncode == 2 and "max-cost" in out.stderr + out.stdout
    out = _cli(["up", spec, "--state-dir", str(tmp_path), "--max-instances", "2"], dict(os.environ))
    assert out.returncode == 2 and "max-instances" in out.stderr + out.stdout
    assert teardown.remaining(aws.client("ec2", "us-east-1"), "aws-credits")["instances"] == 0
    assert not (tmp_path / "aws-credits").exists()


def test_spot_market_acquire_release(fresh: MotoServer, tmp_path: Path) -> None:
    """moto launches the spot instance but records no spot request for run_instances' market
    options, so only the instance side of spot is exercised here."""
    spec = CloudSpec(campaign="nf-spot", market="spot", fleets=[{"instance_type": "t3.micro"}])
    prov = Provisioner(spec, tmp_path)
    assert len(prov.acquire()) == 1
    assert not any(prov.release().values())


def test_sigterm_during_acquire_tears_down(fresh: MotoServer, tmp_path: Path) -> None:
    """SIGTERM (not -9) while launching: the controller releases everything and exits 130."""
    spec = tmp_path / "c.yaml"
    spec.write_text("campaign: nf-term\nfleets: [{instance_type: t3.micro, count: 1}]\n")
    env = {**os.environ, **KILL_POINTS, "NETFLEET_FAULT_AT": "after:key-pair"}
    env["NETFLEET_FAULT_SIGNAL"] = "TERM"
    out = _cli(["up", str(spec), "--state-dir", str(tmp_path)], env)
    assert out.returncode == 130, out.stderr[-2000:]
    left = teardown.remaining(aws.client("ec2", "us-east-1"), "nf-term")
    assert not any(left.values()), left


def test_placement_group_journalled_and_deleted(fresh: MotoServer, tmp_path: Path) -> None:
    """moto has no placement groups (HTTP 500): Stubber answers as AWS does, including one
    "still in use" error on delete while instances finish terminating."""
    import botocore.session

    spec = CloudSpec(**{**SPEC, "placement": "cluster"})
    prov = Provisioner(spec, tmp_path)
    ec2 = botocore.session.get_session().create_client(
        "ec2", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    prov.ec2 = ec2
    with Stubber(ec2) as stub:
        stub.add_response("create_placement_group", {})
        assert prov._placement_group() == prov.name  # netfleet-nf-test-<installation id>
        stub.add_client_error("delete_placement_group", "InvalidPlacementGroup.InUse", "in use")
        stub.add_response("delete_placement_group", {})
        teardown.retry(lambda: ec2.delete_placement_group(GroupName=prov.name), delay=0)
        stub.assert_no_pending_responses()
    assert prov.name.startswith("netfleet-nf-test-")
    res = Journal(tmp_path, "nf-test").read().resources
    assert [(r.kind, r.id) for r in res] == [("placement-group", prov.name)]


def test_sim_labs_are_taken_down_only_when_provably_netfleets(tmp_path: Path) -> None:
    """`cloud destroy` and `cloud reap --delete` take a killed run's sim lab down from the cloud
    state directory alone, after checking it: a lab whose `netfleet run` is still alive (its
    PID's cmdline, start time and boot id as recorded) is left to that run; a recycled PID is
    not that run; a state file naming another lab's namespace, or a lab without a controller
    record, is left alone. (The labs here have no namespaces — every check comes before any is
    touched; the kill -9 tests in test_cloud_run.py / test_cloud_fargate_run.py take real labs
    down.)"""
    import subprocess as sp

    from netfleet.errors import EnvironmentProblem
    from netfleet.lab.state import LabState
    from netfleet_sim import labs as simlab

    stamp = "%Y-%m-%dT%H:%M:%SZ"
    now = dt.datetime.now(dt.UTC)

    def lab(campaign: str, expires: dt.datetime = now + dt.timedelta(hours=1)) -> Path:
        _, d = simlab.new_lab(tmp_path, campaign)
        simlab.claim(d, "ab" * 16, region="us-east-1", expires_at=expires.strftime(stamp))
        return d

    def controlled_by(d: Path, pid: int, **change: str) -> None:
        meta = json.loads((d / "controller.json").read_text())
        # Popen returns once exec has begun; the new program's argv shows in /proc a moment
        # later (an empty cmdline reads as "gone"): wait for it (a bound for a busy machine)
        deadline = time.monotonic() + 10.0
        while (who := simlab._identity(pid)) is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert who is not None
        (d / "controller.json").write_text(json.dumps({**meta, **who, "pid": pid, **change}))

    live = lab("nf-sim")
    sleeper = sp.Popen(["sleep", "60"])
    try:
        controlled_by(live, sleeper.pid)
        (out,) = simlab.release_campaign(tmp_path, "nf-sim")
        assert out.outcome == "left" and f"live netfleet run (pid {sleeper.pid})" in out.detail
        with pytest.raises(
            EnvironmentProblem, match=r"sim-labs=1\n  sim lab nf[0-9a-f]{8}: .*live"
        ):
            teardown.destroy(tmp_path, "nf-sim")
        assert live.is_dir()
        controlled_by(live, sleeper.pid, start="1")  # the same PID, started at another time
        assert teardown.destroy(tmp_path, "nf-sim") == {"sim-labs": 0}
        assert not live.exists()
    finally:
        sleeper.kill()
        sleeper.wait()
    foreign = lab("nf-sim")
    state = LabState(name=foreign.name, subnet="198.18.0.0/24", switch=f"nf-{foreign.name}-sw",
                     created_at="x", namespaces=["nf-someone-else"])  # fmt: skip
    (foreign / f"{foreign.name}.json").write_text(state.model_dump_json(by_alias=True))
    (out,) = simlab.release_campaign(tmp_path, "nf-sim")
    assert out.outcome == "left" and "nf-someone-else" in out.detail and foreign.is_dir()
    shutil.rmtree(foreign)
    unknown = lab("nf-sim")
    (unknown / "controller.json").unlink()
    (out,) = simlab.release_campaign(tmp_path, "nf-sim")
    assert out.outcome == "left" and "no readable controller.json" in out.detail
    shutil.rmtree(unknown)
    # reap: by each lab's own expires-at (nothing of these campaigns is left on AWS)
    old = lab("nf-old", now - dt.timedelta(minutes=5))
    new = lab("nf-new")
    (found,) = teardown.reap(tmp_path, [], now, delete=False)
    assert (found.campaign, found.counts, found.region) == ("nf-old", {"sim-labs": 1}, "us-east-1")
    assert old.is_dir()
    teardown.reap(tmp_path, [], now, delete=True)
    assert not old.exists() and new.is_dir()


# -- images, regions, zones (issue 12) ------------------------------------------------------------
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_debian_image_is_the_newest_by_owner_and_name(fresh: MotoServer) -> None:
    """DescribeImages with Debian's owner id, name pattern, state and architecture; the newest
    CreationDate wins — not the backports build, the pending one, nor another account's."""
    from netfleet.errors import EnvironmentProblem

    ec2 = aws.client("ec2", "eu-west-1")
    assert images.resolve(ec2, "debian-12", "x86_64") == "ami-0deb12a00000002"
    assert images.resolve(ec2, "debian-12", "arm64") == "ami-0deb12b00000001"
    assert images.resolve(ec2, "debian-13", "x86_64") == "ami-0deb13a00000001"
    with pytest.raises(EnvironmentProblem) as err:
        images.resolve(ec2, "debian-13", "arm64")
    msg = str(err.value)
    assert "no Debian 13 image in eu-west-1" in msg and "debian-13-arm64-*" in msg and DEBIAN in msg
    # the architecture is the type's, from DescribeInstanceTypes: Graviton → arm64
    info = catalogue.describe(ec2, ["m7g.large", "c5n.large"])
    assert images.architecture(info["m7g.large"].architectures) == "arm64"
    assert images.architecture(info["c5n.large"].architectures) == "x86_64"


def _cross_region_spec(tmp_path: Path) -> Any:
    """examples/aws-cross-region.yaml (backing sim) on Debian 12, the eu-west-1 client a
    Graviton m7g.large (arm64), without the same-zone client."""
    import yaml

    from netfleet.spec import load_spec

    doc = yaml.safe_load((EXAMPLES / "aws-cross-region.yaml").read_text())
    doc["cloud"].update(image="debian-12")
    doc["cloud"]["fleets"] = [f for f in doc["cloud"]["fleets"] if f["name"] != "same-az"]
    doc["cloud"]["fleets"][-1]["instance_type"] = "m7g.large"
    doc["tests"][0]["matrix"]["client"] = ["other-az", "eu"]
    path = tmp_path / "x.yaml"
    path.write_text(yaml.safe_dump(doc))
    return load_spec(path)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")
@pytest.mark.netns
def test_cross_region_acquire_release_leaves_nothing_in_either_region(
    fresh: MotoServer, tmp_path: Path
) -> None:
    """The AWS provider (host kind aws, through the host pool; backing sim: one lab namespace
    per instance) on two regions: a VPC, subnets, a security group and the campaign key pair in
    each, every instance in its fleet's region and zone on the right Debian AMI; the pool's
    release leaves 0 of every type in both regions, and no lab."""
    import asyncio

    from netfleet.cloud.aws import runs
    from netfleet.cloud.aws.plan import costs
    from netfleet.cloud.aws.provider import AwsProvider
    from netfleet.hosts.provider import HostPool, HostRequest, MemoryLeaseLog

    spec = _cross_region_spec(tmp_path)
    # the plan: each host at its region's price; no eu-west-1 price for m7g.large → unknown,
    # which the guard refuses
    priced = runs.plan_cost(spec, 60)
    assert priced is not None and priced.estimate.usd is None
    assert priced.estimate.unknown == ["m7g.large in eu-west-1"]
    with pytest.raises(InputError, match="cannot be bounded"):
        costs.guard(priced.estimate, 5, 10, yes=False)

    campaign, root = spec.campaign, tmp_path / "cloud"
    regions = ["us-east-1", "eu-west-1"]
    ec2 = {r: aws.client("ec2", r) for r in regions}
    reqs = [HostRequest(n, h) for n, h in spec.hosts.items() if h.kind == "aws"]
    provider, log = AwsProvider(state_root=root, poll_s=0.05), MemoryLeaseLog()
    during: dict[str, dict[str, int | None]] = {}

    async def go() -> None:
        async with HostPool(reqs, log, lambda _kind: provider) as hosts:
            where = {
                n: (h.labels["region"], h.labels["availability_zone"]) for n, h in hosts.items()
            }
            assert where == {"srv": ("us-east-1", "us-east-1a"),
                             "other-az": ("us-east-1", "us-east-1b"),
                             "eu": ("eu-west-1", "eu-west-1a")}  # fmt: skip
            assert {h.labels["image"] for h in hosts.values()} == {"debian-12"}
            found = {}
            for r in regions:
                for res in ec2[r].describe_instances(Filters=filters.owned(campaign, None))[
                    "Reservations"
                ]:
                    for inst in res["Instances"]:
                        found[inst["InstanceId"]] = inst
            eu = found[hosts["eu"].labels["instance_id"]]
            assert eu["ImageId"] == "ami-0deb12b00000001"  # arm64
            assert found[hosts["srv"].labels["instance_id"]]["ImageId"] == "ami-0deb12a00000002"
            # one VPC per region, distinct CIDRs; a subnet per zone used
            for r, cidr in zip(regions, ["10.77.0.0/16", "10.78.0.0/16"], strict=True):
                (vpc,) = ec2[r].describe_vpcs(Filters=filters.owned(campaign, None))["Vpcs"]
                assert vpc["CidrBlock"] == cidr
            subnets = ec2["us-east-1"].describe_subnets(Filters=filters.owned(campaign, None))
            assert sorted(s["AvailabilityZone"] for s in subnets["Subnets"]) == [
                "us-east-1a", "us-east-1b"
            ]  # fmt: skip
            # each region its own internet gateway and route table, every subnet associated
            tagged = filters.owned(campaign, None)
            for r in regions:
                (igw,) = ec2[r].describe_internet_gateways(Filters=tagged)["InternetGateways"]
                (rtb,) = ec2[r].describe_route_tables(Filters=tagged)["RouteTables"]
                mine = ec2[r].describe_subnets(Filters=tagged)["Subnets"]
                assert sorted(a["SubnetId"] for a in rtb["Associations"]) == sorted(
                    x["SubnetId"] for x in mine
                )
                assert any(x.get("GatewayId") == igw["InternetGatewayId"] for x in rtb["Routes"])
                assert igw["Attachments"][0]["VpcId"] == rtb["VpcId"]
            # across regions: the other region's VPC CIDR (its own: the group itself), and
            # each host's public address where it has one, which is then where hosts meet:
            # through the region's managed prefix list, one rule (issue 24 item 5)
            public = [i["PublicIpAddress"] for i in found.values() if i.get("PublicIpAddress")]
            for r, other in (("us-east-1", "10.78.0.0/16"), ("eu-west-1", "10.77.0.0/16")):
                (sg,) = ec2[r].describe_security_groups(Filters=filters.owned(campaign, None))[
                    "SecurityGroups"
                ]
                perms = sg["IpPermissions"]
                ranges = {x["CidrIp"] for p in perms for x in p.get("IpRanges", [])}
                assert other in ranges, (r, ranges)
                (plist,) = [x["PrefixListId"] for p in perms for x in p.get("PrefixListIds", [])]
                entries = ec2[r].get_managed_prefix_list_entries(PrefixListId=plist)["Entries"]
                assert {e["Cidr"] for e in entries} == {f"{ip}/32" for ip in public}, r
                assert any(p.get("UserIdGroupPairs") for p in perms)
            for r in regions:
                during[r] = teardown.remaining(ec2[r], campaign)

    asyncio.run(go())
    assert during["us-east-1"]["instances"] == 2 and during["eu-west-1"]["instances"] == 1
    for r in regions:
        assert during[r]["vpcs"] == during[r]["security-groups"] == during[r]["key-pairs"] == 1
        assert during[r]["internet-gateways"] == during[r]["route-tables"] == 1
        left = teardown.remaining(ec2[r], campaign)
        assert not any(left.values()), (r, left)
    assert all(o == ["released"] for o in log.outcomes.values()), log.outcomes
    state = Journal(root, campaign).read()
    assert state.regions == ["eu-west-1", "us-east-1"] and not state.live()
    sim = root / campaign / "sim"
    assert not sim.exists() or not any(sim.iterdir()), "a sim lab is still up"


def test_kill_9_across_regions_then_destroy_leaves_zero_in_both(
    fresh: MotoServer, tmp_path: Path
) -> None:
    """``cloud up`` SIGKILLed right after the eu-west-1 instance was launched (its id never
    journalled): destroy from the journal alone cleans both regions."""
    spec = tmp_path / "x.yaml"
    spec.write_text(
        "campaign: nf-xfault\nplacement: cross-region\nduration_minutes: 1\nfleets:\n"
        "  - {instance_type: t3.micro}\n  - {instance_type: t3.micro, region: eu-west-1}\n"
    )
    ec2 = {r: aws.client("ec2", r) for r in ("us-east-1", "eu-west-1")}

    def left() -> dict[str, int]:
        return {r: sum(v or 0 for v in teardown.remaining(c, "nf-xfault").values())
                for r, c in ec2.items()}  # fmt: skip

    env = {**os.environ, **KILL_POINTS, "NETFLEET_FAULT_AT": "after:instance@eu-west-1"}
    killed = _cli(["up", str(spec), "--state-dir", str(tmp_path), "--release"], env)
    assert killed.returncode == -9, killed.stderr[-2000:]
    per_region = {r: teardown.remaining(c, "nf-xfault") for r, c in ec2.items()}
    # the two regions' instances launch in parallel (the seam's acquire): us-east-1's may not
    # have come back yet when eu-west-1's kill point fires
    assert per_region["eu-west-1"]["instances"] == 1
    assert per_region["us-east-1"]["instances"] in (0, 1) and per_region["us-east-1"]["vpcs"] == 1
    eu = [r for r in Journal(tmp_path, "nf-xfault").read().live() if r.region == "eu-west-1"]
    assert [r.kind for r in eu if r.id is None] == ["instance"]  # found by its tags
    teardown.destroy(tmp_path, "nf-xfault", poll_s=0.05)
    assert left() == {"us-east-1": 0, "eu-west-1": 0}


def test_cross_az_gives_each_fleet_its_own_zone(fresh: MotoServer, tmp_path: Path) -> None:
    """A zone given is kept; the other fleets get the least used zone offering their type
    (DescribeInstanceTypeOfferings); hosts of one fleet (one name) share theirs."""
    cs = CloudSpec(
        campaign="nf-az",
        placement="cross-az",
        fleets=[
            {"instance_type": "c5n.large", "name": "a", "availability_zone": "us-east-1b"},
            {"instance_type": "c5n.large", "name": "b"},
            {"instance_type": "c5n.large", "name": "b"},  # as CloudSpec.of_hosts writes count 2
            {"instance_type": "m5.large", "name": "c"},
        ],
    )
    sites = Provisioner(cs, tmp_path).place()
    assert sites[0].az == "us-east-1b" and sites[1] == sites[2]
    assert len({sites[0].az, sites[1].az, sites[3].az}) == 3
    assert {s.region for s in sites} == {"us-east-1"}
    assert not (tmp_path / "nf-az").exists()  # placing creates nothing


def test_cost_is_each_hosts_own_region_price() -> None:
    table = prices.load(None)
    cs = CloudSpec(
        campaign="nf-x",
        placement="cross-region",
        fleets=[
            {"instance_type": "c5n.large", "count": 2},
            {"instance_type": "c5n.large", "region": "eu-west-1"},
        ],
    )
    from netfleet.cloud.aws.plan import billing
    from netfleet.cloud.aws.plan.costs import cost_line, plan

    priced = plan(cs, table, 52)  # + 8 min overhead = 1 h
    us, eu = table.ec2_hourly("us-east-1", "c5n.large"), table.ec2_hourly("eu-west-1", "c5n.large")
    assert us and eu and us != eu
    extra = billing.total(priced.lines)  # a public IPv4 and a root volume per instance
    assert extra is not None and 0 < extra < 0.1
    assert priced.estimate.usd == pytest.approx(2 * us + eu + extra, abs=1e-4)
    assert priced.table.columns[:2] == ["instance_type", "region"]
    assert "3 instances in us-east-1 (2), eu-west-1 (1)" in priced.table.notes[0]
    held = [("us-east-1", "c5n.large", 3600.0), ("eu-west-1", "c5n.large", 3600.0)]
    line = cost_line(table, "on-demand", held, priced.estimate.usd)
    assert f"= ${us + eu:.2f} USD" in line and "in eu-west-1, us-east-1" in line


@pytest.mark.parametrize(
    ("change", "field", "expect"),
    [
        (lambda c: c.update(placement="same-az"), "cloud.fleets.1.region",
         "placement same-az keeps every fleet in us-east-1"),
        (lambda c: c.update(placement="cluster"), "cloud.fleets.1.region",
         "placement cluster keeps every fleet in us-east-1"),
        (lambda c: c["fleets"][1].pop("region"), "cloud.placement",
         "cross-region needs fleets in at least two regions"),
        (lambda c: c["fleets"][0].update(availability_zone="eu-west-1a"),
         "cloud.fleets.0.availability_zone", "is not in its region us-east-1"),
        (lambda c: c.update(ami="ami-12345678", image="debian-12"), "cloud.image", "keep one"),
        (lambda c: c.update(ami="ami-12345678"), "cloud.ami", "exists in one region only"),
        (lambda c: c.update(subnet_id="subnet-1234"), "cloud.subnet_id", "one subnet"),
        (lambda c: c.update(placement="cross-az", availability_zone="us-east-1a",
                            fleets=[c["fleets"][0], {**c["fleets"][0], "name": "b"}]),
         "cloud.availability_zone", "give availability_zone per fleet"),
        (lambda c: c.update(placement="cross-az", fleets=c["fleets"][:1]), "cloud.placement",
         "cross-az needs at least two fleets"),
        (lambda c: c.update(placement="same-az", fleets=[
            {**c["fleets"][0], "availability_zone": "us-east-1b"},
            {**c["fleets"][0], "name": "b"}]),
         "cloud.fleets.0.availability_zone", "puts every fleet in one zone"),
    ],
)  # fmt: skip
def test_impossible_placements_are_refused_with_file_line_field(
    tmp_path: Path, change: Any, field: str, expect: str
) -> None:
    import yaml

    from netfleet.errors import SpecError
    from netfleet.spec import load_spec

    doc = yaml.safe_load(
        "campaign: nf-bad\nresults: /tmp/unused\ncloud:\n  region: us-east-1\n  backing: sim\n"
        "  placement: cross-region\n  fleets:\n"
        "    - {name: srv, instance_type: c5n.large, role: server}\n"
        "    - {name: eu, instance_type: c5n.large, role: client, region: eu-west-1}\n"
        "tests: [{name: t, engine: iperf3, client: eu, server: srv}]\n"
    )
    change(doc["cloud"])
    if not any(f["name"] == "eu" for f in doc["cloud"]["fleets"]):
        doc["tests"][0]["client"] = "srv"
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(SpecError) as err:
        load_spec(path)
    found = [(p, line, what) for p, line, what in err.value.problems if p == field]
    assert found, str(err.value)
    assert found[0][1] is not None and expect in found[0][2], str(err.value)


def test_cloud_yaml_placement_error_names_the_field(tmp_path: Path) -> None:
    from netfleet.api import load_cloud_spec as _load
    from netfleet.errors import SpecError

    path = tmp_path / "c.cloud.yaml"
    path.write_text(
        "campaign: nf-bad\nplacement: same-az\nfleets:\n  - {instance_type: t3.micro}\n"
        "  - {instance_type: t3.micro, region: eu-west-1}\n"
    )
    with pytest.raises(SpecError) as err:
        _load(path)
    assert f"{path}:5: fleets.1.region: " in str(err.value)
