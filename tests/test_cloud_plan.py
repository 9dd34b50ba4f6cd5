"""The plan of a cloud study as a first real account would see it (issue 35, "would mislead"
and the quotas of "would fail"): moto's server on loopback, AWS's answers injected where moto
has none (Service Quotas)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from netfleet import aws
from netfleet.cloud.aws.acquire.provision import Provisioner
from netfleet.cloud.aws.campaign import CloudSpec
from netfleet.cloud.aws.plan import catalogue, prices, quotas
from netfleet.cloud.aws.release import teardown
from netfleet.errors import EnvironmentProblem
from tests import awshooks, motokit
from tests.awshooks import answer, error

ROOT = Path(__file__).resolve().parents[1]
STUDY = ROOT / "examples" / "aws-cheatsheet-seed002.yaml"
SEED002 = [
    t
    for t in (ROOT / "bench" / "seed002_types.txt").read_text().splitlines()
    if t and not t.startswith("#")
]
#: seed 002's types moto's catalogue lacks (FIELD-NOTES: g3, p2, p3)
MOTO_LACKS = sorted(t for t in SEED002 if t.split(".")[0] in ("g3", "p2", "p3"))

moto = motokit.moto
fresh = motokit.fresh


def test_one_unknown_type_does_not_blank_the_catalogue(fresh: motokit.MotoServer) -> None:
    """DescribeInstanceTypes refuses the whole call for one type it does not know: before, the
    plan then had no figures for any type (every one planned "long")."""
    ec2 = aws.client("ec2", "us-east-1")
    found = catalogue.describe(ec2, ["c5.large", "g3.4xlarge", "m5.large", "typo.large"])
    assert sorted(found) == ["c5.large", "m5.large"]
    assert found["c5.large"].vcpus == 2


def test_the_seed002_study_plans_every_type_the_catalogue_knows(
    fresh: motokit.MotoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The 77-type study as written (examples/aws-cheatsheet-seed002.yaml, a sequential port):
    a catalogue bound for every type moto's catalogue knows, the 9 it lacks named; one type
    without a price leaves a priced subtotal (not "unknown" for all); the receiver dominating
    the bill gives the `concurrency: N` hint."""
    from netfleet.api import plan

    assert len(SEED002) == 77
    table = prices.load(None)  # a price table without x1e.xlarge, as a refreshed copy
    table.ec2["us-east-1"].pop("x1e.xlarge")
    prices.save(table, tmp_path)
    monkeypatch.setenv("NETFLEET_CLOUD_DIR", str(tmp_path))

    p = plan(STUDY)
    assert p.cost is not None
    notes = "\n".join(p.cost.notes)
    assert (
        f"not in the catalogue (DescribeInstanceTypes in us-east-1): {', '.join(MOTO_LACKS)}"
        in notes
    )
    no_figures = {
        n.split()[1] for n in p.cost.notes if n.startswith("long:") and "no catalogue" in n
    }
    assert no_figures == set(MOTO_LACKS)
    bounded = [n for n in p.cost.notes if n.startswith("stop bounds:")]
    assert bounded and "c5.18xlarge" in bounded[0] and "m5.24xlarge" in bounded[0]
    line = next(n for n in p.cost.notes if n.startswith("estimated cost:"))
    assert "priced subtotal $" in line and "without x1e.xlarge" in line, line
    hint = next(n for n in p.cost.notes if n.startswith("hint:"))
    assert "c5n.18xlarge" in hint and "`concurrency: " in hint, hint


