"""Expand a campaign into runs: the matrix product, include/exclude, repeats, order, run keys."""

from __future__ import annotations

import gc
import hashlib
import json
import random
from collections import Counter
from collections.abc import Iterable
from typing import NamedTuple

from netfleet.engines.params import EngineParams
from netfleet.plan.topology import topology_rounds
from netfleet.spec.matrix import combinations
from netfleet.spec.models import CampaignSpec, TestBase

#: seconds a run costs beyond its measured time (server start, connect, teardown) — an estimate
RUN_OVERHEAD_S = 1.5


class PlannedRun(NamedTuple):
    """One run the campaign will execute. ``run_key`` is deterministic: the same spec gives the
    same keys, whatever the order, so a later run can tell what it has already done. (A tuple:
    a 1,000-host mesh plans a million of them.)"""

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


def params_digest(engine: str, params: EngineParams) -> str:
    """10 hex digits of sha256 over the engine and every resolved parameter (sorted JSON)."""
    pjson = json.dumps({"engine": engine, **params.model_dump()}, sort_keys=True, default=str)
    return hashlib.sha256(pjson.encode()).hexdigest()[:10]


def run_key(test: str, digest: str, client: str, server: str, repeat: int) -> str:
    """``<test>-<params digest>-<client>-<server>-r<repeat>``: readable, deterministic, and a
    safe file name (test and host names are restricted to ``[A-Za-z0-9._-]``). No hashing per
    run: a 1,000-host mesh has a million runs."""
    return f"{test}-{digest}-{client}-{server}-r{repeat}"


#: one run of one repeat of a test: client, server, params, params digest, timeout
_Item = tuple[str, str, EngineParams, str, float]


def _test_items(test: TestBase, campaign_hosts: list[str]) -> list[_Item]:
    """One repeat of a test, in plan order: its matrix combinations — for a topology, round by
    round, each combination over the round's pairs."""
    combos = []
    for combo in combinations(test):
        overrides = {k: v for k, v in combo.items() if k not in ("client", "server")}
        params = test.engine_params(overrides)
        pjson = params_digest(test.engine, params)
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
    per_test = [(test, _test_items(test, hosts)) for test in spec.tests]
    runs: Iterable[tuple[TestBase, int, _Item]] = (
        (test, repeat, item)
        for repeat in range(spec.repeats)
        for test, items in per_test
        for item in items
    )
    if spec.order == "shuffled":
        runs = list(runs)
        random.Random(spec.seed).shuffle(runs)
    new, cls = tuple.__new__, PlannedRun  # NamedTuple's own __new__ is a Python call: skip it
    return [
        new(
            cls,
            (
                seq,
                f"{t.name}-{digest}-{client}-{server}-r{repeat}",  # = run_key(...)
                t.name,
                repeat,
                client,
                server,
                t.subject,
                t.engine,
                params,
                timeout,
            ),
        )
        for seq, (t, repeat, (client, server, params, digest, timeout)) in enumerate(runs)
    ]


def estimate_seconds(spec: CampaignSpec, runs: list[PlannedRun]) -> float:
    """Wall time estimate: measured time + per-run overhead + cooldowns between runs."""
    if not runs:
        return 0.0
    # runs share their params objects: price each distinct one once
    counts = Counter(id(r.params) for r in runs)
    per = {id(r.params): r.params for r in runs}
    measured = sum((per[i].measured_seconds() + RUN_OVERHEAD_S) * n for i, n in counts.items())
    return measured + spec.cooldown * (len(runs) - 1)
