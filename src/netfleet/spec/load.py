"""Load a campaign spec and check it completely — including every matrix combination — before
anything runs or is written."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from netfleet.errors import SpecError
from netfleet.spec.models import CampaignSpec
from netfleet.spec.yamlsrc import LineMap, load_yaml, problems_from, validate_model


def load_spec(path: str | Path, *, max_runs: int | None = None) -> CampaignSpec:
    """Validate a campaign spec file; raise SpecError naming file, field path, line and fix.
    ``max_runs``: the most runs it may plan (default :func:`max_runs`: NETFLEET_MAX_RUNS, else
    :data:`MAX_RUNS`)."""
    data, lines = load_yaml(path)
    data = _with_inventory(data, Path(path), lines)
    spec = validate_model(CampaignSpec, data, lines, path, what="campaign spec")
    _check_combinations(spec, lines, str(path), max_runs)
    return spec


def _with_inventory(data: Any, path: Path, lines: LineMap) -> Any:
    """The spec's data with the hosts of its ``inventory:`` file merged into ``hosts``."""
    if not isinstance(data, dict) or not isinstance(data.get("inventory"), str):
        return data
    from netfleet.spec.inventory import load_inventory

    inventory = (path.parent / Path(data["inventory"]).expanduser()).resolve()
    if not inventory.is_file():
        raise SpecError(
            f"{path}: invalid campaign spec",
            file=str(path),
            problems=[
                (
                    "inventory",
                    lines.get(("inventory",)),
                    f"{inventory} is not a file: fix the path (relative to the spec)",
                )
            ],
        )
    listed = load_inventory(inventory)
    own = data.get("hosts") or {}
    clash = sorted(set(listed) & set(own)) if isinstance(own, dict) else []
    if clash:
        raise SpecError(
            f"{path}: invalid campaign spec",
            file=str(path),
            problems=[
                (f"hosts.{h}", lines.get(("hosts", h)), f"{h!r} is also in {inventory}: rename one")
                for h in clash
            ],
        )
    merged = {**listed, **own} if isinstance(own, dict) else own
    return {**data, "hosts": merged}


def _check_combinations(
    spec: CampaignSpec, lines: LineMap, file: str, cap: int | None = None
) -> None:
    from netfleet.spec.bandwidth import budget_problem
    from netfleet.spec.matrix import combinations

    problems: list[tuple[str, int | None, str]] = []
    _check_matrix_size(spec, lines, file)
    _check_run_count(spec, lines, file, max_runs() if cap is None else cap)
    for ti, test in enumerate(spec.tests):
        for combo in combinations(test):
            params = {k: v for k, v in combo.items() if k not in ("client", "server")}
            try:
                resolved = test.engine_params(params)
            except ValidationError as exc:
                for path, _line, msg in problems_from(exc, {}):
                    key: tuple[str | int, ...] = ("tests", ti, "matrix", path)
                    where = key if key in lines else ("tests", ti, "include")
                    line = lines.get(where) or lines.get(("tests", ti))
                    problems.append(
                        (
                            f"tests.{ti}.matrix.{path}",
                            line,
                            f"{msg} (in combination {_short(combo)})",
                        )
                    )
                break
            why = spec.bandwidth_budget and budget_problem(resolved, spec.bandwidth_budget)
            if why:
                line = lines.get(("tests", ti, "params")) or lines.get(("tests", ti))
                problems.append((f"tests.{ti}.params", line, f"{why} (test {test.name})"))
                break
    if problems:
        raise SpecError(f"{file}: invalid campaign spec", file=file, problems=problems)


#: matrix combinations one test may have (override: NETFLEET_MAX_COMBINATIONS)
MAX_COMBINATIONS = 10_000


def _check_matrix_size(spec: CampaignSpec, lines: LineMap, file: str) -> None:
    """Refuse a matrix whose product is too large *before* expanding it (a 100×100×100 matrix
    would otherwise validate a million combinations)."""
    raw = os.environ.get("NETFLEET_MAX_COMBINATIONS", "").strip()
    cap = int(raw) if raw.isdigit() else MAX_COMBINATIONS
    for ti, test in enumerate(spec.tests):
        sizes = [len(v) for v in test.matrix.values()]
        total = math.prod(sizes) + len(test.include)
        if total > cap:
            shape = " × ".join(f"{len(v)} {k}" for k, v in test.matrix.items())
            line = lines.get(("tests", ti, "matrix")) or lines.get(("tests", ti))
            raise SpecError(
                f"{file}: invalid campaign spec",
                file=file,
                problems=[
                    (
                        f"tests.{ti}.matrix",
                        line,
                        f"test {test.name!r} has {shape} = {total:,} combinations, over the cap "
                        f"of {cap:,}: shrink the matrix, split the test, or set "
                        "NETFLEET_MAX_COMBINATIONS",
                    )
                ],
            )


#: runs a campaign may plan (override: ``--max-runs`` or NETFLEET_MAX_RUNS): a full mesh of
#: 1,000 hosts (bench/plan_mesh.py: about a million runs, 10 s and 1 GB to plan)
MAX_RUNS = 1_000_000


def max_runs() -> int:
    raw = os.environ.get("NETFLEET_MAX_RUNS", "").strip()
    return int(raw) if raw.isdigit() else MAX_RUNS


def _pairs(test: Any, hosts: list[str]) -> int:
    """The (client, server) pairs one combination of ``test`` runs over."""
    if test.topology is None:
        return 1
    members = len(test.topology.members(hosts))
    if test.topology.kind == "pairs":
        return members // 2
    if test.topology.kind == "star":
        return members
    return members * (members - 1)  # mesh: every ordered pair


def _check_run_count(spec: CampaignSpec, lines: LineMap, file: str, cap: int) -> None:
    """Refuse a campaign of more runs than the cap *before* expanding it (counted: repeats ×
    each test's combinations × its pairs; excludes not subtracted, so at most that many): 10
    million runs would otherwise end planning in a MemoryError."""
    hosts = list(spec.hosts)
    per_test = [
        (math.prod(len(v) for v in t.matrix.values()) + len(t.include)) * _pairs(t, hosts)
        for t in spec.tests
    ]
    total = spec.repeats * sum(per_test)
    if total <= cap:
        return
    biggest = max(range(len(per_test)), key=per_test.__getitem__)
    shape = f"{spec.repeats:,} repeats × {sum(per_test):,} runs a repeat"
    raise SpecError(
        f"{file}: invalid campaign spec",
        file=file,
        problems=[
            (
                "repeats" if spec.repeats > 1 else f"tests.{biggest}",
                lines.get(("repeats",)) or lines.get(("tests", biggest)),
                f"the campaign plans up to {shape} = {total:,} runs, over the cap of {cap:,} "
                f"(test {spec.tests[biggest].name!r}: {per_test[biggest]:,} a repeat): "
                "shrink it, or pass --max-runs (NETFLEET_MAX_RUNS)",
            )
        ],
    )


def _short(combo: dict[str, Any]) -> str:
    return json.dumps(combo, default=str)


def spec_schema() -> dict[str, Any]:
    """The JSON Schema of a campaign spec."""
    return CampaignSpec.model_json_schema()
