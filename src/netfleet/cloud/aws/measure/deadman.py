"""The dead-man switch follows the plan (issue 25.3).

Every resource of a campaign carries ``netfleet:expires-at`` (``cloud reap`` deletes a campaign
whose stamp has passed) and every instance arms a power-off timer at boot
(:mod:`netfleet.cloud.bootstrap.userdata`). A fixed 120 min kills a long plan at hour two; a
long fixed switch leaves a lost controller's instances billing for hours. So:

* :func:`switch_minutes` — the switch a plan needs: its expected end plus a margin;
* :class:`Heartbeat` — while the controller lives it pushes the stamp forward by one switch
  period every ``every_s`` seconds — never before ``until``, the plan's end plus its margin —
  (and, given ``rearm``, re-arms each instance's timer: the argv of :func:`rearm_argv`); when
  the controller dies the beats stop, the stamp passes, and the instances power themselves off
  and ``reap`` finds the campaign. :mod:`netfleet.cloud.aws.measure.expiry` runs it for
  ``netfleet run``.

The switch period between beats must be several beat intervals long (:data:`MIN_BEATS`), so
one late beat cannot let the switch fire inside a running plan.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import math
import threading
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from netfleet.cloud import owner
from netfleet.cloud.aws.acquire.provision import TAG_CAMPAIGN, TAG_EXPIRES
from netfleet.cloud.aws.plan.costs import switch_minutes
from netfleet.cloud.bootstrap.userdata import deadline_commands

__all__ = ["Heartbeat", "campaign_resources", "fired", "rearm_argv", "switch_minutes"]

#: beats per switch period: a switch shorter than this many beats is refused
MIN_BEATS = 3
STAMP = "%Y-%m-%dT%H:%M:%SZ"


def rearm_argv(minutes: int) -> list[list[str]]:
    """Commands (run as root on the instance) that replace its power-off timer with one
    ``minutes`` from now: the boot timer's unit stopped, then armed again, and the late-boot
    ``shutdown`` replaced."""
    boot, late = deadline_commands(minutes)
    return [["systemctl", "stop", "netfleet-deadline.timer"], *boot, *late]


def campaign_resources(ec2: Any, campaign: str, installation: str | None = None) -> list[str]:
    """Every resource id tagged with the campaign (what ``reap`` would judge by its stamp) and,
    unless ``installation`` is None, with that installation's id: another installation's
    campaign of the same name is not ours to keep alive."""
    ids = _tagged(ec2, TAG_CAMPAIGN, campaign)
    if installation is not None:
        ids &= _tagged(ec2, owner.TAG_INSTALLATION, installation)
    return sorted(ids)


def _tagged(ec2: Any, key: str, value: str) -> set[str]:
    ids: set[str] = set()
    pages = ec2.get_paginator("describe_tags").paginate(
        Filters=[{"Name": "key", "Values": [key]}, {"Name": "value", "Values": [value]}]
    )
    for page in pages:
        ids.update(t["ResourceId"] for t in page.get("Tags", []))
    return ids


class Heartbeat:
    """Push the campaign's ``expires-at`` to now + ``switch_s`` every ``every_s`` seconds in
    each region (``clients``: region → EC2 client), in a thread of its own (boto3 blocks, and
    the event loop may be busy: :meth:`start`); ``rearm`` (optional) re-arms the instances'
    own timers with the same period (after the stamp; a tagging error does not skip it). Only
    resources carrying ``installation``'s id are stamped (None: any owner's); with ``ecs``
    (region → ECS client) the campaign's cluster and its running Fargate tasks are stamped too
    (``cloud reap`` reads the cluster's)."""

    def __init__(
        self,
        clients: dict[str, Any],
        campaign: str,
        *,
        switch_s: float,
        every_s: float,
        rearm: Callable[[int], None] | None = None,
        now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
        until: dt.datetime | None = None,
        installation: str | None = None,
        ecs: dict[str, Any] | None = None,
    ) -> None:
        if switch_s < MIN_BEATS * every_s:
            raise ValueError(
                f"a switch of {switch_s:g} s with a beat every {every_s:g} s: one late beat "
                f"could fire it; the switch must be ≥ {MIN_BEATS} beats"
            )
        self.clients = clients
        self.campaign = campaign
        self.switch_s = switch_s
        self.every_s = every_s
        self.rearm = rearm
        self.now = now
        self.until = until
        self.installation = installation
        self.ecs = ecs or {}
        self.beats = 0
        self.failures: list[str] = []
        self._thread: threading.Thread | None = None
        self._stopped = threading.Event()

    def deadline(self) -> dt.datetime:
        """When the switch fires if no beat follows: one period from now, never before
        ``until``."""
        at = self.now() + dt.timedelta(seconds=self.switch_s)
        return at if self.until is None else max(at, self.until)

    def stamp(self) -> str:
        return self.deadline().strftime(STAMP)

    def beat(self) -> None:
        """Stamp every region's resources and tasks, then re-arm; each step runs even when
        another failed, the failures raised together afterwards. The stamp comes first: it needs
        only the AWS API, while the re-arm's SSH commands wait for the controller's event loop,
        which may be busy for seconds."""
        at = self.deadline()
        value = at.strftime(STAMP)
        failed: list[str] = []

        def step(what: str, fn: Callable[[], Any]) -> None:
            try:
                fn()
            except Exception as exc:
                failed.append(f"{what}: {exc}")

        for region, ec2 in self.clients.items():
            step(f"stamp in {region}", partial(self._stamp_ec2, ec2, value))
        for region, ecs in self.ecs.items():
            step(f"stamp Fargate in {region}", partial(self._stamp_ecs, ecs, value))
        if self.rearm is not None:
            rearm = self.rearm
            minutes = max(1, math.ceil((at - self.now()).total_seconds() / 60))
            step("re-arm", lambda: rearm(minutes))
        if failed:
            raise RuntimeError("; ".join(failed))
        self.beats += 1

    def _stamp_ec2(self, ec2: Any, value: str) -> None:
        ids = campaign_resources(ec2, self.campaign, self.installation)
        for i in range(0, len(ids), 500):
            _stamp(ec2, ids[i : i + 500], value)

    def _stamp_ecs(self, ecs: Any, value: str) -> None:
        from netfleet.cloud.aws.release import fargate_teardown

        cluster = fargate_teardown.our_cluster(ecs, self.campaign, self.installation)
        if cluster is None:
            return
        tags = [{"key": TAG_EXPIRES, "value": value}]
        ecs.tag_resource(resourceArn=cluster["clusterArn"], tags=tags)
        for task in fargate_teardown.tasks(ecs, self.campaign, self.installation):
            ecs.tag_resource(resourceArn=task["taskArn"], tags=tags)

    def _run(self, loop: asyncio.AbstractEventLoop, stopped: threading.Event) -> None:
        """Beat every ``every_s`` until stopped, or until the loop that started it stops: a
        campaign that ended without :meth:`stop` does not keep its stamp alive."""
        while not loop.is_closed() and loop.is_running():
            try:
                self.beat()
            except Exception as exc:  # a failed beat is retried; the switch has MIN_BEATS slack
                self.failures.append(str(exc)[:200])
            if stopped.wait(self.every_s):
                return

    def start(self) -> None:
        """Beat in a thread of its own, not on the event loop: the controller's loop may be
        busy for seconds (a first analysis importing SciPy on a loaded machine took 8 s), and a
        beat that waits for it lets the switch fire under a running plan. Started from a
        running loop (the re-arm runs its SSH commands there)."""
        if self._thread is None:
            loop = asyncio.get_running_loop()
            self._stopped = threading.Event()
            self._thread = threading.Thread(
                target=self._run,
                args=(loop, self._stopped),
                name=f"netfleet-heartbeat-{self.campaign}",
                daemon=True,  # a controller that dies stops beating: the switch then fires
            )
            self._thread.start()

    async def stop(self) -> None:
        """Stop beating; returns once a beat in progress has ended."""
        if self._thread is not None:
            self._stopped.set()
            await asyncio.to_thread(self._thread.join)
            self._thread = None


def _stamp(ec2: Any, ids: list[str], value: str) -> None:
    """Tag ``ids`` with the stamp; CreateTags refuses the whole call for one id that is gone
    (a deleted gateway whose tags a listing still shows, an instance already released), so
    then each is stamped alone and the gone ones are passed over."""
    from botocore.exceptions import ClientError

    tags = [{"Key": TAG_EXPIRES, "Value": value}]
    try:
        ec2.create_tags(Resources=ids, Tags=tags)
        return
    except ClientError:
        if len(ids) == 1:
            raise
    for rid in ids:
        try:
            ec2.create_tags(Resources=[rid], Tags=tags)
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", ""))
            if not code.endswith("NotFound") and "Malformed" not in code:
                raise


def fired(tags: Sequence[dict[str, str]], now: dt.datetime) -> bool:
    """Whether a resource's tags say its switch has fired (its ``expires-at`` passed)."""
    stamp = next((t["Value"] for t in tags if t.get("Key") == TAG_EXPIRES), None)
    return stamp is not None and stamp < now.strftime(STAMP)
