"""Bucket state is part of the measurement: before a burst or credit test, was the host's credit
bucket possibly drained by recent traffic?

The journal knows when each host last carried test traffic. A burst test (a ``credit`` run, or
an adaptive iperf3 run) on a host that may burst (not known fixed-rate, see
:mod:`netfleet.engines.burstable`) and carried traffic recently either waits for the bucket to
refill — when the refill time is known, from the host label ``refill_s`` (seconds from empty to
full, e.g. what ``netfleet analyze`` measured) — or goes ahead and records
``notes.bucket_state = {"state": "possibly-partial", ...}`` so that analyze flags the bucket as
possibly low.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from netfleet.engines.burstable import host_burstability
from netfleet.plan.matrix import PlannedRun
from netfleet.runner.journal import Traffic

#: without a known refill time, a host idle at least this long is not flagged: a guess, said so
#: in the note (r4.large: 2700 Gbit / 0.75 Gbit/s = 60 min from empty; most buckets refill
#: faster, but a half-full one after 10 min is common)
UNKNOWN_REFILL_S = 3600.0


@dataclass(frozen=True)
class BucketCheck:
    """What to do before the run: wait ``wait_s`` (> 0: the refill time is known), and what
    to record in ``notes.bucket_state`` (None: nothing to say)."""

    wait_s: float
    note: dict[str, Any] | None
    message: str | None


def is_burst_test(run: PlannedRun) -> bool:
    return run.engine == "credit" or getattr(run.params, "until_steady", None) is not None


def _refill_s(labels: Mapping[str, Any], key: str = "refill_s") -> float | None:
    value = labels.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


def check_bucket(
    run: PlannedRun,
    hosts: Mapping[str, Mapping[str, Any]],
    last_traffic: Callable[[str], datetime | None],
    busy: Callable[[str], bool],
    now: datetime | None = None,
    wait_refill: bool = False,
) -> BucketCheck:
    """``hosts``: host name → labels (client and server of ``run``). Without ``refill_s`` a
    lab host's ``lab_refill_s`` (its shaper's σ/ρ, lab seconds) is the threshold instead of
    :data:`UNKNOWN_REFILL_S`; ``refill_s`` is waited for, and with ``wait_refill``
    (``run --wait-refill``) ``lab_refill_s`` too."""
    if not is_burst_test(run):
        return BucketCheck(0.0, None, None)
    now = now or datetime.now(UTC)
    wait = 0.0
    partial: list[dict[str, Any]] = []
    for name, labels in hosts.items():
        if host_burstability(labels) == "fixed":
            continue
        last = last_traffic(name)
        if last is None and not busy(name):
            continue
        idle = 0.0 if busy(name) or last is None else max(0.0, (now - last).total_seconds())
        refill = _refill_s(labels)
        lab = _refill_s(labels, "lab_refill_s")
        if refill is None and wait_refill and lab is not None and not busy(name):
            wait = max(wait, lab - idle)
            continue
        if refill is not None and not busy(name):
            wait = max(wait, refill - idle)
            continue
        needed = refill if refill is not None else lab if lab is not None else UNKNOWN_REFILL_S
        if idle < needed:
            partial.append(
                {
                    "host": name,
                    "idle_s": round(idle, 1),
                    "refill_s": refill if refill is not None else lab,
                    "busy": busy(name),
                    "why": "another run is using it"
                    if busy(name)
                    else _why(idle, refill, lab, labels),
                }
            )
    if partial:
        names = ", ".join(p["host"] for p in partial)
        return BucketCheck(
            0.0,
            {"state": "possibly-partial", "hosts": partial},
            f"{run.test}: the credit bucket of {names} may be partly drained "
            f"({partial[0]['why']}): the bucket measured may be low",
        )
    if wait > 0:
        return BucketCheck(
            wait,
            {"state": "refilled", "waited_s": round(wait, 1)},
            f"{run.test}: waiting {wait:.0f} s for the credit bucket to refill "
            + ("(--wait-refill: the lab's shaper)" if wait_refill else "(label refill_s)"),
        )
    return BucketCheck(0.0, None, None)


def _why(idle: float, refill: float | None, lab: float | None, labels: Mapping[str, Any]) -> str:
    """ "bucket not full at start: …" with what the refill time rests on."""
    if refill is None and lab is None:
        return (
            f"it carried traffic {idle:.0f} s before; refill time unknown (label refill_s), "
            f"assumed up to {UNKNOWN_REFILL_S:.0f} s"
        )
    needed = refill if refill is not None else lab
    assert needed is not None
    scale = _refill_s(labels, "lab_time_scale")
    cloud = f" ({needed / scale:,.0f} s in the cloud)" if scale and refill is None else ""
    source = "label refill_s" if refill is not None else "the lab's shaper: bucket / rate"
    return (
        f"bucket not full at start: this host sent until {idle:.0f} s before; refill needs "
        f"~{needed:,.0f} s{cloud} ({source})"
    )


def refill_warnings(
    runs: Sequence[PlannedRun],
    hosts: Mapping[str, Mapping[str, Any]],
    traffic: Mapping[str, Traffic],
    now: datetime | None = None,
) -> list[str]:
    """One line per burstable host a burst test will use within its refill time after its
    last traffic in another campaign (``traffic``: :func:`netfleet.runner.journal.
    recent_traffic`), with what the refill time rests on and what to do: what ``plan`` and
    ``run`` say before anything starts."""
    now = now or datetime.now(UTC)
    used = sorted({h for r in runs if is_burst_test(r) for h in (r.client, r.server)})
    out = []
    for name in used:
        labels, last = hosts.get(name, {}), traffic.get(name)
        if last is None or host_burstability(labels) == "fixed":
            continue
        idle = max(0.0, (now - last.at).total_seconds())
        refill, lab = _refill_s(labels), _refill_s(labels, "lab_refill_s")
        needed = refill if refill is not None else lab if lab is not None else UNKNOWN_REFILL_S
        if idle >= needed:
            continue
        why = _why(idle, refill, lab, labels).replace("bucket not full at start: ", "")
        todo = (
            "run waits for it (label refill_s)"
            if refill is not None
            else f"wait {needed - idle:,.0f} s, or run with --wait-refill"
            if lab is not None
            else "its bucket may not be full"
        )
        out.append(
            f"{name}: a burst test within its refill time — campaign {last.campaign}: {why}; {todo}"
        )
    return out
