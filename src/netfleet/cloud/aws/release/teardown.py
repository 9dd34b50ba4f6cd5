"""Teardown in order, from the journal and the tags; then count what remains through the API.

Order: instances asked to terminate (what bills most goes first, and needs only EC2
permissions) → Fargate tasks stopped → wait STOPPED → wait terminated → task definitions
deregistered, execution role and log group deleted → ECS cluster deleted
(:mod:`.fargate_teardown`; denied ECS, IAM or logs calls are passed over when the journal
recorded nothing of those kinds: an EC2-only campaign) → spot requests → placement
group, key pair, security group (DependencyViolation retried while ENIs detach) → internet
gateway detached and deleted (retried while public addresses are still mapped) → route table
disassociated and deleted → subnet → VPC.
Only resources carrying the campaign's tag *and* this installation's
(:mod:`.owner`) are deleted, of every kind — key pairs and placement groups included, which are
found by their tags, never by name: an id or name read back from the journal is never trusted on
its own. ``installation=None`` (``netfleet cloud reap --all-owners`` only) selects every owner.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError, WaiterError
from botocore.parsers import ResponseParserError

from netfleet import aws
from netfleet.cloud import backing, faults, owner
from netfleet.cloud.aws import filters
from netfleet.cloud.aws import retry as retry_
from netfleet.cloud.aws.journal import Journal
from netfleet.cloud.aws.release import fargate_teardown
from netfleet.cloud.journal import CAMPAIGN_RE, check_campaign
from netfleet.cloud.owner import TAG_CAMPAIGN, TAG_EXPIRES, TAG_INSTALLATION
from netfleet.errors import EnvironmentProblem

RESOURCE_TYPES = (
    "tasks",
    "instances",
    "task-definitions",
    "iam-roles",
    "log-groups",
    "clusters",
    "spot-requests",
    "placement-groups",
    "key-pairs",
    "security-groups",
    "prefix-lists",
    "internet-gateways",
    "route-tables",
    "subnets",
    "vpcs",
)
RETRYABLE = retry_.IN_USE | retry_.THROTTLED
#: journal kinds that need ECS, IAM or logs permissions to release
FARGATE_KINDS = frozenset({"task", "task-definition", "ecs-cluster", "iam-role", "log-group"})


def _code(exc: ClientError) -> str:
    return retry_.code(exc)


def retry(
    call: Callable[[], Any], *, budget_s: float = retry_.DELETE_BUDGET_S, delay: float = 0.2
) -> Any:
    """Retry AWS's "not yet" answers to a delete (DependencyViolation while ENIs detach: often
    minutes) with backoff, for up to ``budget_s`` (:mod:`.retry`)."""
    return retry_.call(call, retry_on=RETRYABLE, budget_s=budget_s, first_delay=delay)


_ignore_missing = retry_.ignore_missing


def wait_until_gone(
    probe: Callable[[], list[Any]], what: str, *, poll_s: float, wait_s: float, region: str
) -> None:
    """Poll ``probe`` with backoff until it returns nothing (their ENIs hold the security group
    and subnet); EnvironmentProblem(``what``) after ``wait_s``."""
    deadline = time.monotonic() + wait_s
    delay = poll_s
    while probe():
        if time.monotonic() > deadline:
            raise EnvironmentProblem(f"{what} in {region} after {wait_s:.0f} s")
        time.sleep(delay)
        delay = min(delay * 2, 10.0)


def wait_terminated(
    ec2: Any, ids: list[str], what: str, *, poll_s: float, wait_s: float, region: str
) -> None:
    """boto3's InstanceTerminated waiter over ``ids`` (an id no longer known is gone);
    EnvironmentProblem(``what``) after ``wait_s`` or when one is not shutting down."""
    for chunk in [ids[i : i + 200] for i in range(0, len(ids), 200)]:
        try:
            retry_.wait(
                ec2.get_waiter("instance_terminated"),
                InstanceIds=chunk,
                budget_s=wait_s,
                delay_s=poll_s,
                max_delay_s=10.0,
                retry_on=retry_.THROTTLED,
                gone_on={"InvalidInstanceID.NotFound"},
            )
        except retry_.WaitTimedOut:
            raise EnvironmentProblem(f"{what} in {region} after {wait_s:.0f} s") from None
        except WaiterError as exc:
            states = sorted(
                {
                    str(i.get("State", {}).get("Name"))
                    for r in (exc.last_response or {}).get("Reservations", [])
                    for i in r.get("Instances", [])
                }
            )
            said = "/".join(states) or retry_.answered(exc.last_response or {})
            raise EnvironmentProblem(f"{what} in {region}: {said}") from None


def live_instances(ec2: Any, campaign: str, installation: str | None = None) -> list[str]:
    """The campaign's instances not yet terminated (of ``installation``; None: any owner)."""
    out = []
    f = filters.owned(campaign, installation)
    for page in ec2.get_paginator("describe_instances").paginate(Filters=f):
        for res in page["Reservations"]:
            for inst in res["Instances"]:
                if inst["State"]["Name"] != "terminated":
                    out.append(inst["InstanceId"])
    return out


