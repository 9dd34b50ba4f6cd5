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


async def preflight(spec: CampaignSpec, hosts: dict[str, Host], runs: list[PlannedRun]) -> Ready:
    used = sorted({r.client for r in runs} | {r.server for r in runs})
    await asyncio.gather(*(hosts[h].check() for h in used))
    engine_names = sorted({t.engine for t in spec.tests})
    engines: dict[tuple[str, str], EngineInfo] = {}
    for name in engine_names:
        infos = await asyncio.gather(*(ENGINES[name].probe(hosts[h]) for h in used))
        engines.update({(h, name): info for h, info in zip(used, infos, strict=True)})
    facts_list = await asyncio.gather(*(hosts[h].facts() for h in used))
    facts = dict(zip(used, facts_list, strict=True))
    for h in used:
        for name in engine_names:
            facts[h][f"{name}_version"] = engines[(h, name)].version
    test_engine = {t.name: t.engine for t in spec.tests}
    problems: list[str] = []
    for run in runs:
        engine = ENGINES[test_engine[run.test]]
        for host in (run.client, run.server):
            for why in engine.unsupported(run.params, engines[(host, engine.name)]):
                msg = f"test {run.test!r} on host {host!r}: {why}"
                if msg not in problems:
                    problems.append(msg)
    if problems:
        raise EngineError(
            "preflight failed, nothing ran:\n  " + "\n  ".join(problems),
            hint="install a newer engine on those hosts or drop those options",
        )
    return Ready(engines, facts)
