"""AWS's misbehaviour, injected in front of moto: the emulation every cloud test can use.

Loaded by ``NETFLEET_PLUGINS=netfleet_sim.awsfaults`` (:mod:`netfleet.plugins`), it registers
botocore event handlers on every session netfleet builds. ``NETFLEET_AWS_FAULTS`` names the
profiles (comma-separated, or ``all``); :data:`PROFILES` holds their knobs. Errors are AWS's own:
an EC2 error is the query protocol's XML body (``<Response><Errors><Error><Code>…``) with its
real code, message and HTTP status, an ECS one the JSON protocol's ``__type`` — returned from
``before-send``, so botocore parses it and its retry handler sees it exactly as it would see
AWS's answer (a throttle is retried by botocore's own policy first).

* ``none`` (always on): moto's DryRun gaps closed — ``CreateVpc`` with ``DryRun=True`` creates
  a VPC on moto; here it answers ``DryRunOperation`` after moto's IAM check, as AWS does; and
  DescribeInstanceTypes says t1.micro boots paravirtual images only (moto's data adds hvm;
  AWS refuses an HVM image on it with InvalidParameterCombination);
* ``eventual``: the first ``describes`` calls naming a resource created in this process answer
  ``…NotFound`` (instances, VPCs, subnets, security groups, gateways, route tables), and
  DescribeTasks answers ``failures: [{reason: MISSING}]`` for a task just started;
* ``throttle``: ``RequestLimitExceeded`` (EC2, HTTP 503) / ``ThrottlingException`` (ECS) on a
  ``share`` of calls (seeded: the same calls each run);
* ``capacity``: RunInstances into ``zone`` answers ``InsufficientInstanceCapacity`` (HTTP 500,
  naming the other zones as AWS does); with ``throttle_at`` N > 0, the Nth such attempt (counted
  over botocore's own retries) answers ``RequestLimitExceeded`` instead — throttling and
  capacity together, deterministically: with N = botocore's attempts the first RunInstances
  call ends throttled after N - 1 answers of no capacity;
* ``dependency``: for ``seconds`` after the last TerminateInstances, deleting a security
  group, subnet or VPC and detaching an internet gateway answer ``DependencyViolation``; with
  ``first`` N > 0, so do the first N such calls after it however late they come (a test that
  must meet the refusal does not depend on how fast the machine reaches the delete);
* ``spot-notice``: ``after_s`` after a spot instance launched, its spot request reads
  ``marked-for-termination`` (the two-minute notice); ``grace_s`` later the instance is
  terminated for real and DescribeInstances says ``Server.SpotInstanceTermination``. With
  ``after_file`` (a path), ``after_s`` counts from the first call that finds that file (and
  not before the launch): a test creates it once a run has started, so the reclaim lands
  mid-run however long the setup took on a busy machine. The spot
  request is the one AWS keeps for a spot RunInstances (moto keeps none): it carries the tags
  RunInstances gave it, honours ``tag:``/``state`` filters, reads ``closed`` once its instance
  is gone, and CancelSpotInstanceRequests on it is answered here (moto would fail on its id);
* ``task-stops``: a Fargate task described ``after_describes`` times reads STOPPED with
  ``stopCode`` EssentialContainerExited and a ``stoppedReason``;
* ``iam-propagation``: for ``pass_s`` after a CreateRole, RegisterTaskDefinition answers
  ``AccessDeniedException`` (``iam:PassRole`` on the new role), and for ``assume_s`` RunTask
  answers ``InvalidParameterException`` "ECS was unable to assume the role" — IAM's eventual
  consistency, which moto does not have;
* ``fargate-capacity``: the first ``times`` RunTask calls (FARGATE) place no task:
  ``failures: [{reason: "Capacity is unavailable at this time…"}]``, as AWS answers when a
  zone has no Fargate capacity;
* ``slow-launch``: RunInstances answers ``hold_s`` after the instance exists (AWS's launch
  call can take seconds), and while it is held DescribeInstances does not list it yet — a
  release that looks it up by tag finds nothing. ``RunInstances.held`` is counted when the
  hold begins (in the ``NETFLEET_AWS_FAULTS_LOG`` file): a test sees the launch in flight.

``NETFLEET_AWS_FAULTS_LOG`` names a file where the counts of injected errors are kept (code →
times), so a test can check a subprocess met the fault it was given.

The state (what was created when) lives in this process: a subprocess under test starts fresh,
as a new controller would against AWS.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from netfleet.plugins import Registry

PROFILE_ENV = "NETFLEET_AWS_FAULTS"
#: a file the emulation keeps its counts in (error code → how many times injected)
LOG_ENV = "NETFLEET_AWS_FAULTS_LOG"
PROFILES: dict[str, dict[str, Any]] = {
    "none": {},
    "eventual": {"describes": 2},
    "throttle": {"share": 0.2, "seed": 24},
    "capacity": {"zone": "us-east-1a", "throttle_at": 0},
    "dependency": {"seconds": 4.0, "first": 0},
    "spot-notice": {"after_s": 1.0, "grace_s": 2.0, "after_file": ""},
    "task-stops": {"after_describes": 2, "reason": "Essential container in task exited"},
    "iam-propagation": {"pass_s": 2.0, "assume_s": 4.0},
    "fargate-capacity": {"times": 2},
    "slow-launch": {"hold_s": 5.0},
}
#: AWS's RunTask failure reason when Fargate has no capacity in the subnet's zone
FARGATE_NO_CAPACITY = (
    "Capacity is unavailable at this time. Please try again later or in a different "
    "availability zone"
)

#: create call → (response path to the new id, the NotFound code AWS uses for it)
CREATES: dict[str, tuple[str, str]] = {
    "CreateVpc": ("Vpc.VpcId", "InvalidVpcID.NotFound"),
    "CreateSubnet": ("Subnet.SubnetId", "InvalidSubnetID.NotFound"),
    "CreateSecurityGroup": ("GroupId", "InvalidGroup.NotFound"),
    "CreateInternetGateway": (
        "InternetGateway.InternetGatewayId",
        "InvalidInternetGatewayID.NotFound",
    ),
    "CreateRouteTable": ("RouteTable.RouteTableId", "InvalidRouteTableID.NotFound"),
}
#: calls that name a fresh resource and meet AWS's eventual consistency (request parameters)
REFERS = {
    "DescribeInstances": ("InstanceId.",),
    "DescribeInstanceAttribute": ("InstanceId",),
    "CreateTags": ("ResourceId.",),
    "ModifyVpcAttribute": ("VpcId",),
    "CreateSubnet": ("VpcId",),
    "CreateRouteTable": ("VpcId",),
    "AttachInternetGateway": ("InternetGatewayId", "VpcId"),
    "ModifySubnetAttribute": ("SubnetId",),
    "AuthorizeSecurityGroupIngress": ("GroupId",),
    "CreateRoute": ("RouteTableId",),
    "AssociateRouteTable": ("RouteTableId", "SubnetId"),
    "DescribeSubnets": ("SubnetId.",),
    "DescribeSecurityGroups": ("GroupId.",),
}
DEPENDENT_DELETES = {
    "DeleteSecurityGroup": "resource {id} has a dependent object",
    "DeleteSubnet": "The subnet '{id}' has dependencies and cannot be deleted.",
    "DeleteVpc": "The vpc '{id}' has dependencies and cannot be deleted.",
    "DetachInternetGateway": "Network {id} has some mapped public address(es). Please unmap "
    "those public address(es) before detaching the gateway.",
}
ID_PARAM = {
    "DeleteSecurityGroup": "GroupId",
    "DeleteSubnet": "SubnetId",
    "DeleteVpc": "VpcId",
    "DetachInternetGateway": "VpcId",
}


def active() -> dict[str, dict[str, Any]]:
    """The profiles ``NETFLEET_AWS_FAULTS`` names (``none`` always), with their knobs; a knob
    is overridden as ``name:knob=value`` (``throttle:share=0.5``, ``capacity:zone=us-east-1b``)."""
    entries = [n.strip() for n in os.environ.get(PROFILE_ENV, "").split(",") if n.strip()]
    if entries == ["all"]:
        entries = list(PROFILES)
    out: dict[str, dict[str, Any]] = {"none": {}}
    for entry in entries:
        name, *knobs = entry.split(":")
        if name not in PROFILES:
            raise ValueError(f"{PROFILE_ENV}: unknown profile {name!r}; known: {list(PROFILES)}")
        out[name] = dict(PROFILES[name])
        for knob in knobs:
            key, _, value = knob.partition("=")
            if key not in PROFILES[name]:
                raise ValueError(f"{PROFILE_ENV}: profile {name!r} has no knob {key!r}")
            kind = type(PROFILES[name][key])
            out[name][key] = kind(value)
    return out


@dataclass
class State:
    profiles: dict[str, dict[str, Any]]
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: resource id → (NotFound code, describes still to fail)
    fresh: dict[str, list[Any]] = field(default_factory=dict)
    fresh_tasks: dict[str, int] = field(default_factory=dict)
    task_seen: dict[str, int] = field(default_factory=dict)
    subnet_zone: dict[str, str] = field(default_factory=dict)
    last_terminate: float = 0.0
    refused_since_terminate: int = 0  #: dependent deletes refused since the last terminate
    spot_launched: dict[str, float] = field(default_factory=dict)  #: instance → monotonic
    spot_armed: float | None = None  #: when ``after_file`` was first found (monotonic)
    spot_gone: set[str] = field(default_factory=set)
    spot_tags: dict[str, dict[str, str]] = field(default_factory=dict)  #: instance → its request's
    spot_ended: dict[str, tuple[str, str]] = field(default_factory=dict)  #: instance → state, code
    rng: random.Random = field(default_factory=random.Random)
    injected: dict[str, int] = field(default_factory=dict)  #: code → how many times
    role_created: float = -1e9  #: monotonic time of the last CreateRole
    role_arn: str = ""
    run_tasks: int = 0
    #: RunInstances attempts into the ``capacity`` zone so far
    capacity_calls: int = 0
    #: the subnets the RunTask calls asked for, in order
    task_subnets: list[str] = field(default_factory=list)
    #: instances whose RunInstances answer is still held (``slow-launch``)
    held: set[str] = field(default_factory=set)

    def count(self, code: str) -> None:
        self.injected[code] = self.injected.get(code, 0) + 1
        log = os.environ.get(LOG_ENV)
        if log:  # what this process was answered, for a test to check the fault was met
            with contextlib.suppress(OSError), open(log, "w") as f:
                json.dump(self.injected, f)


_state: State | None = None


def reset() -> None:
    """Forget what was created and read ``NETFLEET_AWS_FAULTS`` afresh (a test's next case)."""
    global _state
    _state = None


def state() -> State:
    global _state
    if _state is None:
        profiles = active()
        _state = State(profiles)
        _state.rng.seed(profiles.get("throttle", {}).get("seed", 0))
    return _state


# -- AWS's error shapes ----------------------------------------------------------------------
class _Raw:
    def __init__(self, body: bytes) -> None:
        self.body = body

    def stream(self, **_: Any) -> Any:
        yield self.body


def ec2_error(request: Any, status: int, code: str, message: str) -> Any:
    """EC2's query-protocol error: XML ``Response/Errors/Error`` + ``RequestID``."""
    from xml.sax.saxutils import escape

    from botocore.awsrequest import AWSResponse

    body = (
        '<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error>'
        f"<Code>{escape(code)}</Code><Message>{escape(message)}</Message></Error></Errors>"
        f"<RequestID>{uuid.uuid4()}</RequestID></Response>"
    ).encode()
    headers = {"Content-Type": "text/xml;charset=UTF-8", "Content-Length": str(len(body))}
    return AWSResponse(request.url, status, headers, _Raw(body))


def ec2_answer(request: Any, xml: str) -> Any:
    """A successful EC2 query-protocol answer (HTTP 200) with this XML body."""
    from botocore.awsrequest import AWSResponse

    body = ('<?xml version="1.0" encoding="UTF-8"?>\n' + xml).encode()
    headers = {"Content-Type": "text/xml;charset=UTF-8", "Content-Length": str(len(body))}
    return AWSResponse(request.url, 200, headers, _Raw(body))


def json_response(request: Any, status: int, doc: dict[str, Any]) -> Any:
    """A JSON-protocol answer (ECS): an error carries ``__type``, as AWS's does."""
    from botocore.awsrequest import AWSResponse

    body = json.dumps(doc).encode()
    headers = {
        "Content-Type": "application/x-amz-json-1.1",
        "Content-Length": str(len(body)),
        "x-amzn-RequestId": str(uuid.uuid4()),
    }
    if "__type" in doc:
        headers["x-amzn-ErrorType"] = str(doc["__type"])
    return AWSResponse(request.url, status, headers, _Raw(body))


def _params(request: Any) -> dict[str, str]:
    body = request.body or b""
    if isinstance(body, bytes):
        body = body.decode(errors="replace")
    if not isinstance(body, str):
        return {}
    return {k: v[0] for k, v in parse_qs(body, keep_blank_values=True).items()}


# -- handlers --------------------------------------------------------------------------------
def before_send(request: Any, event_name: str = "", **kw: Any) -> Any:
    service, op = event_name.split(".", 2)[1:]
    st = state()
    p = st.profiles
    with st.lock:
        if service == "ec2":
            return _ec2_before(st, p, request, op)
        if service == "ecs":
            return _ecs_before(st, p, request, op)
    return None


def _ec2_before(st: State, p: dict[str, Any], request: Any, op: str) -> Any:
    params = _params(request)
    dry = params.get("DryRun") == "true"
    if "throttle" in p and not dry and st.rng.random() < p["throttle"]["share"]:
        st.count("RequestLimitExceeded")
        return ec2_error(request, 503, "RequestLimitExceeded", "Request limit exceeded.")
    if "eventual" in p and op in REFERS:
        for key, value in params.items():
            if not any(key == name or key.startswith(name) for name in REFERS[op]):
                continue
            entry = st.fresh.get(value)
            if entry and entry[1] > 0:
                entry[1] -= 1
                st.count(entry[0])
                what = entry[0].split(".")[0].removeprefix("Invalid")
                return ec2_error(request, 400, entry[0], f"The {what} '{value}' does not exist")
    if "capacity" in p and op == "RunInstances" and not dry:
        zone = params.get("Placement.AvailabilityZone") or st.subnet_zone.get(
            params.get("SubnetId", ""), ""
        )
        if zone == p["capacity"]["zone"]:
            st.capacity_calls += 1
            if st.capacity_calls == p["capacity"]["throttle_at"]:
                st.count("RequestLimitExceeded")
                return ec2_error(request, 503, "RequestLimitExceeded", "Request limit exceeded.")
            itype = params.get("InstanceType", "")
            st.count("InsufficientInstanceCapacity")
            return ec2_error(
                request,
                500,
                "InsufficientInstanceCapacity",
                f"We currently do not have sufficient {itype} capacity in the Availability Zone "
                f"you requested ({zone}). Our system will be working on provisioning additional "
                f"capacity. You can currently get {itype} capacity by not specifying an "
                "Availability Zone in your request or choosing another zone.",
            )
    if "spot-notice" in p and op == "CancelSpotInstanceRequests" and not dry:
        answered = _cancel_spot(st, request, params)
        if answered is not None:
            return answered
    dep = p.get("dependency", {})
    settle_s, first = dep.get("seconds", 0.0), dep.get("first", 0)
    if (
        op in DEPENDENT_DELETES
        and not dry
        and st.last_terminate
        and (time.monotonic() - st.last_terminate < settle_s or st.refused_since_terminate < first)
    ):
        rid = params.get(ID_PARAM[op], "?")
        st.refused_since_terminate += 1
        st.count("DependencyViolation")
        return ec2_error(request, 400, "DependencyViolation", DEPENDENT_DELETES[op].format(id=rid))
    return None


def _ecs_before(st: State, p: dict[str, Any], request: Any, op: str) -> Any:
    if "throttle" in p and st.rng.random() < p["throttle"]["share"]:
        st.count("ThrottlingException")
        return json_response(
            request, 400, {"__type": "ThrottlingException", "message": "Rate exceeded"}
        )
    iam = p.get("iam-propagation", {})
    since = time.monotonic() - st.role_created
    if since < iam.get("pass_s", 0) and op == "RegisterTaskDefinition":
        st.count("AccessDeniedException")
        message = (
            "User: arn:aws:iam::123456789012:user/netfleet is not authorized to perform: "
            f"iam:PassRole on resource: {st.role_arn} because no identity-based policy allows "
            "the iam:PassRole action"
        )
        return json_response(request, 400, {"__type": "AccessDeniedException", "message": message})
    if since < iam.get("assume_s", 0) and op == "RunTask":
        st.count("InvalidParameterException")
        message = (
            f"ECS was unable to assume the role '{st.role_arn}' that was provided for this "
            "task. Please verify that the role being passed has the proper trust relationship "
            "and permissions and that your IAM user has permissions to pass this role."
        )
        return json_response(
            request, 400, {"__type": "InvalidParameterException", "message": message}
        )
    if op == "RunTask":
        with contextlib.suppress(ValueError, AttributeError):
            doc = json.loads(request.body or b"{}")
            aws_vpc = doc.get("networkConfiguration", {}).get("awsvpcConfiguration", {})
            st.task_subnets.append(",".join(aws_vpc.get("subnets", [])))
        st.run_tasks += 1
        if st.run_tasks <= p.get("fargate-capacity", {}).get("times", 0):
            st.count("FargateCapacity")
            failure = {"arn": "", "reason": FARGATE_NO_CAPACITY}
            return json_response(request, 200, {"tasks": [], "failures": [failure]})
    if "eventual" in p and op == "DescribeTasks":
        try:
            doc = json.loads(request.body or b"{}")
        except ValueError:
            return None
        arns = [a for a in doc.get("tasks", []) if st.fresh_tasks.get(a, 0) > 0]
        if arns:
            for a in arns:
                st.fresh_tasks[a] -= 1
            st.count("MISSING")
            failures = [{"arn": a, "reason": "MISSING"} for a in arns]
            return json_response(request, 200, {"tasks": [], "failures": failures})
    return None


def after_call(parsed: Any, event_name: str = "", model: Any = None, **kw: Any) -> None:
    service, op = event_name.split(".", 2)[1:]
    if not isinstance(parsed, dict) or ("Error" in parsed and parsed["Error"].get("Code")):
        return
    st = state()
    p = st.profiles
    with st.lock:
        if service == "ec2":
            _ec2_after(st, p, op, parsed, kw)
        elif service == "ecs":
            _ecs_after(st, p, op, parsed)


def _dig(doc: Any, path: str) -> Any:
    for part in path.split("."):
        doc = doc.get(part) if isinstance(doc, dict) else None
    return doc


#: types AWS boots from paravirtual images only (moto's catalogue says hvm too)
PARAVIRTUAL_ONLY = frozenset({"t1.micro"})


def _ec2_after(st: State, p: dict[str, Any], op: str, parsed: dict[str, Any], kw: Any) -> None:
    if op == "DescribeInstanceTypes":
        for item in parsed.get("InstanceTypes", []):
            if item.get("InstanceType") in PARAVIRTUAL_ONLY:
                item["SupportedVirtualizationTypes"] = ["paravirtual"]
    if op in CREATES:
        rid = _dig(parsed, CREATES[op][0])
        if isinstance(rid, str) and "eventual" in p:
            st.fresh[rid] = [CREATES[op][1], p["eventual"]["describes"]]
        if op == "CreateSubnet":
            sub = parsed.get("Subnet", {})
            st.subnet_zone[str(sub.get("SubnetId"))] = str(sub.get("AvailabilityZone"))
    elif op == "RunInstances":
        for inst in parsed.get("Instances", []):
            iid = inst.get("InstanceId")
            if "eventual" in p:
                st.fresh[iid] = ["InvalidInstanceID.NotFound", p["eventual"]["describes"]]
            if inst.get("InstanceLifecycle") == "spot" or inst.get("SpotInstanceRequestId"):
                st.spot_launched[iid] = time.monotonic()
                st.spot_tags[iid] = _request_tags(kw.get("context", {}).get(_PARAMS, {}))
    elif op == "TerminateInstances":
        st.last_terminate = time.monotonic()
        st.refused_since_terminate = 0
        for item in parsed.get("TerminatingInstances", []):
            iid = item.get("InstanceId")
            if iid in st.spot_launched and iid not in st.spot_gone:
                st.spot_ended.setdefault(iid, ("closed", "instance-terminated-by-user"))
    elif op == "DescribeSpotInstanceRequests" and "spot-notice" in p:
        _spot_requests(st, p["spot-notice"], parsed, kw.get("context", {}).get(_PARAMS, {}))
    elif op == "DescribeInstances" and "spot-notice" in p:
        _spot_reclaim(st, p["spot-notice"], parsed)
    if op == "DescribeInstances" and st.held:  # launched, but its RunInstances not answered
        for res in parsed.get("Reservations", []):
            shown = [i for i in res.get("Instances", []) if i["InstanceId"] not in st.held]
            res["Instances"] = shown
        parsed["Reservations"] = [r for r in parsed.get("Reservations", []) if r["Instances"]]


def _slow_launch(parsed: Any, **_: Any) -> None:
    """``slow-launch``: the answer of a RunInstances that created its instances, held."""
    st = state()
    knobs = st.profiles.get("slow-launch")
    if knobs is None or not isinstance(parsed, dict):
        return
    ids = {str(i.get("InstanceId")) for i in parsed.get("Instances", [])}
    if not ids:  # refused, or a DryRun (the permission check)
        return
    with st.lock:
        st.held |= ids
        st.count("RunInstances.held")
    time.sleep(knobs["hold_s"])  # outside the lock: other calls go on meanwhile
    with st.lock:
        st.held -= ids


def _request_tags(params: dict[str, Any]) -> dict[str, str]:
    """The tags RunInstances gave the spot request (``TagSpecification.N`` of ResourceType
    ``spot-instances-request``), from the call's flattened query parameters."""
    tags: dict[str, str] = {}
    for key, value in params.items():
        if key.endswith(".ResourceType") and value == "spot-instances-request":
            spec = key.removesuffix("ResourceType")
            for n in range(1, 51):
                if f"{spec}Tag.{n}.Key" not in params:
                    break
                value = params.get(f"{spec}Tag.{n}.Value", "")
                tags[str(params[f"{spec}Tag.{n}.Key"])] = str(value)
    return tags


def _matches(tags: dict[str, str], state: str, params: dict[str, Any]) -> bool:
    """DescribeSpotInstanceRequests' ``tag:K`` and ``state`` filters, as AWS applies them."""
    for n in range(1, 51):
        name = params.get(f"Filter.{n}.Name")
        if name is None:
            break
        values = [v for k, v in params.items() if k.startswith(f"Filter.{n}.Value.")]
        if name.startswith("tag:") and tags.get(name[4:]) not in values:
            return False
        if name == "state" and state not in values:
            return False
    return True


def _spot_requests(
    st: State, knobs: dict[str, Any], parsed: dict[str, Any], params: dict[str, Any]
) -> None:
    """The spot request AWS keeps for a spot RunInstances (moto keeps none), with the tags
    RunInstances gave it and honouring the call's filters: ``active``, then
    ``marked-for-termination`` from ``after_s`` on — the two-minute notice; ``closed`` once its
    instance is gone (reclaimed or terminated), ``cancelled`` once cancelled."""
    reqs = parsed.setdefault("SpotInstanceRequests", [])
    known = {r.get("InstanceId") for r in reqs}
    for iid, launched in st.spot_launched.items():
        if iid in known:
            continue
        state, code = st.spot_ended.get(iid, ("active", "fulfilled"))
        t0 = _notice_clock(st, knobs, launched)
        if state == "active" and t0 is not None and time.monotonic() - t0 >= knobs["after_s"]:
            code = "marked-for-termination"
        if not _matches(st.spot_tags.get(iid, {}), state, params):
            continue
        reqs.append(
            {
                "SpotInstanceRequestId": spot_request_id(iid),
                "InstanceId": iid,
                "State": state,
                "Type": "one-time",
                "Status": {"Code": code, "Message": SPOT_STATUS.get(code, code)},
                "Tags": [{"Key": k, "Value": v} for k, v in st.spot_tags.get(iid, {}).items()],
            }
        )


#: what AWS's spot request status codes say
SPOT_STATUS = {
    "fulfilled": "Your spot request is fulfilled.",
    "marked-for-termination": "Spot Instance marked for termination",
    "instance-terminated-no-capacity": "Your Spot Instance was terminated because there is "
    "no Spot capacity available that matches your request.",
    "instance-terminated-by-user": "Spot Instance terminated due to user-initiated termination.",
    "request-canceled-and-instance-running": "Your Spot request is canceled, but your instance "
    "is still running.",
    "canceled-before-fulfillment": "Your Spot request was canceled before it was fulfilled.",
}


def spot_request_id(instance_id: str) -> str:
    return "sir-" + instance_id.removeprefix("i-")[:8]


def _cancel_spot(st: State, request: Any, params: dict[str, str]) -> Any:
    """CancelSpotInstanceRequests for the requests this emulation keeps (moto keeps none and
    fails on their ids): AWS's answer, and the requests read ``cancelled`` from then on."""
    ids = [v for k, v in params.items() if k.startswith("SpotInstanceRequestId.")]
    ours = {spot_request_id(i): i for i in st.spot_launched}
    if not ids or not all(i in ours for i in ids):
        return None
    items = ""
    for rid in ids:
        st.spot_ended[ours[rid]] = ("cancelled", "request-canceled-and-instance-running")
        items += f"<item><spotInstanceRequestId>{rid}</spotInstanceRequestId>"
        items += "<state>cancelled</state></item>"
    return ec2_answer(
        request,
        f"<CancelSpotInstanceRequestsResponse><requestId>{uuid.uuid4()}</requestId>"
        f"<spotInstanceRequestSet>{items}</spotInstanceRequestSet>"
        "</CancelSpotInstanceRequestsResponse>",
    )


def _notice_clock(st: State, knobs: dict[str, Any], launched: float) -> float | None:
    """Where ``spot-notice`` counts ``after_s`` from for an instance launched at ``launched``:
    the launch, or with ``after_file`` the first time the file was found (None before)."""
    if not knobs["after_file"]:
        return launched
    if st.spot_armed is None:
        if not os.path.exists(knobs["after_file"]):
            return None
        st.spot_armed = time.monotonic()
    return max(launched, st.spot_armed)


def _spot_reclaim(st: State, knobs: dict[str, Any], parsed: dict[str, Any]) -> None:
    """Past notice + grace: the instance is terminated (for real, on moto) by EC2."""
    for res in parsed.get("Reservations", []):
        for inst in res.get("Instances", []):
            iid = inst.get("InstanceId")
            launched = st.spot_launched.get(iid)
            t0 = None if launched is None else _notice_clock(st, knobs, launched)
            if t0 is None or time.monotonic() - t0 < knobs["after_s"] + knobs["grace_s"]:
                continue
            if iid not in st.spot_gone:
                st.spot_gone.add(iid)
                st.spot_ended[iid] = ("closed", "instance-terminated-no-capacity")
                threading.Thread(target=_terminate, args=(iid,), daemon=True).start()
            inst["State"] = {"Code": 48, "Name": "terminated"}
            inst["StateReason"] = {
                "Code": "Server.SpotInstanceTermination",
                "Message": "Server.SpotInstanceTermination: Spot instance termination",
            }


def _terminate(instance_id: str) -> None:
    from netfleet import aws

    region = os.environ.get("AWS_DEFAULT_REGION", "us-east-1")
    with contextlib.suppress(Exception):  # best effort, as EC2's own reclaim is invisible
        aws.client("ec2", region).terminate_instances(InstanceIds=[instance_id])


def _ecs_after(st: State, p: dict[str, Any], op: str, parsed: dict[str, Any]) -> None:
    if op == "RunTask" and "eventual" in p:
        for task in parsed.get("tasks", []):
            st.fresh_tasks[task["taskArn"]] = p["eventual"]["describes"]
    if op == "DescribeTasks" and "task-stops" in p:
        knobs = p["task-stops"]
        for task in parsed.get("tasks", []):
            arn = task.get("taskArn", "")
            st.task_seen[arn] = st.task_seen.get(arn, 0) + 1
            if st.task_seen[arn] > knobs["after_describes"]:
                task["lastStatus"] = task["desiredStatus"] = "STOPPED"
                task["stopCode"] = "EssentialContainerExited"
                task["stoppedReason"] = knobs["reason"]
                for c in task.get("containers", []):
                    c["lastStatus"], c["exitCode"] = "STOPPED", 137


_PARAMS = "netfleet_faults_params"


def _keep_params(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
    """The call's flattened query parameters, for the ``after-call`` handlers (``context``)."""
    body = params.get("body")
    if isinstance(body, dict):
        context[_PARAMS] = {str(k): str(v) for k, v in body.items()}


def _dry_vpc_params(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
    """moto creates a VPC for ``CreateVpc DryRun=true`` (AWS never does): the dry run is sent
    with a CIDR moto refuses *after* its IAM check (``/8``), and :func:`_dry_vpc_answer` turns
    that refusal into AWS's ``DryRunOperation``; a denial stays a denial."""
    if params.get("DryRun"):
        params["CidrBlock"] = "10.0.0.0/8"
        context["netfleet_dry_vpc"] = True


def _dry_vpc_answer(parsed: Any, context: dict[str, Any], **_: Any) -> None:
    error = parsed.get("Error", {}) if isinstance(parsed, dict) else {}
    if context.get("netfleet_dry_vpc") and error.get("Code") == "InvalidVpc.Range":
        error["Code"] = "DryRunOperation"
        error["Message"] = "Request would have succeeded, but DryRun flag is set."


def install(registry: Registry) -> None:
    state()  # a bad NETFLEET_AWS_FAULTS fails now, not inside a botocore hook
    registry.sessions.append(register)


def _role_created(parsed: Any, **_: Any) -> None:
    if isinstance(parsed, dict) and parsed.get("Role"):
        st = state()
        with st.lock:
            st.role_created = time.monotonic()
            st.role_arn = str(parsed["Role"].get("Arn", ""))


def register(session: Any) -> None:
    session.register("before-send.ec2", before_send)
    session.register("before-send.ecs", before_send)
    session.register("after-call.ec2", after_call)
    session.register("after-call.ec2.RunInstances", _slow_launch)
    session.register("before-call.ec2.RunInstances", _keep_params)
    session.register("before-call.ec2.DescribeSpotInstanceRequests", _keep_params)
    session.register("after-call.ecs", after_call)
    session.register("after-call.iam.CreateRole", _role_created)
    session.register("before-parameter-build.ec2.CreateVpc", _dry_vpc_params)
    session.register("after-call.ec2.CreateVpc", _dry_vpc_answer)
