"""Preflight: every host and tool is checked before run 1 starts."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from netfleet.engines import ENGINES, EngineInfo
from netfleet.errors import EngineError
from netfleet.hosts.base import Host
from netfleet.plan.matrix import PlannedRun
from netfleet.spec.models import CampaignSpec


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


async def preflight(spec: CampaignSpec, hosts: dict[str, Host], runs: list[PlannedRun]) -> Ready:
    """Check every host and engine the runs need, before the first run. Raises with every
    problem at once; nothing has run or been written when it does."""
    del spec
    used = sorted({r.client for r in runs} | {r.server for r in runs})
    await asyncio.gather(*(hosts[h].check() for h in used))
    pairs = sorted(needed(runs))
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
