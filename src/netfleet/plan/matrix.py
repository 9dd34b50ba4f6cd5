"""Expand a campaign into runs: the matrix product, include/exclude, repeats, order, run keys."""

from __future__ import annotations

import hashlib
import itertools
import json
import random
from collections.abc import Iterator
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
    return _key_of(
        test, dump(client), dump(server), dump(params, sort_keys=True, default=str), repeat
    )


def _key_of(test: str, client_json: str, server_json: str, params_json: str, repeat: int) -> str:
    """The run key from JSON pieces: the very text ``json.dumps({"t", "c", "s", "p", "r"},
    sort_keys=True)`` gives, built without re-serialising params for every run."""
    ident = (
        f'{{"c": {client_json}, "p": {params_json}, "r": {repeat}, '
        f'"s": {server_json}, "t": {json.dumps(test)}}}'
    )
    digest = hashlib.sha256(ident.encode()).hexdigest()[:10]
    return f"{test}-{digest}-r{repeat}"


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
    hosts = list(spec.hosts)
    per_test = [(test, _test_items(test, hosts)) for test in spec.tests]
    runs = [
        (test, repeat, item)
        for repeat in range(spec.repeats)
        for test, items in per_test
        for item in items
    ]
    if spec.order == "shuffled":
        random.Random(spec.seed).shuffle(runs)
    names = {h: json.dumps(h) for h in hosts}
    out = []
    for seq, (test, repeat, (client, server, params, pjson, timeout)) in enumerate(runs):
        key = _key_of(test.name, names[client], names[server], pjson, repeat)
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
