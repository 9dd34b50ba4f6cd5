"""Before the first billable resource exists: may this identity do what the campaign will do?

``docs/iam-policy.json`` is the least-privilege policy netfleet needs. :func:`require` proves the
part that can be proved without creating anything, in every region of the campaign, and refuses
the campaign (exit 4) naming every denied action — instead of a denial after instances launched:

* EC2 writes through ``DryRun=True`` (AWS answers ``DryRunOperation`` when allowed,
  ``UnauthorizedOperation`` when not): the network's creates, ImportKeyPair, RunInstances,
  CreateTags, TerminateInstances and the deletes of teardown. A dry run AWS cannot judge
  without a real resource (a made-up id answers ``…NotFound``/``…Malformed``) counts as
  *unchecked*, not as allowed;
* reads the plan needs: DescribeInstanceTypes and DescribeSpotPriceHistory (a spot campaign
  priced at on-demand because the history was denied would be a silent lie), the SSM image
  parameter (AL2023);
* Fargate: ECS has no dry run; ``ecs:ListClusters`` is read, the writes (RunTask,
  RegisterTaskDefinition…) are named as unchecked — the IAM policy simulator checks them on a
  real account (docs/cloud.md, "IAM").

The results root (S3) is probed by the runner itself (``RawStore.check_access``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from netfleet import aws
from netfleet.errors import EnvironmentProblem

#: error codes that mean "the identity may not do this"
DENIED = {
    "UnauthorizedOperation",
    "AccessDenied",
    "AccessDeniedException",
    "UnauthorizedAccess",
    "AuthFailure",
}
#: what a dry run answers when the call would have been allowed
ALLOWED = "DryRunOperation"
#: made-up ids for the dry runs (AWS checks the permission before the resource exists)
FAKE = {
    "vpc": "vpc-0f00000000000000f",
    "subnet": "subnet-0f00000000000000f",
    "sg": "sg-0f00000000000000f",
    "igw": "igw-0f00000000000000f",
    "rtb": "rtb-0f00000000000000f",
    "instance": "i-0f00000000000000f",
    "ami": "ami-0f00000000000000f",
}


@dataclass(frozen=True)
class Check:
    action: str  #: IAM action, e.g. ec2:RunInstances
    region: str
    outcome: str  #: allowed | denied | unchecked
    detail: str = ""


def _code(exc: Exception) -> str:
    response = getattr(exc, "response", None) or {}
    return str(response.get("Error", {}).get("Code", ""))


def _try(action: str, region: str, call: Callable[[], Any], *, dry_run: bool) -> Check:
    from botocore.exceptions import ClientError

    try:
        call()
    except ClientError as exc:
        code = _code(exc)
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if dry_run and code == ALLOWED:
            return Check(action, region, "allowed")
        if code in DENIED or status == 403:  # a 403 whose body botocore could not parse too
            return Check(action, region, "denied", code)
        return Check(action, region, "unchecked", f"{code}: {exc}"[:200])
    if dry_run:  # a dry run that did something: never expected, say so
        return Check(action, region, "unchecked", "the dry run was not refused as a dry run")
    return Check(action, region, "allowed")


def ec2_dry_runs(ec2: Any, instance_types: list[str]) -> list[tuple[str, Callable[[], Any]]]:
    """(action, call) for every EC2 write a campaign makes, each with ``DryRun=True``."""
    from netfleet.cloud.bootstrap.hostkeys import generate

    f = FAKE
    probe_key = generate("permission-probe").public_openssh.encode()  # a fresh key, unused
    itype = instance_types[0] if instance_types else "t3.micro"
    tags = [{"Key": "netfleet:campaign", "Value": "permission-probe"}]
    return [
        ("ec2:CreateVpc", lambda: ec2.create_vpc(CidrBlock="10.99.0.0/16", DryRun=True)),
        (
            "ec2:CreateSubnet",
            lambda: ec2.create_subnet(VpcId=f["vpc"], CidrBlock="10.99.0.0/24", DryRun=True),
        ),
        ("ec2:CreateInternetGateway", lambda: ec2.create_internet_gateway(DryRun=True)),
        ("ec2:CreateRouteTable", lambda: ec2.create_route_table(VpcId=f["vpc"], DryRun=True)),
        (
            "ec2:CreateSecurityGroup",
            lambda: ec2.create_security_group(
                GroupName="netfleet-probe", Description="probe", VpcId=f["vpc"], DryRun=True
            ),
        ),
        (
            "ec2:ImportKeyPair",
            lambda: ec2.import_key_pair(
                KeyName="netfleet-probe", PublicKeyMaterial=probe_key, DryRun=True
            ),
        ),
        (
            "ec2:RunInstances",
            lambda: ec2.run_instances(
                ImageId=f["ami"], InstanceType=itype, MinCount=1, MaxCount=1, DryRun=True
            ),
        ),
        ("ec2:CreateTags", lambda: ec2.create_tags(Resources=[f["vpc"]], Tags=tags, DryRun=True)),
        (
            "ec2:TerminateInstances",
            lambda: ec2.terminate_instances(InstanceIds=[f["instance"]], DryRun=True),
        ),
        (
            "ec2:DeleteSecurityGroup",
            lambda: ec2.delete_security_group(GroupId=f["sg"], DryRun=True),
        ),
        ("ec2:DeleteSubnet", lambda: ec2.delete_subnet(SubnetId=f["subnet"], DryRun=True)),
        (
            "ec2:DeleteInternetGateway",
            lambda: ec2.delete_internet_gateway(InternetGatewayId=f["igw"], DryRun=True),
        ),
        (
            "ec2:DeleteRouteTable",
            lambda: ec2.delete_route_table(RouteTableId=f["rtb"], DryRun=True),
        ),
        ("ec2:DeleteVpc", lambda: ec2.delete_vpc(VpcId=f["vpc"], DryRun=True)),
    ]


def reads(ec2: Any, region: str, cs: Any) -> list[tuple[str, Callable[[], Any]]]:
    """(action, call) for the reads the plan relies on (each answered or denied)."""
    out: list[tuple[str, Callable[[], Any]]] = [
        ("ec2:DescribeInstanceTypes", lambda: ec2.describe_instance_types(MaxResults=5)),
        ("ec2:DescribeInstances", lambda: ec2.describe_instances(MaxResults=5)),
    ]
    if cs.market == "spot":
        out.append(
            (
                "ec2:DescribeSpotPriceHistory",
                lambda: ec2.describe_spot_price_history(MaxResults=5),
            )
        )
    if cs.image_family == "al2023" and not cs.ami:
        from netfleet.cloud.aws.acquire.images import AL2023_PARAMETER

        ssm = aws.client("ssm", region)
        name = AL2023_PARAMETER["x86_64"]
        out.append(("ssm:GetParameter", lambda: ssm.get_parameter(Name=name)))
    return out


def check(cs: Any, *, fargate: bool = False) -> list[Check]:
    """Every check of the campaign ``cs`` (a :class:`~netfleet.cloud.aws.campaign.CloudSpec`)."""
    found: list[Check] = []
    types = sorted({f.instance_type for f in cs.fleets})
    for region in cs.regions:
        ec2 = aws.client("ec2", region)
        for action, call in reads(ec2, region, cs):
            found.append(_try(action, region, call, dry_run=False))
        for action, call in ec2_dry_runs(ec2, types):
            found.append(_try(action, region, call, dry_run=True))
    if fargate:
        ecs = aws.client("ecs", cs.region)
        found.append(_try("ecs:ListClusters", cs.region, ecs.list_clusters, dry_run=False))
        for action in ("ecs:RegisterTaskDefinition", "ecs:RunTask", "ecs:StopTask"):
            found.append(Check(action, cs.region, "unchecked", "ECS has no dry run"))
    return found


def require(cs: Any, *, fargate: bool = False) -> list[Check]:
    """:func:`check`, then refuse the campaign if any action is denied."""
    found = check(cs, fargate=fargate)
    denied = [c for c in found if c.outcome == "denied"]
    if denied:
        lines = "".join(f"\n  {c.action} in {c.region} ({c.detail})" for c in denied)
        raise EnvironmentProblem(
            f"campaign {cs.campaign!r}: these credentials may not do what the campaign needs; "
            f"nothing was created:{lines}",
            hint="allow them (docs/iam-policy.json is the policy netfleet needs), or run with "
            "credentials that have it",
        )
    return found
