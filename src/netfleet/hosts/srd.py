"""AWS ENA Express (SRD) counters from ``ethtool -S``: ``ena_srd_mode`` (a bitmap — bit 0 ENA
Express on, bit 1 UDP over SRD on), ``ena_srd_tx_pkts``, ``ena_srd_eligible_tx_pkts``,
``ena_srd_rx_pkts`` (cumulative) and ``ena_srd_resource_utilization`` (a percentage now), as the
AWS EC2 User Guide documents them ("Metrics for ENA Express", ENA driver 2.8+).

Read apart from the allowance counters (:mod:`netfleet.hosts.ena`) on purpose: they are not
allowance counters and must not feed the "allowance exceeded" advice. Other drivers (veth,
virtio) print no ``ena_srd_*`` line: then nothing is known (ENA Express ``None``).
"""

from __future__ import annotations

import re
from typing import Any

from netfleet.hosts import ena
from netfleet.hosts.base import Host

PREFIX = "ena_srd_"
#: instantaneous values (not counters): kept as read after the run, never differenced
GAUGES = ("ena_srd_mode", "ena_srd_resource_utilization")
_LINE = re.compile(r"^\s*(ena_srd_[A-Za-z0-9_]+):\s*(\d+)\s*$")


def parse_srd(text: str) -> dict[str, int]:
    """The ``ena_srd_*`` values found in ``ethtool -S`` output ({} without them)."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        m = _LINE.match(line)
        if m:
            out[m.group(1)] = int(m.group(2))
    return out


def express_on(values: dict[str, int]) -> bool | None:
    """ENA Express on (``ena_srd_mode`` bit 0), or None when the NIC reports no mode."""
    mode = values.get("ena_srd_mode")
    return None if mode is None else bool(mode & 1)


async def read_srd(host: Host, interface: str | None) -> dict[str, int]:
    """The host's SRD values now; {} without ENA Express support, ethtool or an interface."""
    return parse_srd(await ena.stats_text(host, interface))


def over_run(before: dict[str, int], after: dict[str, int]) -> dict[str, Any]:
    """What a run records: counters as after − before, gauges as read after (before when the
    after-read is missing, e.g. an interrupted run)."""
    out: dict[str, Any] = {}
    for key in sorted(set(before) | set(after)):
        if key in GAUGES:
            out[key] = after.get(key, before.get(key))
        elif key in before and key in after:
            out[key] = after[key] - before[key]
    return out
