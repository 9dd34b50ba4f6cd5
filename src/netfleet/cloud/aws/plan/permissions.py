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
* Fargate: ECS has no dry run; ``ecs:ListClusters`` is read;
* what a dry run cannot judge (a made-up id answers ``…NotFound``/``…Malformed`` on AWS before
  the permission is decided; ECS's writes) is asked of the IAM policy simulator
  (``iam:SimulatePrincipalPolicy``) as the caller (``sts:GetCallerIdentity``'s ARN), with the
  campaign's tag as request and resource tag: its ``allowed``/``implicitDeny``/``explicitDeny``
  decides; a simulator that cannot answer leaves them unchecked (never allowed);
* service-linked roles (:func:`service_linked_roles`): a spot campaign needs
  ``AWSServiceRoleForEC2Spot``, Fargate tiers ``AWSServiceRoleForECS``; a missing one the caller
  may not create is refused with the one-line fix
  (``aws iam create-service-linked-role --aws-service-name spot.amazonaws.com``).

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


#: the service-linked roles a campaign's first use creates in an account: (role, service)
SERVICE_LINKED = {
    "spot": ("AWSServiceRoleForEC2Spot", "spot.amazonaws.com"),
    "ecs": ("AWSServiceRoleForECS", "ecs.amazonaws.com"),
}
#: simulator decisions that mean allowed
SIMULATED_ALLOWED = "allowed"
#: what a simulator (or an emulator without one) may raise besides ClientError
_UNANSWERED = (ValueError, KeyError)


def caller_arn(sts: Any) -> str:
    """The policy source the IAM policy simulator needs: the caller's user or role ARN (an
    assumed role's session ARN mapped to its role; a role with a path is not found then, and
    the simulation counts as unanswered)."""
    arn = str(sts.get_caller_identity()["Arn"])
    if ":assumed-role/" in arn:
        head, _, rest = arn.partition(":assumed-role/")
        return head.replace(":sts:", ":iam:") + ":role/" + rest.split("/")[0]
    return arn


def simulate(
    iam: Any, arn: str, actions: list[str], context: dict[str, str], resource: str = "*"
) -> dict[str, str]:
    """action → the IAM policy simulator's decision (``allowed``, ``implicitDeny``,
    ``explicitDeny``) for ``arn`` with the string ``context`` keys (e.g. the campaign's tag as
    ``aws:RequestTag/netfleet:campaign``). Raises ClientError when the simulator cannot answer."""
    entries = [
        {"ContextKeyName": k, "ContextKeyValues": [v], "ContextKeyType": "string"}
        for k, v in context.items()
    ]
    resp = iam.simulate_principal_policy(
        PolicySourceArn=arn, ActionNames=actions, ResourceArns=[resource], ContextEntries=entries
    )
    return {str(r["EvalActionName"]): str(r["EvalDecision"]) for r in resp["EvaluationResults"]}


def _first_line(exc: Exception) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0][:120]


def _quick_client(service: str, region: str) -> Any:
    from botocore.config import Config

    once = Config(connect_timeout=5, read_timeout=15, retries={"total_max_attempts": 1})
    return aws.client(service, region, config=once)


def by_simulator(cs: Any, unchecked: list[Check], *, who: str | None) -> list[Check]:
    """The dry runs AWS could not judge (made-up ids) asked of the IAM policy simulator
    instead, as the caller ``who`` with the campaign's tag in the request and on the
    resource; a simulator that cannot answer leaves them unchecked, saying why."""
    from botocore.exceptions import BotoCoreError, ClientError
    from botocore.parsers import ResponseParserError

    if not unchecked:
        return []
    tag = {
        "aws:RequestTag/netfleet:campaign": cs.campaign,
        "aws:ResourceTag/netfleet:campaign": cs.campaign,
    }
    try:
        if who is None:
            raise ValueError("the caller's ARN is unknown (sts:GetCallerIdentity)")
        found = simulate(_quick_client("iam", cs.region), who, [c.action for c in unchecked], tag)
    except (BotoCoreError, ClientError, ResponseParserError, *_UNANSWERED) as exc:
        why = f"the IAM policy simulator did not answer ({_first_line(exc)})"
        return [Check(c.action, c.region, "unchecked", f"{c.detail}; {why}") for c in unchecked]
    out = []
    for c in unchecked:
        decision = found.get(c.action)
        if decision is None:
            out.append(c)
        else:
            allowed = decision == SIMULATED_ALLOWED
            outcome = "allowed" if allowed else "denied"
            out.append(Check(c.action, c.region, outcome, f"IAM policy simulator: {decision}"))
    return out


def service_linked_roles(cs: Any, *, fargate: bool, who: str | None) -> list[Check]:
    """The first spot launch (``AWSServiceRoleForEC2Spot``) and the first ECS use
    (``AWSServiceRoleForECS``) in an account create a service-linked role: without
    ``iam:CreateServiceLinkedRole`` AWS answers
    ``AuthFailure.ServiceLinkedRoleCreationNotPermitted`` — after the VPC exists. A role
    already there: allowed; missing: the simulator is asked whether the caller may create it
    (denied names the one-line fix); unanswered: unchecked."""
    from botocore.exceptions import BotoCoreError, ClientError
    from botocore.parsers import ResponseParserError

    wanted = (["spot"] if cs.market == "spot" else []) + (["ecs"] if fargate else [])
    out = []
    for key in wanted:
        role, service = SERVICE_LINKED[key]
        action = f"iam:CreateServiceLinkedRole ({role})"
        fix = (
            f"have an administrator run once: aws iam create-service-linked-role "
            f"--aws-service-name {service} — or allow iam:CreateServiceLinkedRole with "
            f"iam:AWSServiceName {service} (docs/iam-policy.json)"
        )
        try:
            _quick_client("iam", cs.region).get_role(RoleName=role)
            out.append(Check(action, "global", "allowed", f"{role} exists"))
            continue
        except ClientError as exc:
            if _code(exc) != "NoSuchEntity":
                out.append(
                    Check(action, "global", "unchecked", f"iam:GetRole {role}: {_code(exc)}")
                )
                continue
        except BotoCoreError as exc:
            out.append(Check(action, "global", "unchecked", f"iam:GetRole {role}: {exc}"))
            continue
        try:
            if who is None:
                raise ValueError("the caller's ARN is unknown")
            decision = simulate(
                _quick_client("iam", cs.region),
                who,
                ["iam:CreateServiceLinkedRole"],
                {"iam:AWSServiceName": service},
                f"arn:aws:iam::*:role/aws-service-role/{service}/{role}",
            ).get("iam:CreateServiceLinkedRole")
        except (BotoCoreError, ClientError, ResponseParserError, *_UNANSWERED) as exc:
            why = f"{role} does not exist yet and the IAM policy simulator did not answer "
            out.append(Check(action, "global", "unchecked", f"{why}({_first_line(exc)}); {fix}"))
            continue
        if decision == SIMULATED_ALLOWED:
            out.append(Check(action, "global", "allowed", f"{role} will be created at first use"))
        else:
            out.append(
                Check(action, "global", "denied", f"{role} does not exist and {decision}: {fix}")
            )
    return out


def check(cs: Any, *, fargate: bool = False) -> list[Check]:
    """Every check of the campaign ``cs`` (a :class:`~netfleet.cloud.aws.campaign.CloudSpec`)."""
    from botocore.exceptions import BotoCoreError, ClientError

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
    unchecked = [c for c in found if c.outcome == "unchecked"]
    wanted = [c for c in unchecked if c.action.startswith("ecs:") or "NotFound" in c.detail
              or "Malformed" in c.detail]  # fmt: skip
    who: str | None = None
    if wanted or cs.market == "spot" or fargate:
        try:
            who = caller_arn(_quick_client("sts", cs.region))
        except (BotoCoreError, ClientError, KeyError):
            who = None
    simulated = by_simulator(cs, wanted, who=who)
    found = [c for c in found if c not in wanted] + simulated
    return found + service_linked_roles(cs, fargate=fargate, who=who)


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
