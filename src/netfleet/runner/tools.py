"""The tools every host of a campaign needs, checked before run 1 (installed with --install).

netfleet itself needs ``ip``, ``ss``, ``tc`` and ``ethtool`` (iproute2, ethtool) on each host:
facts (MTU, qdisc, offloads) and waiting for a server to listen. Each engine adds the binaries it
declares (``tools`` in its module). Engines that choose among several tools (latency,
throughput) declare none and check for themselves in their probe.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from netfleet.engines import ENGINES
from netfleet.errors import HostError, NetfleetError
from netfleet.hosts.base import Host
from netfleet.hosts.local import LocalHost
from netfleet.hosts.packages import install, install_hint, missing_tools
from netfleet.plan.matrix import PlannedRun

BASE_TOOLS = ("ip", "ss", "tc", "ethtool")


#: an engine's ``tool:`` value → the command it runs, where the two differ
_COMMANDS = {"iperf2": "iperf", "iperf3-multi": "iperf3"}


def engine_tools(engine: str, params: object = None) -> tuple[str, ...]:
    """The commands an engine declares (``tools`` in its module); for an engine that chooses
    its tool per run (latency, throughput), the one ``params.tool`` asks for (``auto``: none,
    the engine's probe decides on the host)."""
    declared = ENGINES.get(engine)
    if declared is None:
        return ()
    asked = str(getattr(params, "tool", "auto") or "auto")
    command = _COMMANDS.get(asked, asked)
    if not declared.tools and asked != "auto" and command in declared.packages:
        return (command,)
    return tuple(declared.tools)


def required_tools(runs: list[PlannedRun]) -> dict[str, list[str]]:
    """host name → the tools it needs for these runs (base tools first)."""
    need: dict[str, list[str]] = {}
    for run in runs:
        engine = ENGINES.get(run.engine)
        serves = engine.needs_server if engine is not None else True
        for host in (run.client, *([run.server] if serves else [])):
            tools = need.setdefault(host, list(BASE_TOOLS))
            tools += [t for t in engine_tools(run.engine, run.params) if t not in tools]
        need.setdefault(run.server, list(BASE_TOOLS))
    return need


def _installer(host: Host) -> tuple[str, Host]:
    """Where a host's packages live: local and netns hosts share this machine's filesystem (and
    a namespace has no route to a mirror), so they install once, here."""
    if host.kind in ("local", "netns"):
        return "this machine", LocalHost(name="this machine", address="127.0.0.1")
    return host.name, host


async def ensure_tools(
    hosts: dict[str, Host],
    need: dict[str, list[str]],
    *,
    install_missing: bool = False,
    say: Callable[[str], None] | None = None,
) -> None:
    """Check every host has its tools. Missing ones are installed when ``install_missing``,
    else one HostError lists every host's missing tools with the fix."""
    names = sorted(need)
    found = await asyncio.gather(
        *(missing_tools(hosts[h], need[h]) for h in names), return_exceptions=True
    )
    missing: dict[str, list[str]] = {}
    problems: list[str] = []
    for name, result in zip(names, found, strict=True):
        if isinstance(result, NetfleetError):
            problems.append(str(result))
        elif isinstance(result, BaseException):
            raise result
        elif result:
            missing[name] = result
    if problems:
        raise HostError("hosts are not ready, nothing ran:\n  " + "\n  ".join(problems))
    if not missing:
        return
    if not install_missing:
        lines = [
            f"host {h}: {', '.join(t)} missing ({install_hint(t)})" for h, t in missing.items()
        ]
        raise HostError(
            "required tools are missing, nothing ran:\n  " + "\n  ".join(lines),
            hint="install them, or let netfleet do it: netfleet run --install SPEC",
        )
    targets: dict[str, tuple[Host, list[str]]] = {}
    for name, tools in missing.items():
        key, where = _installer(hosts[name])
        _, wanted = targets.setdefault(key, (where, []))
        wanted += [t for t in tools if t not in wanted]
    for key, (where, tools) in targets.items():
        if say is not None:
            say(f"installing {', '.join(tools)} on {key}")
        await install(where, tools)
    still = {h: await missing_tools(hosts[h], missing[h]) for h in missing}
    left = [f"host {h}: {', '.join(t)}" for h, t in still.items() if t]
    if left:
        raise HostError(
            "still missing after installing:\n  " + "\n  ".join(left),
            hint="check the hosts' PATH and package repositories",
        )
