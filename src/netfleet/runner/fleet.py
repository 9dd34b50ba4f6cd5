"""Check a fleet without running a campaign: reach every host (SSH host keys verified, login),
find its tools and iperf3 version, optionally install what is missing.

``netfleet inventory check hosts.yaml`` is this, as a table.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from netfleet.engines import ENGINES
from netfleet.errors import NetfleetError
from netfleet.hosts.base import Host
from netfleet.hosts.packages import install, missing_tools
from netfleet.hosts.registry import build_host
from netfleet.runner.tools import BASE_TOOLS, engine_tools
from netfleet.spec.inventory import load_inventory


@dataclass(frozen=True)
class HostCheck:
    name: str
    kind: str
    address: str
    ok: bool
    iperf3: str
    detail: str


async def check_host(host: Host, tools: list[str], install_missing: bool = False) -> HostCheck:
    """One host: reachable? tools present (installed when asked)? iperf3 version?"""
    version = ""
    try:
        await host.check()
        missing = await missing_tools(host, tools)
        if missing and install_missing:
            await install(host, missing)
            missing = await missing_tools(host, tools)
        if "iperf3" not in missing:
            version = (await ENGINES["iperf3"].probe(host)).version
        ok = not missing
        detail = "ready" if ok else f"missing {', '.join(missing)} (netfleet ... --install)"
    except NetfleetError as exc:
        ok, detail = False, str(exc)
    finally:
        await host.close()
    return HostCheck(host.name, host.kind, host.address, ok, version, detail)


async def check_fleet(
    inventory: str | Path, install_missing: bool = False, lab_state_dir: Path | None = None
) -> list[HostCheck]:
    """Check every host of an inventory file at once."""
    specs = load_inventory(inventory)
    tools = [*BASE_TOOLS, *engine_tools("iperf3")]
    hosts = [build_host(name, spec, lab_state_dir) for name, spec in specs.items()]
    return list(await asyncio.gather(*(check_host(h, tools, install_missing) for h in hosts)))
