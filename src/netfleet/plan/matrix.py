"""Expand a campaign into runs: the matrix product, include/exclude, repeats, order, run keys."""

from __future__ import annotations

import gc
import hashlib
import itertools
import json
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from netfleet.plan.topology import topology_rounds
from netfleet.spec.models import CampaignSpec, TestBase
from netfleet.spec.params import EngineParams

#: seconds a run costs beyond its measured time (server start, connect, teardown) — an estimate
RUN_OVERHEAD_S = 1.5


@dataclass(frozen=True, slots=True)
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
    dump = json.dumps
    pjson = dump(params, sort_keys=True, default=str)
    return _key_of(test, dump(test), dump(client), dump(server), pjson, repeat)


def _key_of(test: str, tj: str, cj: str, sj: str, pj: str, repeat: int) -> str:
    """The run key from JSON pieces (test, client, server, params): the very text
    ``json.dumps({"t", "c", "s", "p", "r"}, sort_keys=True)`` gives, built without serialising
    anything per run — a 1,000-host mesh has a million runs."""
    ident = f'{{"c": {cj}, "p": {pj}, "r": {repeat}, "s": {sj}, "t": {tj}}}'
    return f"{test}-{hashlib.sha256(ident.encode()).hexdigest()[:10]}-r{repeat}"


#: one run of one repeat of a test: client, server, params, params as key JSON, timeout
_Item = tuple[str, str, EngineParams, str, float]


def _test_items(test: TestBase, campaign_hosts: list[str]) -> list[_Item]:
    """One repeat of a test, in plan order: its matrix combinations — for a topology, round by
    round, each combination over the round's pairs."""
    combos = []
    for combo in combinations(test):
        overrides = {k: v for k, v in combo.items() if k not in ("client", "server")}
        params = test.engine_params(overrides)
        pjson = json.dumps(
            {"engine": test.engine, **params.model_dump()}, sort_keys=True, default=str
        )
        timeout = test.timeout or (params.measured_seconds() + 30)
        combos.append((combo, params, pjson, timeout))
    if test.topology is None:
        items = []
        for combo, params, pjson, timeout in combos:
            client = combo.get("client", test.client)
            server = combo.get("server", test.server)
            assert client is not None and server is not None  # checked by the spec
            items.append((client, server, params, pjson, timeout))
        return items
    return [
        (client, server, params, pjson, timeout)
        for pairs in topology_rounds(test.topology, campaign_hosts)
        for _combo, params, pjson, timeout in combos
        for client, server in pairs
    ]


def expand(spec: CampaignSpec) -> list[PlannedRun]:
    """Every run of the campaign, in execution order."""
    paused = gc.isenabled()
    gc.disable()  # a million runs make no reference cycles: spare the collector's passes
    try:
        return _expand(spec)
    finally:
        if paused:
            gc.enable()


def _expand(spec: CampaignSpec) -> list[PlannedRun]:
    hosts = list(spec.hosts)
    per_test = [(test, json.dumps(test.name), _test_items(test, hosts)) for test in spec.tests]
    runs: Iterable[tuple[TestBase, str, int, _Item]] = (
        (test, tj, repeat, item)
        for repeat in range(spec.repeats)
        for test, tj, items in per_test
        for item in items
    )
    if spec.order == "shuffled":
        runs = list(runs)
        random.Random(spec.seed).shuffle(runs)
    names = {h: json.dumps(h) for h in hosts}
    out = []
    for seq, (test, tj, repeat, (client, server, params, pjson, timeout)) in enumerate(runs):
        key = _key_of(test.name, tj, names[client], names[server], pjson, repeat)
        out.append(
            PlannedRun(
                seq,
                key,
                test.name,
                repeat,
                client,
                server,
                test.subject,
                test.engine,
                params,
                timeout,
            )
        )
    return out


def estimate_seconds(spec: CampaignSpec, runs: list[PlannedRun]) -> float:
    """Wall time estimate: measured time + per-run overhead + cooldowns between runs."""
    if not runs:
        return 0.0
    return sum(r.estimated_s for r in runs) + spec.cooldown * (len(runs) - 1)
