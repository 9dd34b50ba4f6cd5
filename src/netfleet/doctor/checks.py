"""What ``netfleet doctor`` looks at, per host and per client→server pair.

Per host: tool versions and capabilities, CPU count, kernel, interface and MTU, offloads, NIC
driver (``ethtool -i``: ena, ixgbevf, gve, virtio_net, veth...) and whether ENA allowance
counters exist. Per pair: ICMP reachability, the path MTU to the peer (``tracepath``), and TCP
reachability of the port range engines use (a one-off iperf3 server on the peer).
"""

from __future__ import annotations

import asyncio
import random
import re
import time
from typing import Any

from netfleet.engines import tools as engine_tools
from netfleet.engines.probes import VERSION_PROBES, tool_version, version_text
from netfleet.errors import HostError
from netfleet.hosts import ena
from netfleet.hosts.base import Host
from netfleet.hosts.packages import missing_tools
from netfleet.lab.gateway import RATE_LABEL

#: version landmarks worth knowing before a campaign (FIELD-NOTES)
CAPABILITIES: dict[str, tuple[str, tuple[int, ...]]] = {
    "iperf3 --bidir": ("iperf3", (3, 7)),
    "iperf3 one thread per stream": ("iperf3", (3, 16)),
    "iperf3 --json-stream": ("iperf3", (3, 17)),
    "iperf2 --bounceback": ("iperf2", (2, 1)),
}
PORT_LOW, PORT_HIGH = 20000, 39999
#: command → the name its version probe (and doctor's report) knows it by
PROBE_NAMES = {argv[0]: name for name, (argv, _) in VERSION_PROBES.items()}
#: tools that print their version with ``-V`` (``--version`` is not theirs)
DASH_V = ("ping", "tracepath")


async def _missing(host: Host, commands: list[str]) -> list[str]:
    try:
        return await missing_tools(host, commands)
    except HostError:
        return []


async def _run(host: Host, argv: list[str], timeout: float = 15) -> tuple[int, str]:
    try:
        res = await host.run(argv, timeout=timeout)
    except HostError as exc:
        return 127, str(exc)
    return res.returncode, res.stdout + res.stderr


async def host_report(host: Host) -> dict[str, Any]:
    """Everything doctor knows about one host."""
    facts = await host.facts()
    tools: dict[str, str | None] = {}
    versions: dict[str, tuple[int, ...]] = {}
    commands = [*engine_tools(), *(t for t in ("ping", "tracepath") if t not in engine_tools())]
    missing = set(await _missing(host, commands))
    for command in commands:
        name = PROBE_NAMES.get(command, command)  # iperf 2's command is "iperf"
        if command in missing:
            tools[name] = None
        elif name in VERSION_PROBES:
            v = await tool_version(host, name)
            tools[name] = version_text(v) if v else "installed"
            if v:
                versions[name] = v
        else:  # a tool netfleet knows no version probe for: the first line it prints
            rc, out = await _run(host, [command, "-V" if command in DASH_V else "--version"])
            tools[name] = (out.strip().splitlines() or ["?"])[0][:40] if rc == 0 else "installed"
    rc, out = await _run(host, ["ethtool", "--version"])
    tools["ethtool"] = out.strip()[:40] if rc == 0 else None
    caps = {
        name: tool in versions and versions[tool] >= need
        for name, (tool, need) in CAPABILITIES.items()
    }
    iface = facts.get("interface")
    driver = None
    if iface and tools["ethtool"]:
        rc, out = await _run(host, ["ethtool", "-i", str(iface)])
        m = re.search(r"^driver:\s*(\S+)", out, re.M)
        driver = m.group(1) if rc == 0 and m else None
    counters = await ena.read_counters(host, iface)
    return {
        "host": host.name,
        "address": host.address,
        "kernel": facts.get("kernel"),
        "cpus": facts.get("cpus"),
        "interface": iface,
        "mtu": facts.get("mtu"),
        "qdisc": facts.get("qdisc"),
        "offloads": facts.get("offloads"),
        "driver": driver,
        "ena_counters": counters or None,
        "tools": tools,
        "capabilities": caps,
    }


def parse_tracepath(text: str) -> int | None:
    m = re.search(r"Resume: pmtu (\d+)", text)
    if m:
        return int(m.group(1))
    found = re.findall(r"pmtu (\d+)", text)
    return int(found[-1]) if found else None


async def path_mtu(client: Host, address: str) -> int | None:
    rc, out = await _run(client, ["tracepath", "-n", "-m", "10", address], timeout=30)
    del rc
    return parse_tracepath(out)


async def ping_ok(client: Host, address: str) -> bool:
    rc, _ = await _run(client, ["ping", "-n", "-c", "1", "-W", "2", address], timeout=10)
    return rc == 0


async def _listening(server: Host, port: int, deadline: float) -> bool:
    while time.monotonic() < deadline:
        rc, out = await _run(server, ["ss", "-Hltn", f"sport = :{port}"], timeout=5)
        if rc == 0 and out.strip():
            return True
        await asyncio.sleep(0.05)
    return False


async def port_ok(client: Host, server: Host, port: int | None = None) -> tuple[bool, str]:
    """Can the client open a TCP connection to an engine port on the server? A one-off iperf3
    server on the port, a 1 KB iperf3 transfer from the client; stopped by PID either way."""
    port = port or random.randint(PORT_LOW, PORT_HIGH)
    argv = ["iperf3", "--server", "--one-off", "--port", str(port), "--bind", server.address]
    try:
        proc = await server.start(argv)
    except HostError as exc:
        return False, str(exc)
    try:
        if not await _listening(server, port, time.monotonic() + 5):
            return False, f"no iperf3 server came up on port {port}"
        rc, out = await _run(
            client, ["iperf3", "--client", server.address, "--port", str(port), "-n", "1K"]
        )
        ok = rc == 0 and "error" not in out.lower()
        return ok, f"tcp port {port}: " + ("ok" if ok else out.strip()[-200:])
    finally:
        await proc.stop(grace=1)


async def pair_report(client: Host, server: Host, client_mtu: int | None) -> dict[str, Any]:
    pmtu = await path_mtu(client, server.address)
    reachable = await ping_ok(client, server.address)
    port, detail = await port_ok(client, server)
    return {
        "client": client.name,
        "server": server.name,
        "address": server.address,
        "ping": reachable,
        "path_mtu": pmtu,
        "interface_mtu": client_mtu,
        "port": port,
        "port_detail": detail,
        # a lab's gateway: its cap, or "uncapped" (the path-MTU advice says so)
        "labels": {k: v for k, v in server.labels.items() if k == RATE_LABEL},
    }
