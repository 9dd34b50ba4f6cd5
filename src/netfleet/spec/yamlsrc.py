"""YAML files validated by pydantic, with errors that name the file, the field path and the line.

Shared by campaign specs and lab files: ``load_model(Model, path)`` either returns a valid model or
raises :class:`~netfleet.errors.SpecError` listing every problem as (path, line, fix).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from netfleet.errors import SpecError

M = TypeVar("M", bound=BaseModel)
LineMap = dict[tuple[str | int, ...], int]


def _construct(node: yaml.Node, path: tuple[str | int, ...], lines: LineMap) -> Any:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = (
                yaml.safe_load(yaml.serialize(key_node))
                if not isinstance(key_node, yaml.ScalarNode)
                else _scalar(key_node)
            )
            if key in out:
                raise SpecError(
                    "duplicate key",
                    problems=[
                        (
                            ".".join(map(str, (*path, key))) or "<top>",
                            key_node.start_mark.line + 1,
                            f"the key {key!r} appears twice: keep one",
                        )
                    ],
                )
            out[key] = _construct(value_node, (*path, key), lines)
            lines[(*path, key)] = key_node.start_mark.line + 1
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_construct(item, (*path, i), lines) for i, item in enumerate(node.value)]
    return _scalar(node)


def _scalar(node: yaml.Node) -> Any:
    return yaml.SafeLoader(yaml.serialize(node)).get_single_data()


def load_yaml(path: str | Path) -> tuple[Any, LineMap]:
    """Parse YAML safely, returning the data and a map from field path to line number."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise SpecError(f"{p}: no such file", hint="check the path") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"{p}: cannot be read ({exc})") from exc
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise SpecError(
            f"{p}: not valid YAML",
            file=str(p),
            problems=[("<yaml>", line, str(getattr(exc, "problem", exc)))],
        ) from exc
    lines: LineMap = {}
    try:
        data = {} if node is None else _construct(node, (), lines)
    except SpecError as exc:
        exc.file = str(p)
        exc.message = f"{p}: invalid"
        raise
    return data, lines


def _line_for(loc: tuple[str | int, ...], lines: LineMap) -> int | None:
    for n in range(len(loc), -1, -1):
        if loc[:n] in lines:
            return lines[loc[:n]]
    return None


def problems_from(exc: ValidationError, lines: LineMap) -> list[tuple[str, int | None, str]]:
    """Turn a pydantic ValidationError into (field path, line, message) triples."""
    out = []
    for err in exc.errors():
        loc = tuple(
            x
            for x in err["loc"]
            if not (isinstance(x, str) and x.startswith(("function-", "engine=")))
        )
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = (
                "unknown field: remove it or check its spelling (netfleet schema lists the fields)"
            )
        elif err["type"] == "missing":
            msg = "required field is missing: add it"
        out.append((".".join(str(x) for x in loc) or "<top>", _line_for(loc, lines), msg))
    return out


def load_model(model: type[M], path: str | Path, *, what: str = "spec") -> M:
    """Load and validate a YAML file as ``model``; raise SpecError naming every problem."""
    data, lines = load_yaml(path)
    return validate_model(model, data, lines, path, what=what)


def validate_model(
    model: type[M], data: Any, lines: LineMap, path: str | Path, *, what: str = "spec"
) -> M:
    """Validate data parsed from the YAML file ``path`` as ``model`` (SpecError on problems)."""
    if not isinstance(data, dict):
        raise SpecError(
            f"{path}: a {what} must be a YAML mapping at the top level",
            file=str(path),
            problems=[("<top>", 1, "start with keys such as 'name:'")],
        )
    try:
        return model.model_validate(data, context={"lines": lines, "file": str(path)})
    except ValidationError as exc:
        raise SpecError(
            f"{path}: invalid {what}", file=str(path), problems=problems_from(exc, lines)
        ) from exc
