"""Spot: the current price, and telling a reclaim from any other end of an instance.

* :func:`current_prices` — the latest ``DescribeSpotPriceHistory`` price per type (Linux/UNIX)
  in a zone; used by the cost estimate for ``market: spot`` (on-demand prices otherwise).
* :func:`reclaim_reason` — "interrupted by spot reclaim" when EC2 terminated the instance
  itself (state reason ``Server.SpotInstanceTermination``), else None.
* :class:`Watcher` — polls the campaign's instances during a run and calls back once per
  instance that EC2 took away; the runner then records the runs on it as *interrupted*, not
  *failed*.
* :class:`NoticeProbe` (``backing: ssh``, spot) — asks each instance's metadata service (IMDSv2)
  over SSH for the spot interruption notice, about two minutes before EC2 acts.

moto cannot set a state reason (its terminate always says ``Client.UserInitiatedShutdown``), so
the simulated backing marks a reclaim with the tag :data:`SIM_REASON_TAG` before terminating
(``netfleet_sim.spot.reclaim``, outside the product); only a watcher built with ``sim=True``
reads that tag. The real
response shape is tested with botocore's Stubber.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import re
from collections.abc import Callable
from typing import Any

SPOT_CODE = "Server.SpotInstanceTermination"
SIM_REASON_TAG = "netfleet:sim-state-reason"
RECLAIMED = "interrupted by spot reclaim"


def current_prices(ec2: Any, zone: str | None, types: list[str]) -> dict[str, float]:
    """Latest spot price (USD/h) per type, Linux/UNIX, in ``zone`` (any zone when None)."""
    if not types:
        return {}
    kwargs: dict[str, Any] = {
        "InstanceTypes": sorted(set(types)),
        "ProductDescriptions": ["Linux/UNIX"],
        "StartTime": dt.datetime.now(dt.UTC),
    }
    if zone:
        kwargs["AvailabilityZone"] = zone
    latest: dict[str, tuple[str, float]] = {}
    for page in ec2.get_paginator("describe_spot_price_history").paginate(**kwargs):
        for item in page.get("SpotPriceHistory", []):
            itype, stamp = item.get("InstanceType"), str(item.get("Timestamp", ""))
            try:
                price = float(item["SpotPrice"])
            except (KeyError, ValueError, TypeError):
                continue
            if itype in types and (itype not in latest or stamp > latest[itype][0]):
                latest[itype] = (stamp, price)
    return {t: p for t, (_, p) in latest.items()}


def reclaim_reason(instance: dict[str, Any], *, sim: bool = False) -> str | None:
    """Why EC2 took ``instance`` (a DescribeInstances item) away, if it was a spot reclaim."""
    state = instance.get("State", {}).get("Name")
    if state not in ("shutting-down", "terminated", "stopping", "stopped"):
        return None
    code = str(instance.get("StateReason", {}).get("Code", ""))
    if sim:
        tags = {t.get("Key"): t.get("Value") for t in instance.get("Tags", [])}
        code = str(tags.get(SIM_REASON_TAG) or code)
    if code == SPOT_CODE:
        return f"{RECLAIMED}: EC2 terminated {instance.get('InstanceId')} ({code})"
    return None


class _Rounds:
    """A background task that runs :meth:`round` every ``every_s`` seconds until stopped;
    a failed round is tried again next time (the run goes on)."""

    every_s: float
    task: asyncio.Task[None] | None = None

    def active(self) -> bool:
        return True

    async def round(self) -> None:
        raise NotImplementedError

    async def _loop(self) -> None:
        while True:
            with contextlib.suppress(Exception):
                await self.round()
            await asyncio.sleep(self.every_s)

    def start(self) -> None:
        if self.task is None and self.active():
            self.task = asyncio.get_running_loop().create_task(self._loop())

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)
            self.task = None


class Watcher(_Rounds):
    """Polls DescribeInstances for ``instance_ids`` every ``every_s`` seconds (in a thread: boto3
    blocks) and calls ``on_reclaim(instance_id, reason)`` once per reclaimed instance."""

    def __init__(
        self,
        ec2: Any,
        instance_ids: list[str],
        on_reclaim: Callable[[str, str], None],
        *,
        sim: bool,
        every_s: float = 1.0,
    ) -> None:
        self.ec2 = ec2
        self.ids = list(instance_ids)
        self.on_reclaim = on_reclaim
        self.sim = sim
        self.every_s = every_s
        self.seen: set[str] = set()

    def poll(self) -> None:
        todo = [i for i in self.ids if i not in self.seen]
        if not todo:
            return
        resp = self.ec2.describe_instances(InstanceIds=todo)
        for res in resp.get("Reservations", []):
            for inst in res.get("Instances", []):
                reason = reclaim_reason(inst, sim=self.sim)
                if reason and inst["InstanceId"] not in self.seen:
                    self.seen.add(inst["InstanceId"])
                    self.on_reclaim(inst["InstanceId"], reason)

    def active(self) -> bool:
        return bool(self.ids)

    async def round(self) -> None:
        await asyncio.to_thread(self.poll)


# -- the two-minute notice (backing ssh) ----------------------------------------------------
#: the instance metadata service, as the instance sees it
IMDS = "http://169.254.169.254"
#: IMDSv2 (required on every instance): a session token first, then the instance-action
#: document, which exists (HTTP 200) only once EC2 has scheduled the interruption — about two
#: minutes ahead. ``$0`` is the metadata base URL (a constant, never a spec string).
_NOTICE_SCRIPT = (
    't=$(curl -sf -m 2 -X PUT "$0/latest/api/token" '
    '-H "X-aws-ec2-metadata-token-ttl-seconds: 60") && '
    'curl -sf -m 2 -H "X-aws-ec2-metadata-token: $t" "$0/latest/meta-data/spot/instance-action"'
    " || true"
)
_TIME_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def notice_argv(base: str = IMDS) -> list[str]:
    """What the probe runs on the instance (over SSH): prints the notice document, if any."""
    return ["sh", "-c", _NOTICE_SCRIPT, base]


def parse_notice(text: str) -> str | None:
    """The reason for a scheduled interruption (``{"action": "terminate", "time": …}``), or
    None when there is none (empty output: the document answers 404 until then)."""
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    if not isinstance(doc, dict) or doc.get("action") not in ("terminate", "stop", "hibernate"):
        return None
    when = str(doc.get("time", ""))
    when = when if _TIME_RE.match(when) else "an unstated time"
    return f"{RECLAIMED}: EC2 notice: {doc['action']} at {when} (two-minute warning)"


class NoticeProbe(_Rounds):
    """Asks each instance (``(instance_id, host)``, over its SSH host) every ``every_s`` seconds
    for the spot interruption notice and calls ``on_notice(instance_id, reason)`` once per
    instance: the runner then starts nothing more there and records what the interruption cuts
    as *interrupted*, about two minutes before EC2 acts."""

    def __init__(
        self,
        hosts: list[tuple[str, Any]],
        on_notice: Callable[[str, str], None],
        *,
        every_s: float = 5.0,
        base: str = IMDS,
    ) -> None:
        self.hosts = list(hosts)
        self.on_notice = on_notice
        self.every_s = every_s
        self.argv = notice_argv(base)
        self.seen: set[str] = set()

    async def poll(self) -> None:
        for iid, host in self.hosts:
            if iid in self.seen:
                continue
            with contextlib.suppress(Exception):  # unreachable now: asked again next round
                result = await host.run(self.argv, timeout=10)
                reason = parse_notice(result.stdout)
                if reason:
                    self.seen.add(iid)
                    self.on_notice(iid, reason)

    def active(self) -> bool:
        return bool(self.hosts)

    async def round(self) -> None:
        await self.poll()