def _no_retry(ec2: Any) -> Any:
    """The same endpoint without botocore's retries: an emulator's HTTP 500 for an API it lacks
    (moto: placement groups) should cost one request, not a backoff series."""
    from botocore.config import Config

    return aws.client(
        "ec2",
        ec2.meta.region_name,
        endpoint_url=ec2.meta.endpoint_url if aws.endpoint_url("ec2") else None,
        config=Config(retries={"max_attempts": 1, "mode": "standard"}),
    )


def placement_groups(ec2: Any, campaign: str, installation: str | None) -> list[str] | None:
    """Names of the placement groups carrying the tags; None where the API is unavailable
    (moto: HTTP 500) — then nothing can be verified, so nothing is deleted."""
    try:
        f = filters.owned(campaign, installation)
        groups = _no_retry(ec2).describe_placement_groups(Filters=f)
    except (ClientError, BotoCoreError, ResponseParserError):
        return None
    return [str(g["GroupName"]) for g in groups["PlacementGroups"]]


def key_pairs(ec2: Any, campaign: str, installation: str | None) -> dict[str, str]:
    """id → name of the key pairs carrying the tags (never found by name)."""
    found = ec2.describe_key_pairs(Filters=filters.owned(campaign, installation))["KeyPairs"]
    return {str(k["KeyPairId"]): str(k["KeyName"]) for k in found}


def prefix_lists(ec2: Any, campaign: str, installation: str | None) -> list[str]:
    """Ids of the managed prefix lists carrying the tags, not yet deleted. The installation's
    tag is checked here, not in the filter: moto's server fails (HTTP 500) on two tag filters
    when a list matches neither."""
    f = filters.owned(campaign, None)
    found = ec2.describe_managed_prefix_lists(Filters=f)["PrefixLists"]
    gone = ("delete-complete", "delete-in-progress")
    return [
        str(p["PrefixListId"])
        for p in found
        if p.get("State") not in gone
        and owner.ours({t["Key"]: t["Value"] for t in p.get("Tags", [])}, campaign, installation)
    ]


def remaining(ec2: Any, campaign: str, installation: str | None = None) -> dict[str, int | None]:
    """Per resource type, how many carry the campaign's tag (and ``installation``'s; None: any
    owner's). None: the API is unavailable."""
    f = filters.owned(campaign, installation)
    ecs = aws.client("ecs", ec2.meta.region_name)
    counts: dict[str, int | None] = {**fargate_teardown.remaining(ecs, campaign, installation)}
    counts["instances"] = len(live_instances(ec2, campaign, installation))
    spot = ec2.describe_spot_instance_requests(Filters=f)["SpotInstanceRequests"]
    counts["spot-requests"] = sum(1 for s in spot if s["State"] in ("open", "active"))
    groups = placement_groups(ec2, campaign, installation)
    counts["placement-groups"] = None if groups is None else len(groups)
    counts["key-pairs"] = len(key_pairs(ec2, campaign, installation))
    counts["security-groups"] = len(ec2.describe_security_groups(Filters=f)["SecurityGroups"])
    counts["prefix-lists"] = len(prefix_lists(ec2, campaign, installation))
    counts["internet-gateways"] = len(ec2.describe_internet_gateways(Filters=f)["InternetGateways"])
    counts["route-tables"] = len(ec2.describe_route_tables(Filters=f)["RouteTables"])
    counts["subnets"] = len(ec2.describe_subnets(Filters=f)["Subnets"])
    counts["vpcs"] = len(ec2.describe_vpcs(Filters=f)["Vpcs"])
    return counts


