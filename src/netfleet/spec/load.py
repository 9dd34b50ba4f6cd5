"""Load a campaign spec and check it completely — including every matrix combination — before
anything runs or is written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from netfleet.errors import SpecError
from netfleet.spec.models import CampaignSpec
from netfleet.spec.yamlsrc import LineMap, load_model, load_yaml, problems_from


def load_spec(path: str | Path) -> CampaignSpec:
    """Validate a campaign spec file; raise SpecError naming file, field path, line and fix."""
    spec = load_model(CampaignSpec, path, what="campaign spec")
    _, lines = load_yaml(path)
    _check_combinations(spec, lines, str(path))
    return spec


def _check_combinations(spec: CampaignSpec, lines: LineMap, file: str) -> None:
    from netfleet.plan.matrix import combinations

    problems: list[tuple[str, int | None, str]] = []
    for ti, test in enumerate(spec.tests):
        for combo in combinations(test):
            params = {k: v for k, v in combo.items() if k not in ("client", "server")}
            try:
                test.engine_params(params)
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
    if problems:
        raise SpecError(f"{file}: invalid campaign spec", file=file, problems=problems)


def _short(combo: dict[str, Any]) -> str:
    return json.dumps(combo, default=str)


def spec_schema() -> dict[str, Any]:
    """The JSON Schema of a campaign spec."""
    return CampaignSpec.model_json_schema()
