"""Find which tools a host has, and their versions, without raising when one is missing.

The multi-tool engines (``latency``, ``throughput``) choose per run from what both hosts have;
:class:`ToolsInfo` carries that, plus the host's CPU count.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from netfleet.engines.contract import EngineInfo, Host
from netfleet.errors import HostError

Version = tuple[int, ...]

#: tool → (argv that prints its version, pattern of the version)
VERSION_PROBES: dict[str, tuple[list[str], str]] = {
    "iperf3": (["iperf3", "--version"], r"iperf (\d+)\.(\d+)(?:\.(\d+))?"),
    "iperf2": (["iperf", "--version"], r"iperf version (\d+)\.(\d+)(?:\.(\d+))?"),
    "sockperf": (["sockperf", "--version"], r"sockperf, version (\d+)\.(\d+)(?:\.(\d+))?"),
}


@dataclass(frozen=True)
class ToolsInfo(EngineInfo):
    """An engine made of several tools: which are installed (with versions), and CPUs."""

    tools: dict[str, Version] = field(default_factory=dict)
    cpus: int = 1
    #: the kernel's boot id: two hosts with the same one (lab namespaces, loopback) share CPUs
    boot_id: str = ""

    def has(self, tool: str, at_least: Version = ()) -> bool:
        return tool in self.tools and self.tools[tool] >= at_least


def version_text(v: Version) -> str:
    return ".".join(map(str, v))


async def tool_version(host: Host, tool: str) -> Version | None:
    """The tool's version on ``host``, or None when it is not installed."""
    argv, pattern = VERSION_PROBES[tool]
    try:
        res = await host.run(argv, timeout=15)
    except HostError:
        return None
    m = re.search(pattern, res.stdout + res.stderr)
    if m is None:
        return None
    return tuple(int(x) for x in m.groups() if x is not None)


async def cpu_count(host: Host) -> int:
    try:
        res = await host.run(["nproc"], timeout=10)
    except HostError:
        return 1
    text = res.stdout.strip()
    return int(text) if text.isdigit() else 1


async def probe_tools(host: Host, name: str, tools: list[str]) -> ToolsInfo:
    """A :class:`ToolsInfo` for engine ``name`` over ``tools`` (missing ones left out)."""
    found: dict[str, Version] = {}
    for tool in tools:
        v = await tool_version(host, tool)
        if v is not None:
            found[tool] = v
    cpus = await cpu_count(host)
    text = ", ".join(f"{t} {version_text(v)}" for t, v in found.items()) or "none"
    return ToolsInfo(name, text, (), tools=found, cpus=cpus, boot_id=await boot_id(host))


async def boot_id(host: Host) -> str:
    """The running kernel's boot id ("" if unreadable): equal ids mean one machine."""
    try:
        res = await host.run(["cat", "/proc/sys/kernel/random/boot_id"], timeout=10)
    except HostError:
        return ""
    return res.stdout.strip() if res.returncode == 0 else ""