def teardown_region(
    ec2: Any,
    campaign: str,
    region: str,
    journal: Journal | None,
    *,
    installation: str | None,
    poll_s: float = 0.2,
    wait_s: float = 900,
) -> None:
    """Delete everything the campaign (of ``installation``; None: any owner's, ``reap
    --all-owners``) has in one region, in dependency order."""
    f = filters.owned(campaign, installation)

    def note(kind: str, rid: str) -> None:
        if journal is not None:
            journal.deleted(kind, region, rid)

    gone = partial(wait_until_gone, poll_s=poll_s, wait_s=wait_s, region=region)
    recorded = journal is not None and any(
        r.kind in FARGATE_KINDS for r in journal.read().resources if r.region == region
    )
    ecs = aws.client("ecs", region)
    ids = live_instances(ec2, campaign, installation)
    faults.point("teardown:before-terminate")
    if ids:
        ec2.terminate_instances(InstanceIds=ids)
    faults.point("teardown:after-terminate")
    none: list[str] = []
    tasks = fargate_teardown.unless_denied(
        partial(fargate_teardown.stop_tasks, ecs, campaign, installation), none, recorded=recorded
    )
    faults.point("teardown:after-stop-tasks")
    if tasks:
        fargate_teardown.wait_stopped(ecs, campaign, tasks, poll_s=poll_s, wait_s=wait_s)
        gone(
            partial(fargate_teardown.tasks, ecs, campaign, installation),
            f"Fargate tasks of {campaign} still running",
        )
    for arn in tasks:
        note("task", arn)
    faults.point("teardown:after-tasks-stopped")
    if ids:
        wait_terminated(ec2, ids, f"instances of {campaign} still not terminated", poll_s=poll_s,
                        wait_s=wait_s, region=region)  # fmt: skip
    gone(  # and none launched meanwhile (the tags, not the ids, say what is the campaign's)
        partial(live_instances, ec2, campaign, installation),
        f"instances of {campaign} still not terminated",
    )
    for iid in ids:
        note("instance", iid)
    faults.point("teardown:after-wait-terminated")
    for step in (
        fargate_teardown.deregister_definitions,
        fargate_teardown.delete_exec_role_and_logs,
        fargate_teardown.delete_cluster,
    ):
        fargate_teardown.unless_denied(
            partial(step, ecs, campaign, installation, note), None, recorded=recorded
        )
    spot = ec2.describe_spot_instance_requests(Filters=f)["SpotInstanceRequests"]
    open_ids = [s["SpotInstanceRequestId"] for s in spot if s["State"] in ("open", "active")]
    if open_ids:
        ec2.cancel_spot_instance_requests(SpotInstanceRequestIds=open_ids)
    faults.point("teardown:after-spot-requests")
    for name in placement_groups(ec2, campaign, installation) or []:  # by tag, never by name
        _ignore_missing(partial(retry, partial(ec2.delete_placement_group, GroupName=name)))
        note("placement-group", name)
    for key_name in key_pairs(ec2, campaign, installation).values():
        # the name of a key pair just found by its tags (moto deletes by name only)
        _ignore_missing(partial(ec2.delete_key_pair, KeyName=key_name))
        note("key-pair", key_name)
    faults.point("teardown:after-key-pair")
    for sg in ec2.describe_security_groups(Filters=f)["SecurityGroups"]:
        sg_id = sg["GroupId"]
        _ignore_missing(partial(retry, partial(ec2.delete_security_group, GroupId=sg_id)))
        note("security-group", sg_id)
    for plist in prefix_lists(ec2, campaign, installation):  # after the groups referencing them
        _ignore_missing(partial(retry, partial(ec2.delete_managed_prefix_list, PrefixListId=plist)))
        note("prefix-list", plist)
    faults.point("teardown:after-security-group")
    for igw in ec2.describe_internet_gateways(Filters=f)["InternetGateways"]:
        igw_id = igw["InternetGatewayId"]
        for att in igw.get("Attachments", []):
            detach = partial(ec2.detach_internet_gateway, InternetGatewayId=igw_id)
            _ignore_missing(partial(retry, partial(detach, VpcId=att["VpcId"])))
        _ignore_missing(
            partial(retry, partial(ec2.delete_internet_gateway, InternetGatewayId=igw_id))
        )
        note("internet-gateway", igw_id)
    faults.point("teardown:after-internet-gateway")
    for rtb in ec2.describe_route_tables(Filters=f)["RouteTables"]:
        rtb_id = rtb["RouteTableId"]
        for assoc in rtb.get("Associations", []):
            if not assoc.get("Main"):  # a tagged table is never a VPC's main one; be sure
                aid = assoc["RouteTableAssociationId"]
                _ignore_missing(partial(ec2.disassociate_route_table, AssociationId=aid))
        _ignore_missing(partial(retry, partial(ec2.delete_route_table, RouteTableId=rtb_id)))
        note("route-table", rtb_id)
    faults.point("teardown:after-route-table")
    for sn in ec2.describe_subnets(Filters=f)["Subnets"]:
        sn_id = sn["SubnetId"]
        _ignore_missing(partial(retry, partial(ec2.delete_subnet, SubnetId=sn_id)))
        note("subnet", sn_id)
    faults.point("teardown:after-subnet")
    for vpc in ec2.describe_vpcs(Filters=f)["Vpcs"]:
        vpc_id = vpc["VpcId"]
        _ignore_missing(partial(retry, partial(ec2.delete_vpc, VpcId=vpc_id)))
        note("vpc", vpc_id)
    faults.point("teardown:after-vpc")


