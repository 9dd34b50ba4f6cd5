"""AWS ENA allowance counters (``ethtool -S``): cumulative packets queued or dropped because the
instance exceeded its allowance. Non-zero deltas around a run mean the *instance's* limit, not
the network's. Other drivers simply do not have them (then nothing is recorded)."""

from __future__ import annotations

import re
from typing import Any

from netfleet.errors import HostError
from netfleet.hosts.base import Host

COUNTERS = (
    "bw_in_allowance_exceeded",
    "bw_out_allowance_exceeded",
    "pps_allowance_exceeded",
    "conntrack_allowance_exceeded",
    "linklocal_allowance_exceeded",
)
_LINE = re.compile(r"^\s*([A-Za-z0-9_]+):\s*(\d+)\s*$")


def parse_stats(text: str) -> dict[str, int]:
    """The allowance counters found in ``ethtool -S`` output."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        m = _LINE.match(line)
        if m and m.group(1) in COUNTERS:
            out[m.group(1)] = int(m.group(2))
    return out


async def stats_text(host: Host, interface: str | None) -> str:
    """``ethtool -S INTERFACE`` output now; "" without ethtool or a known interface."""
    if not interface:
        return ""
    try:
        res = await host.run(["ethtool", "-S", interface], timeout=10)
    except HostError:
        return ""
    return res.stdout if res.returncode == 0 else ""


async def read_counters(host: Host, interface: str | None) -> dict[str, int]:
    """The host's allowance counters now; {} without ENA, ethtool or a known interface."""
    return parse_stats(await stats_text(host, interface))


async def snapshot(
    hosts: list[Host], facts: dict[str, dict[str, Any]]
) -> dict[str, dict[str, int]]:
    """Counters of every host that has them, by host name."""
    out: dict[str, dict[str, int]] = {}
    for host in hosts:
        found = await read_counters(host, facts.get(host.name, {}).get("interface"))
        if found:
            out[host.name] = found
    return out


def deltas(
    before: dict[str, dict[str, int]], after: dict[str, dict[str, int]]
) -> dict[str, dict[str, int]]:
    """after − before per host and counter (hosts present in both)."""
    return {
        name: {k: after[name][k] - v for k, v in counters.items() if k in after[name]}
        for name, counters in before.items()
        if name in after
    }
