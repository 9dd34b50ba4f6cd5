"""EC2 vCPU quotas, checked before anything is launched.

AWS limits the vCPUs of running instances per account, region, market and instance class
(Service Quotas, service code ``ec2``). A fleet above the quota fails at ``RunInstances`` with
``VcpuLimitExceeded`` after part of it is already up — PerfKitBenchmarker users know the
half-launched fleet. netfleet adds up the campaign's vCPUs per region and quota (types' vCPUs
from DescribeInstanceTypes), adds the vCPUs already running there, and refuses to launch when
the sum is above the quota, naming the quota code to raise.

Only the classes whose quota codes are listed in :data:`QUOTAS` are checked (standard, G/VT, P
and on-demand X); a type of another class (F, Inf, DL, Trn, HPC, Mac, high memory, spot X) is
named in a note as not checked. Fargate's on-demand vCPUs (:data:`FARGATE`) are checked against
the campaign's tasks (:func:`check_fargate`). When the
Service Quotas API cannot answer (no permission, an emulator without EC2 quotas), the check is
skipped with a note saying why: it is a safety net, never a reason to refuse on its own.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from netfleet.cloud.aws.plan import catalogue

#: (class, market) → (quota code, AWS's quota name); the vCPU quotas of running instances
QUOTAS: dict[tuple[str, str], tuple[str, str]] = {
    ("standard", "on-demand"): (
        "L-1216C47A",
        "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances",
    ),
    ("standard", "spot"): (
        "L-34B43A08",
        "All Standard (A, C, D, H, I, M, R, T, Z) Spot Instance Requests",
    ),
    ("g", "on-demand"): ("L-DB2E81BA", "Running On-Demand G and VT instances"),
    ("g", "spot"): ("L-3819A6DF", "All G and VT Spot Instance Requests"),
    ("p", "on-demand"): ("L-417A185B", "Running On-Demand P instances"),
    ("p", "spot"): ("L-7212CCBC", "All P Spot Instance Requests"),
    ("x", "on-demand"): ("L-7295265B", "Running On-Demand X instances"),
}
#: Fargate's on-demand vCPUs (service code ``fargate``): every running task's vCPUs count
FARGATE = ("L-3032A538", "Fargate On-Demand vCPU resource count")
_FAMILY = re.compile(r"^([a-z]+?)\d")


def quota_class(instance_type: str) -> str | None:
    """``standard``, ``g``, ``p`` or ``x`` by the type's family letters; None for a class not
    checked."""
    m = _FAMILY.match(instance_type)
    family = m.group(1) if m else instance_type.split(".", 1)[0]
    if family in ("vt", "g") or (family.startswith("g") and len(family) <= 2):
        return "g"
    if family.startswith("p") and len(family) <= 2:
        return "p"
    if family == "x":  # x1, x1e, x2idn, x2iedn, x2iezn, x8g: their own quota
        return "x"
    if family[0] in "acdhimrtz" and not family.startswith(("inf", "dl", "trn", "hpc", "mac")):
        return "standard"
    return None


def quota_of(instance_type: str, market: str) -> tuple[str, str] | None:
    """(code, AWS's name) of the vCPU quota ``instance_type`` counts against in ``market``;
    None when netfleet does not know it."""
    cls = quota_class(instance_type)
    return None if cls is None else QUOTAS.get((cls, market))


@dataclass
class QuotaCheck:
    """What the check found: the rows (region, quota, need, running, quota value) and notes."""

    rows: list[tuple[str, str, int, int, float | None]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    over: list[str] = field(default_factory=list)


def need_per_quota(
    members: Iterable[tuple[str, str, int]], vcpus: Mapping[str, int], market: str
) -> tuple[dict[tuple[str, str], int], list[str]]:
    """(region, quota code) → vCPUs the campaign launches; and the types not checked.
    ``members``: (region, instance type, count)."""
    need: dict[tuple[str, str], int] = {}
    unchecked = []
    for region, itype, count in members:
        cls = quota_class(itype)
        if cls is None or (cls, market) not in QUOTAS:
            unchecked.append(itype)
            continue
        code = QUOTAS[(cls, market)][0]
        need[(region, code)] = need.get((region, code), 0) + vcpus.get(itype, 0) * count
    return need, sorted(set(unchecked))


def running_vcpus(ec2: Any, code: str, market: str, vcpus_of: Callable[[str], int]) -> int:
    """vCPUs of the region's pending/running instances that count against quota ``code``."""
    total = 0
    pages = ec2.get_paginator("describe_instances").paginate(
        Filters=[{"Name": "instance-state-name", "Values": ["pending", "running"]}]
    )
    for page in pages:
        for res in page.get("Reservations", []):
            for inst in res.get("Instances", []):
                spot = inst.get("InstanceLifecycle") == "spot"
                if spot != (market == "spot"):
                    continue
                cls = quota_class(inst["InstanceType"])
                if cls and QUOTAS.get((cls, market), ("",))[0] == code:
                    total += vcpus_of(inst["InstanceType"])
    return total


def check(
    members: Iterable[tuple[str, str, int]],
    vcpus: Mapping[str, int],
    market: str,
    client: Callable[[str, str], Any],
) -> QuotaCheck:
    """Compare the campaign's vCPUs (+ what already runs) with each quota. ``client(service,
    region)`` makes boto3 clients (``service-quotas``, ``ec2``)."""
    from botocore.exceptions import BotoCoreError, ClientError

    out = QuotaCheck()
    need, unchecked = need_per_quota(members, vcpus, market)
    if unchecked:
        out.notes.append(f"vCPU quota not checked for {', '.join(unchecked)} (another class)")
    names = {code: name for code, name in QUOTAS.values()}
    known = dict(vcpus)
    for (region, code), wanted in sorted(need.items()):
        try:
            quota = client("service-quotas", region).get_service_quota(
                ServiceCode="ec2", QuotaCode=code
            )["Quota"]["Value"]
            ec2 = client("ec2", region)
            running = running_vcpus(ec2, code, market, partial(_vcpus, ec2, known=known))
        except (BotoCoreError, ClientError, KeyError) as exc:
            why = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
            out.notes.append(f"vCPU quota {code} in {region} not checked: {why}")
            out.rows.append((region, code, wanted, 0, None))
            continue
        out.rows.append((region, code, wanted, running, float(quota)))
        if running + wanted > quota:
            out.over.append(
                f"{region}: the campaign needs {wanted} vCPUs of {code} ({names[code]}), "
                f"{running} already run there, the quota is {quota:g}"
            )
    return out


def _vcpus(ec2: Any, itype: str, *, known: dict[str, int]) -> int:
    if itype not in known:
        found = catalogue.describe(ec2, [itype]).get(itype)
        known[itype] = found.vcpus if found else 0
    return known[itype]


def check_campaign(cs: Any) -> QuotaCheck:
    """:func:`check` for a cloud block (:class:`netfleet.cloud.aws.campaign.CloudSpec`): each fleet
    in its region, the types' vCPUs from DescribeInstanceTypes."""
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, ClientError

    from netfleet import aws

    quick = Config(connect_timeout=5, read_timeout=10, retries={"max_attempts": 2})

    def client(service: str, region: str) -> Any:
        return aws.client(service, region, config=quick)

    members = [(cs.region_of(f), f.instance_type, f.count) for f in cs.fleets]
    types = sorted({t for _, t, _ in members})
    try:
        found = catalogue.describe(client("ec2", cs.region), types)
    except (BotoCoreError, ClientError) as exc:
        return QuotaCheck(notes=[f"vCPU quotas not checked: no instance type data ({exc})"])
    vcpus = {t: i.vcpus for t, i in found.items()}
    out = check([m for m in members if m[1] in vcpus], vcpus, cs.market, client)
    unknown = [t for t in types if t not in vcpus]
    if unknown:
        out.notes.append(f"vCPU quota not checked for {', '.join(unknown)} (not in the catalogue)")
    return out


def check_fargate(region: str, vcpus: float) -> QuotaCheck:
    """Fargate's on-demand vCPU quota (:data:`FARGATE`) in ``region`` against the campaign's
    tasks' ``vcpus`` (tasks already running elsewhere in the account are not counted: a
    note says so). Not read: a note, never a refusal."""
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, ClientError

    from netfleet import aws

    code, name = FARGATE
    out = QuotaCheck()
    quick = Config(connect_timeout=5, read_timeout=10, retries={"max_attempts": 2})
    try:
        quota = aws.client("service-quotas", region, config=quick).get_service_quota(
            ServiceCode="fargate", QuotaCode=code
        )["Quota"]["Value"]
    except (BotoCoreError, ClientError, KeyError) as exc:
        why = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
        out.notes.append(f"Fargate vCPU quota {code} in {region} not checked: {why}")
        out.rows.append((region, code, int(vcpus), 0, None))
        return out
    out.rows.append((region, code, int(vcpus), 0, float(quota)))
    out.notes.append(
        f"Fargate: the tasks need {vcpus:g} vCPUs of {code} ({name}) in {region}, quota "
        f"{quota:g} (tasks already running in the account not counted)"
    )
    if vcpus > quota:
        out.over.append(
            f"{region}: the Fargate tasks need {vcpus:g} vCPUs of {code} ({name}), the quota "
            f"is {quota:g}"
        )
    return out


def guard(result: QuotaCheck) -> None:
    """Refuse before launch when a quota would be exceeded (no ``--yes``: AWS would refuse):
    the neutral :func:`netfleet.cloud.guard.quota`."""
    from netfleet.cloud import guard as cloud_guard
    from netfleet.cloud.seam import Quota

    cloud_guard.quota(Quota(tuple(result.over), tuple(result.notes)))


def enforce(cs: Any, say: Callable[[str], None]) -> None:
    """:func:`check_campaign`, each note to ``say``, then :func:`guard` (``run``, ``cloud up``)."""
    found = check_campaign(cs)
    for note in found.notes:
        say(f"note: {note}")
    guard(found)