def destroy(
    state_root: Path,
    campaign: str,
    *,
    poll_s: float = 0.2,
    regions: list[str] | None = None,
    sim_labs: bool = True,
) -> dict[str, int]:
    """``netfleet cloud destroy``: from the intent journal alone (plus tags), in every region the
    journal names; then count what remains and fail loudly if anything does. With ``sim_labs``
    (not when a run releases its network lease: its lab has a lease of its own) the sim
    backing's labs of the campaign are taken down first (``netfleet_sim.labs``)."""
    journal = Journal(state_root, check_campaign(campaign))
    me = owner.installation(state_root)
    state = journal.read()
    todo = sorted(set(state.regions) | set(regions or []))
    simlab = backing.sim_labs(state_root, campaign) if sim_labs else None
    labs = simlab.labs(state_root, campaign) if simlab else []
    if not todo and not labs:
        raise EnvironmentProblem(
            f"no intent journal for campaign {campaign!r} under {state_root}",
            hint="pass --region to sweep by tag anyway, or use `netfleet cloud reap`",
        )
    # the sim backing's labs first (local, quick): a killed `netfleet run` leaves them up
    released = simlab.release_campaign(state_root, campaign, labs) if simlab else []
    left_labs = [o for o in released if o.outcome == "left"]
    totals: dict[str, int] = {"sim-labs": len(left_labs)}
    for region in todo:
        ec2 = aws.client("ec2", region)
        teardown_region(ec2, campaign, region, journal, installation=me, poll_s=poll_s)
        left = remaining(ec2, campaign, me)
        for kind, n in left.items():
            totals[kind] = totals.get(kind, 0) + (n or 0)
    if any(totals.values()):
        why = "".join(f"\n  sim lab {o.lab}: {o.detail}" for o in left_labs)
        raise EnvironmentProblem(
            f"teardown of {campaign!r} left resources behind: "
            + ", ".join(f"{k}={v}" for k, v in totals.items() if v)
            + why,
            hint=f"run `netfleet cloud destroy {campaign}` again; check the console if it persists",
        )
    return totals


