"""Shapers as tc tbf arguments.

"out" is a tbf on the host's own veth (what it sends); "in" a tbf on the switch port toward the
host (what it receives). A steady tbf gets a burst of max(128 KiB, 20 ms at rate): room for one GSO
super-packet, and for the tokens of a 20 ms stall of the host on a busy machine (a 1 ms burst lost
them: up to 4 % of the goodput); a 4 s iperf3 run gets rate x 1448/1514 x 1.000-1.005 (the first
full bucket shows). A credit tbf is
``rate BASE burst BUCKET peakrate PEAK mtu 65536``, which reproduced a cloud credit burst exactly.
"""

from __future__ import annotations

import math

from netfleet.lab.models import (
    STEADY_BURST_SECONDS,
    STEADY_MIN_BURST,
    TBF_PEAK_MTU,
    Shaper,
)

#: How long a packet may wait in the tbf queue before it is dropped.
LATENCY = "100ms"


def steady_burst(rate: float) -> int:
    """Burst in bytes for a steady tbf at ``rate`` bits/s."""
    return max(STEADY_MIN_BURST, math.ceil(rate / 8 * STEADY_BURST_SECONDS))


def queue_limit(shaper: Shaper) -> list[str]:
    """How deep the tbf's queue is: ``limit BYTES`` when the shaper says, else ``latency 100ms``
    (tc then sets limit = rate x 100 ms + burst)."""
    return ["latency", LATENCY] if shaper.queue is None else ["limit", str(round(shaper.queue))]


def queue_delay(shaper: Shaper) -> float:
    """Seconds a packet waits at the tail of a full queue: queue bytes / rate. What a load that
    fills the queue adds to the round trip (latency under load)."""
    if shaper.queue is not None:
        return shaper.queue * 8 / shaper.rate
    burst = steady_burst(shaper.rate) if shaper.bucket is None else shaper.bucket
    return float(LATENCY.removesuffix("ms")) / 1000 + burst * 8 / shaper.rate


def tbf_args(shaper: Shaper) -> list[str]:
    """The words after ``tc qdisc add dev DEV root``. tc reads a bare size as bytes."""
    rate = f"{round(shaper.rate)}bit"
    if shaper.peak is None or shaper.bucket is None:
        burst = steady_burst(shaper.rate)
        return ["tbf", "rate", rate, "burst", str(burst), *queue_limit(shaper)]
    return [
        "tbf", "rate", rate, "burst", str(round(shaper.bucket)),
        "peakrate", f"{round(shaper.peak)}bit", "mtu", str(TBF_PEAK_MTU), *queue_limit(shaper),
    ]  # fmt: skip
