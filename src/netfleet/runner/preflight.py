"""Preflight: every host and tool is checked before run 1 starts."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from netfleet.engines import ENGINES, EngineInfo
from netfleet.errors import EngineError, HostError, NetfleetError
from netfleet.hosts.base import Host
from netfleet.hosts.standing import StandingServerHost
from netfleet.plan.matrix import PlannedRun
from netfleet.runner.tools import ensure_tools, required_tools
from netfleet.spec.models import CampaignSpec


async def check_hosts(hosts: list[Host]) -> None:
    """Reach every host at once (SSH: connect, verify the host key, log in); one error lists
    every host that is not usable."""
    results = await asyncio.gather(*(h.check() for h in hosts), return_exceptions=True)
    problems: list[NetfleetError] = []
    for result in results:
        if isinstance(result, NetfleetError):
            problems.append(result)
        elif isinstance(result, BaseException):
            raise result
    if len(problems) == 1:
        raise problems[0]
    if problems:
        raise HostError(
            "hosts are not usable, nothing ran:\n  "
            + "\n  ".join(str(p).replace("\n", "\n    ") for p in problems)
        )


@dataclass
class Ready:
    """What preflight learned: engine versions and facts per host."""

    engines: dict[tuple[str, str], EngineInfo]
    facts: dict[str, dict[str, Any]]


def needed(runs: list[PlannedRun]) -> set[tuple[str, str]]:
    """(host, engine) pairs the runs need: every client, and servers of engines with one."""
    pairs = set()
    for run in runs:
        pairs.add((run.client, run.engine))
        if ENGINES[run.engine].needs_server:
            pairs.add((run.server, run.engine))
    return pairs


async def preflight(
    spec: CampaignSpec,
    hosts: dict[str, Host],
    runs: list[PlannedRun],
    *,
    install: bool = False,
    say: Callable[[str], None] | None = None,
) -> Ready:
    """Check every host, tool and engine the runs need, before the first run. Raises with every
    problem at once; nothing has run or been written when it does. Missing tools are installed
    with each host's package manager only when ``install`` is true."""
    del spec
    used = sorted({r.client for r in runs} | {r.server for r in runs})
    await check_hosts([hosts[h] for h in used])
    # a standing server (a Fargate task's own iperf3) runs no command of ours: nothing to probe
    standing = {h for h in used if isinstance(hosts[h], StandingServerHost)}
    tools = {h: t for h, t in required_tools(runs).items() if h not in standing}
    await ensure_tools(hosts, tools, install_missing=install, say=say)
    pairs = sorted((h, e) for h, e in needed(runs) if h not in standing)
    infos = await asyncio.gather(*(ENGINES[e].probe(hosts[h]) for h, e in pairs))
    engines: dict[tuple[str, str], EngineInfo] = dict(zip(pairs, infos, strict=True))
    facts_list = await asyncio.gather(*(hosts[h].facts() for h in used))
    facts = dict(zip(used, facts_list, strict=True))
    for (h, name), info in engines.items():
        facts[h][f"{name}_version"] = info.version
    problems: list[str] = []
    for run in runs:
        engine = ENGINES[run.engine]
        for host in (run.client, run.server):
            if (host, run.engine) not in engines:
                continue
            for why in engine.unsupported(run.params, engines[(host, run.engine)]):
                msg = f"test {run.test!r} on host {host!r}: {why}"
                if msg not in problems:
                    problems.append(msg)
    if problems:
        raise EngineError(
            "preflight failed, nothing ran:\n  " + "\n  ".join(problems),
            hint="install a newer engine on those hosts or drop those options",
        )
    return Ready(engines, facts)