@dataclass
class Expired:
    region: str
    campaign: str
    expires_at: str
    counts: dict[str, int | None] = field(default_factory=dict)


def journal_regions(state_root: Path) -> list[str]:
    regions: set[str] = set()
    if state_root.is_dir():
        for d in state_root.iterdir():
            if d.is_dir() and CAMPAIGN_RE.match(d.name):  # a foreign directory is not ours
                regions |= set(Journal(state_root, d.name).read().regions)
    return sorted(regions)


def find_expired(
    regions: list[str], now: dt.datetime, installation: str | None = None
) -> list[Expired]:
    """Campaigns whose resources carry an ``expires-at`` tag in the past (and the
    ``installation``'s tag; None: any owner's)."""
    out: dict[tuple[str, str], Expired] = {}
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    for region in regions:
        ec2 = aws.client("ec2", region)
        tagged = ec2.describe_tags(Filters=[{"Name": "key", "Values": [TAG_EXPIRES]}])["Tags"]
        by_id = {t["ResourceId"]: t["Value"] for t in tagged}
        owned = ec2.describe_tags(Filters=[{"Name": "key", "Values": [TAG_INSTALLATION]}])["Tags"]
        of = {t["ResourceId"]: t["Value"] for t in owned}
        names = ec2.describe_tags(Filters=[{"Name": "key", "Values": [TAG_CAMPAIGN]}])["Tags"]
        for t in names:
            exp = by_id.get(t["ResourceId"])
            if installation is not None and of.get(t["ResourceId"]) != installation:
                continue  # another installation's: only `reap --all-owners` touches it
            if exp is None or exp >= stamp:
                continue
            campaign = str(t["Value"])
            if not CAMPAIGN_RE.match(campaign):  # not a name netfleet would have written
                continue
            key = (region, campaign)
            if key not in out:
                out[key] = Expired(region, campaign, exp)
        ecs = aws.client("ecs", region)
        no_clusters: dict[str, str] = {}
        clusters = fargate_teardown.unless_denied(  # a policy for EC2-only campaigns
            partial(fargate_teardown.expired, ecs, stamp, installation),
            no_clusters,
            recorded=False,
        )
        for campaign, exp in clusters.items():
            out.setdefault((region, campaign), Expired(region, campaign, exp))
    for e in out.values():
        e.counts = remaining(aws.client("ec2", e.region), e.campaign, installation)
    return sorted(out.values(), key=lambda e: (e.region, e.campaign))


def reap(
    state_root: Path,
    extra_regions: list[str],
    now: dt.datetime,
    *,
    delete: bool,
    poll_s: float = 1,
    all_owners: bool = False,
) -> list[Expired]:
    """Find (and with ``delete`` remove) this installation's expired campaigns (``all_owners``:
    every owner's) in every region used, and the sim backing's labs whose campaign session has
    expired (a run killed with ``kill -9``)."""
    regions = sorted(set(journal_regions(state_root)) | set(extra_regions))
    me = None if all_owners else owner.installation(state_root)
    found = find_expired(regions, now, me)
    on_aws = list(found)
    simlab = backing.sim_labs(state_root)
    labs = simlab.expired(state_root, now) if simlab else {}
    for campaign, dirs in labs.items():
        row = next((e for e in found if e.campaign == campaign), None)
        if row is None:  # nothing left on AWS: the lab alone
            meta = dirs[0][1]
            row = Expired(str(meta.get("region", "")), campaign, str(meta["expires_at"]))
            found.append(row)
        row.counts["sim-labs"] = len(dirs)
    found.sort(key=lambda e: (e.region, e.campaign))
    if delete:
        for campaign, dirs in labs.items():
            assert simlab is not None  # labs is empty without it
            simlab.release_campaign(state_root, campaign, [d for d, _ in dirs])
        for e in on_aws:
            journal = Journal(state_root, e.campaign)
            teardown_region(
                aws.client("ec2", e.region),
                e.campaign,
                e.region,
                journal if journal.exists() else None,
                installation=me,
                poll_s=poll_s,
            )
    return found
