"""Expand a campaign into runs: the matrix product, include/exclude, repeats, order, run keys."""

from __future__ import annotations

import hashlib
import itertools
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from netfleet.spec.models import CampaignSpec, TestBase
from netfleet.spec.params import EngineParams

#: seconds a run costs beyond its measured time (server start, connect, teardown) — an estimate
RUN_OVERHEAD_S = 1.5


@dataclass(frozen=True)
class PlannedRun:
    """One run the campaign will execute. ``run_key`` is deterministic: the same spec gives the
    same keys, whatever the order, so a later run can tell what it has already done."""

    sequence: int
    run_key: str
    test: str
    repeat: int
    client: str
    server: str
    subject: str
    engine: str
    params: EngineParams
    timeout: float

    @property
    def subject_host(self) -> str:
        return self.client if self.subject == "client" else self.server

    @property
    def estimated_s(self) -> float:
        return self.params.measured_seconds() + RUN_OVERHEAD_S


def combinations(test: TestBase) -> Iterator[dict[str, Any]]:
    """The test's matrix product in written order, less excludes, plus includes."""
    keys = list(test.matrix)
    seen: list[dict[str, Any]] = []
    for values in itertools.product(*(test.matrix[k] for k in keys)):
        combo = dict(zip(keys, values, strict=True))
        if any(all(combo.get(k) == v for k, v in ex.items()) for ex in test.exclude):
            continue
        seen.append(combo)
        yield combo
    for inc in test.include:
        if inc not in seen:
            seen.append(inc)
            yield dict(inc)


def _key(test: str, client: str, server: str, params: dict[str, Any], repeat: int) -> str:
    ident = json.dumps(
        {"t": test, "c": client, "s": server, "p": params, "r": repeat}, sort_keys=True, default=str
    )
    digest = hashlib.sha256(ident.encode()).hexdigest()[:10]
    return f"{test}-{digest}-r{repeat}"


def expand(spec: CampaignSpec) -> list[PlannedRun]:
    """Every run of the campaign, in execution order."""
    runs: list[tuple[str, int, str, str, str, str, EngineParams, float]] = []
    for repeat in range(spec.repeats):
        for test in spec.tests:
            for combo in combinations(test):
                client = combo.get("client", test.client)
                server = combo.get("server", test.server)
                assert client is not None and server is not None  # checked by the spec
                overrides = {k: v for k, v in combo.items() if k not in ("client", "server")}
                params = test.engine_params(overrides)
                timeout = test.timeout or (params.measured_seconds() + 30)
                runs.append(
                    (test.name, repeat, client, server, test.subject, test.engine, params, timeout)
                )
    if spec.order == "shuffled":
        random.Random(spec.seed).shuffle(runs)
    out = []
    for seq, (name, repeat, client, server, subject, engine, params, timeout) in enumerate(runs):
        key = _key(name, client, server, {"engine": engine, **params.model_dump()}, repeat)
        out.append(
            PlannedRun(seq, key, name, repeat, client, server, subject, engine, params, timeout)
        )
    return out


def estimate_seconds(spec: CampaignSpec, runs: list[PlannedRun]) -> float:
    """Wall time estimate: measured time + per-run overhead + cooldowns between runs."""
    if not runs:
        return 0.0
    return sum(r.estimated_s for r in runs) + spec.cooldown * (len(runs) - 1)
