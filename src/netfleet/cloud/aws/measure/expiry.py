"""The dead-man switch of a ``netfleet run`` campaign follows its plan (issue 25.3).

The AWS provider (:class:`netfleet.cloud.aws.provider.AwsProvider`) is told the plan's expected
wall time before its first acquire. From it:

* :func:`switch_s` — the switch every resource is stamped with and every instance arms at boot
  (``netfleet:expires-at``, the user-data's power-off timer): the plan's end (boot and install
  included) plus :func:`netfleet.cloud.aws.plan.costs.switch_minutes`' margin — not the fixed
  ``expires_after_minutes``, which only applies when no plan is known (``cloud up``).
* :func:`start` — the provider starts a
  :class:`~netfleet.cloud.aws.measure.deadman.Heartbeat` with its network: every beat pushes
  the campaign's stamp to ``max(plan end + margin, now + grace)`` and re-arms each instance's
  own timer to the same moment. While the controller lives the
  switch never fires, even when the plan runs late; after a lost controller (``kill -9``) the
  beats stop and the switch fires at the plan's end plus its margin, or ``grace`` after the
  last beat when the plan was already late.

How the re-arm reaches an instance: the on-instance switch is a systemd timer armed by
cloud-init (:func:`netfleet.cloud.bootstrap.userdata.deadline_commands`); nothing on the
instance reads the tag, so backing ``ssh`` re-arms over SSH (``sudo -n sh -c`` with the argv of
:func:`netfleet.cloud.aws.measure.deadman.rearm_argv`, integers only), the tag being what
``cloud reap`` reads. Backing ``sim`` has no timer to re-arm (moto's instances run nothing):
the tag is the switch, and its times are scaled by the sim's ``time_scale`` like the credits.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import shlex
from collections.abc import Callable, Sequence
from typing import Any

from netfleet.cloud.aws.measure import deadman
from netfleet.cloud.aws.plan.costs import SWITCH_MARGIN, SWITCH_MIN
from netfleet.hosts.base import Host

#: beat interval and grace after the last beat, real AWS (backing ssh)
EVERY_S = 60.0
GRACE_S = 15 * 60.0
#: the sim's beat interval; its grace is GRACE_S × time_scale, at least SIM_GRACE_S (a beat
#: against a loaded emulator takes seconds: the grace must outlast a few slow ones)
SIM_EVERY_S = 1.0
SIM_GRACE_S = 10.0
#: boot + install before the first run (waves.Timing's defaults)
BOOT_S = 180.0


def switch_s(expected_s: float, scale: float = 1.0) -> float:
    """Seconds from launch to the switch: the plan's end (boot and install included) plus the
    margin (``SWITCH_MARGIN`` of it, at least ``SWITCH_MIN`` minutes × ``scale``)."""
    held = expected_s + BOOT_S * scale
    return held + max(SWITCH_MIN * 60 * scale, held * SWITCH_MARGIN)


def rearm_over_ssh(
    hosts: Callable[[], Sequence[Host]], loop: asyncio.AbstractEventLoop
) -> Callable[[int], None]:
    """A ``rearm(minutes)`` for the heartbeat's thread: each live instance's timer replaced over
    its SSH connection (on the controller's event loop); raises naming the hosts it missed."""

    def rearm(minutes: int) -> None:
        script = "; ".join(shlex.join(argv) for argv in deadman.rearm_argv(int(minutes)))
        missed = []
        for host in hosts():
            if host.lost():
                continue
            job = host.run(["sudo", "-n", "sh", "-c", script], timeout=30)
            try:
                asyncio.run_coroutine_threadsafe(job, loop).result(40)
            except Exception as exc:  # one unreachable instance must not stop the others
                missed.append(f"{host.name}: {exc}")
        if missed:
            raise RuntimeError("re-arm failed on " + "; ".join(missed))

    return rearm


def start(
    clients: dict[str, Any],
    campaign: str,
    launched_at: dt.datetime,
    expected_s: float,
    *,
    sim: bool,
    scale: float,
    rearm: Callable[[int], None] | None,
    installation: str | None = None,
    ecs: dict[str, Any] | None = None,
) -> deadman.Heartbeat:
    """The campaign's heartbeat, started on the running loop (see the module doc)."""
    every = SIM_EVERY_S if sim else EVERY_S
    grace = max(GRACE_S * scale, deadman.MIN_BEATS * every, SIM_GRACE_S if sim else 0.0)
    until = launched_at + dt.timedelta(seconds=switch_s(expected_s, scale))
    beat = deadman.Heartbeat(
        clients,
        campaign,
        switch_s=grace,
        every_s=every,
        rearm=rearm,
        until=until,
        installation=installation,
        ecs=ecs,
    )
    beat.start()
    return beat