def test_x_family_quota_is_read_and_named(
    fresh: motokit.MotoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """x1/x1e count against L-7295265B (Running On-Demand X instances): the check reads it and
    a VcpuLimitExceeded names it — not the standard quota L-1216C47A."""
    assert quotas.quota_of("x1e.2xlarge", "on-demand") == (
        "L-7295265B",
        "Running On-Demand X instances",
    )
    assert quotas.quota_of("x1.16xlarge", "on-demand")[0] == "L-7295265B"  # type: ignore[index]
    asked: list[str] = []

    def quota(params: dict[str, Any]) -> Any:
        asked.append(params["QuotaCode"])
        return answer({"Quota": {"Value": 32.0}})

    spec = {
        "campaign": "nf-xquota",
        "region": "us-east-1",
        "fleets": [{"instance_type": "x1.16xlarge", "count": 1, "role": "server"}],
    }
    with awshooks.hooked(monkeypatch, {"service-quotas.GetServiceQuota": quota}):
        found = quotas.check_campaign(CloudSpec(**spec))
    assert asked == ["L-7295265B"]
    assert found.over and "64 vCPUs of L-7295265B" in found.over[0]

    limit = error("VcpuLimitExceeded", "You have requested more vCPU capacity than allowed")
    prov = None
    with (
        awshooks.hooked(monkeypatch, {"ec2.RunInstances": lambda p: limit}),
        pytest.raises(EnvironmentProblem, match="vCPU quota") as err,
    ):
        prov = Provisioner(CloudSpec(**spec), tmp_path, poll_s=0.01)
        prov.acquire()
    assert prov is not None
    assert "L-7295265B" in (err.value.hint or "") and "L-1216C47A" not in (err.value.hint or "")
    prov.release()
    assert not any(teardown.remaining(aws.client("ec2", "us-east-1"), "nf-xquota").values())


def test_fargate_vcpu_quota_is_checked(
    moto: motokit.MotoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seed 000's ten tiers need 15.5 vCPUs of L-3032A538: above the quota a refusal naming it;
    a quota that cannot be read is a note."""
    answers = [
        answer({"Quota": {"Value": 6.0}}),
        error("AccessDeniedException", status=400),
    ]
    with awshooks.hooked(
        monkeypatch, {"service-quotas.GetServiceQuota": lambda p: answers.pop(0)}
    ) as calls:
        found = quotas.check_fargate("eu-west-1", 15.5)
        denied = quotas.check_fargate("eu-west-1", 15.5)
    assert calls.ops("GetServiceQuota")[0] == {"ServiceCode": "fargate", "QuotaCode": "L-3032A538"}
    assert found.over == [
        "eu-west-1: the Fargate tasks need 15.5 vCPUs of L-3032A538 (Fargate On-Demand vCPU "
        "resource count), the quota is 6"
    ]
    assert not denied.over and "L-3032A538 in eu-west-1 not checked" in denied.notes[0]


#: run inside a fresh interpreter: every socket connect or name lookup is recorded (to the
#: file in argv[1]) and, beyond loopback, refused before it happens; then the CLI runs argv[2:]
AUDITED = """
import ipaddress, sys
log = open(sys.argv[1], "a")
def loopback(host):
    if host in ("localhost", None):
        return True
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return False
def hook(event, args):
    if event == "socket.connect":
        addr = args[1]
        host = addr[0] if isinstance(addr, tuple) else addr
    elif event == "socket.getaddrinfo":
        host = args[0]
    else:
        return
    if isinstance(host, bytes):
        host = host.decode()
    log.write(f"{event} {host}\\n"); log.flush()
    if not loopback(host):
        raise OSError(f"audited: no connection to {host}")
sys.addaudithook(hook)
sys.argv = ["netfleet", *sys.argv[2:]]
from netfleet.cli.main import main
main()
"""


@pytest.mark.parametrize("endpoint", [None, "https://ec2.example.com"])
def test_plan_of_a_sim_spec_opens_no_connection_beyond_loopback(
    tmp_path: Path, endpoint: str | None
) -> None:
    """`netfleet plan` (and `run --dry-run`) of a `backing: sim` spec with no emulator set —
    before: the credential chain asked the instance metadata service (169.254.169.254), then
    ec2.us-east-1.amazonaws.com. Now the run's rule: refused (exit 2) before any client exists."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "NETFLEET_AWS"))}
    env["NETFLEET_CLOUD_DIR"] = str(tmp_path / "state")
    if endpoint:
        env["AWS_ENDPOINT_URL"] = endpoint
        env["AWS_ACCESS_KEY_ID"] = env["AWS_SECRET_ACCESS_KEY"] = "testing"
    spec = ROOT / "examples" / "aws-cheatsheet.yaml"
    for argv in (["plan", str(spec)], ["run", "--dry-run", str(spec)]):
        log = tmp_path / "connections.log"
        log.unlink(missing_ok=True)
        res = subprocess.run(
            [sys.executable, "-c", AUDITED, str(log), *argv],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        seen = log.read_text().split("\n") if log.exists() else []
        assert [s for s in seen if s and not s.endswith(("127.0.0.1", "::1", "localhost"))] == []
        assert res.returncode == 2, res.stdout[-2000:] + res.stderr[-2000:]
        assert "backing: sim" in res.stderr and "not loopback" in res.stderr, res.stderr


@pytest.mark.slow  # the whole plan of `run` (catalogue, quotas, prices) against moto
def test_the_run_confirmation_names_the_switch_the_run_sets(
    fresh: motokit.MotoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`netfleet run` sets the dead-man switch from its plan (its end plus a margin), but the
    confirmation on a real endpoint printed `expires_after_minutes` as the switch. The real
    path's decision is injected (moto answers STS); no --yes: nothing is created."""
    import yaml

    from netfleet.api import run
    from netfleet.cloud.aws.plan import safety
    from netfleet.errors import InputError

    doc = yaml.safe_load((ROOT / "examples" / "aws-cheatsheet.yaml").read_text())
    doc["cloud"].update(backing="ssh", controller_cidr="1.2.3.4/32", expires_after_minutes=600)
    doc["results"] = str(tmp_path / "results")
    spec = tmp_path / "c.yaml"
    spec.write_text(yaml.safe_dump(doc, sort_keys=False))
    real = safety.Target(real=True, endpoints={"ec2": None})
    monkeypatch.setattr(safety, "target", lambda *_: real)
    monkeypatch.setenv("NETFLEET_CLOUD_DIR", str(tmp_path / "state"))
    said: list[str] = []
    shown: list[Any] = []
    with pytest.raises(InputError, match="--yes"):
        run(spec, yes=False, ask=None, say=said.append, show=shown.append)
    planned = next(n for n in shown[0].notes if n.startswith("dead-man switch:"))
    minutes = float(planned.split()[2])
    (line,) = [s for s in said if "powers itself off" in s]
    assert f"{minutes:.0f} min after launch (the plan's end plus a margin)" in line, line
    assert "600" not in line
    ec2 = aws.client("ec2", "us-east-1")
    assert not ec2.describe_instances()["Reservations"]


@pytest.mark.parametrize(
    ("placement", "path", "zones", "regions", "kind"),
    [
        ("none", "auto", (None, None), ("us-east-1", "us-east-1"), "cross-az"),
        ("none", "auto", ("us-east-1a", "us-east-1b"), ("us-east-1", "us-east-1"), "cross-az"),
        ("none", "auto", ("us-east-1a", "us-east-1a"), ("us-east-1", "us-east-1"), None),
        ("same-az", "auto", (None, None), ("us-east-1", "us-east-1"), None),
        ("same-az", "public", (None, None), ("us-east-1", "us-east-1"), "public-in-region"),
        # across regions `auto` meets at public addresses: a same-region pair pays that too
        ("cross-region", "auto", (None, None), ("us-east-1", "us-east-1"), "public-in-region"),
    ],
)
def test_same_region_transfer_is_priced_where_the_bill_charges_it(
    placement: str,
    path: str,
    zones: tuple[str | None, str | None],
    regions: tuple[str, str],
    kind: str | None,
) -> None:
    """Before, a zone-spread fleet (placement none/cross-region: zones chosen at launch) and
    same-region public-path traffic in a cross-region campaign were planned as free."""
    from netfleet.cloud.aws.plan import costs

    fleets: list[dict[str, Any]] = [
        {"name": "c", "instance_type": "c5n.large", "role": "client", "region": regions[0]},
        {"name": "s", "instance_type": "c5n.large", "role": "server", "region": regions[1]},
    ]
    for f, z in zip(fleets, zones, strict=True):
        if z:
            f["availability_zone"] = z
    if placement == "cross-region":
        fleets.append({"name": "eu", "instance_type": "c5n.large", "region": "eu-west-1"})
    cs = CloudSpec(campaign="x", placement=placement, path=path, fleets=fleets)
    table = prices.load(None)
    table.ec2.setdefault("eu-west-1", {})["c5n.large"] = 0.122
    priced = costs.plan(cs, table, 60, gbps={"c5n.large": 25.0})
    same = [x for x in priced.lines if x.item.startswith("transfer") and "→" not in x.item]
    if kind is None:
        assert not same
        return
    (line,) = [x for x in same if x.item.startswith(f"transfer {kind} us-east-1")]
    # 25 Gbit/s × 60 min = 11,250 GB at $0.01/GB on each side
    assert line.quantity == pytest.approx(11250.0) and line.usd == pytest.approx(225.0)


def test_cloudwatch_is_read_at_the_period_the_instance_publishes(
    fresh: motokit.MotoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """netfleet's instances have basic monitoring: CloudWatch sums their traffic per 5 minutes.
    Before, the cross-check asked 60 s periods over the run ±60 s — on AWS a 5-minute sum holding
    other runs' traffic, judged against one run. Now: 300 s over whole buckets, and a window
    another run of the instance shares is "cannot check"."""
    import datetime as dt
    from types import SimpleNamespace

    from netfleet.cloud.aws.collect.checks import session_checks

    ec2 = aws.client("ec2", "us-east-1")
    ami = ec2.describe_images()["Images"][0]["ImageId"]
    iid = ec2.run_instances(ImageId=ami, InstanceType="t3.micro", MinCount=1, MaxCount=1)[
        "Instances"
    ][0]["InstanceId"]

    def envelope(run_id: str, start: str, end: str) -> Any:
        host = SimpleNamespace(name="c", labels={"instance_id": iid, "region": "us-east-1"})
        return SimpleNamespace(
            engine=SimpleNamespace(name="iperf3"), status="ok", direction="out", run_id=run_id,
            client=host, server=SimpleNamespace(name="s", labels={}),
            started_at=start, ended_at=end,
            result={"end": {"sum_sent": {"bytes": 1e9}, "sum_received": {"bytes": 1e9}}},
        )  # fmt: skip

    point = {"Datapoints": [{"Sum": 1.04e9, "Timestamp": dt.datetime(2026, 11, 29, 7, 0)}]}
    handlers = {"cloudwatch.GetMetricStatistics": lambda p: answer(point)}
    with awshooks.hooked(monkeypatch, handlers) as calls:
        alone = session_checks([envelope("r1", "2026-11-29T07:01:10Z", "2026-11-29T07:02:10Z")],
                               "us-east-1")  # fmt: skip
        (asked,) = calls.ops("GetMetricStatistics")
        close = session_checks(
            [
                envelope("r1", "2026-11-29T07:01:10Z", "2026-11-29T07:02:10Z"),
                envelope("r2", "2026-11-29T07:04:00Z", "2026-11-29T07:05:00Z"),
            ],
            "us-east-1",
        )
    assert asked["Period"] == 300
    assert asked["StartTime"] == dt.datetime(2026, 11, 29, 7, 0, tzinfo=dt.UTC)
    assert asked["EndTime"] == dt.datetime(2026, 11, 29, 7, 5, tzinfo=dt.UTC)
    assert alone.rows[0][-1].startswith("agrees")
    assert [r[-1] for r in close.rows] == [
        "cannot check: CloudWatch's 5-minute sums of this window also hold r2",
        "cannot check: CloudWatch's 5-minute sums of this window also hold r1",
    ]
    assert len(calls.ops("GetMetricStatistics")) == 1  # the close ones were not judged


def test_max_cost_refuses_an_unpriced_plan_naming_the_priced_part() -> None:
    """One type without a price: the estimate is unknown, --max-cost refuses until a price is
    given (also with --yes), and says what the rest costs."""
    from netfleet.cloud.aws.plan import costs
    from netfleet.errors import InputError

    est = prices.Estimate(3, None, ["x1e.xlarge"], 1.0, subtotal=12.5)
    with pytest.raises(InputError, match=r"no price for x1e\.xlarge.*the priced part: \$12\.50"):
        costs.guard(est, max_cost=1000.0, max_instances=10, yes=True)
    assert "f1.16xlarge" in prices.load(None).ec2["us-east-1"]  # with its source and date
    assert prices.load(None).ec2_source_of("us-east-1", "f1.16xlarge").as_of.isoformat() == (
        "2026-11-29"
    )
