"""YAML files validated by pydantic, with errors that name the file, the field path and the line.

Shared by campaign specs and lab files: ``load_model(Model, path)`` either returns a valid model or
raises :class:`~netfleet.errors.SpecError` listing every problem as (path, line, fix).

The loader treats the file as hostile (docs/security.md): the file size, the nesting depth, the
number of aliases and the size of the data after alias expansion are all bounded *before* anything
is built, only plain data tags are accepted, keys must be scalars (kept as the text written) and
booleans follow YAML 1.2 (only ``true``/``false``), so ``on:`` is a key, not ``True``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from netfleet.errors import SpecError
from netfleet.spec.common import LocatedError

M = TypeVar("M", bound=BaseModel)
LineMap = dict[tuple[str | int, ...], int]

#: bytes a spec or lab file may have (override: NETFLEET_MAX_SPEC_BYTES)
MAX_SPEC_BYTES = 1_000_000
#: nesting depth of mappings and lists
MAX_DEPTH = 64
#: alias uses (``*name``) in one file
MAX_ALIASES = 1_000
#: nodes (values, keys, lists, mappings) once every alias is expanded
MAX_NODES = 200_000

_T = "tag:yaml.org,2002:"
_PLAIN_TAGS = {_T + t for t in ("str", "int", "float", "bool", "null", "map", "seq", "timestamp")}


def _limit_from_env(name: str, default: int) -> int:
    raw = os.environ.get(name, "")
    try:
        return int(raw) if raw.strip() else default
    except ValueError:
        raise SpecError(
            f"{name}={raw!r} is not a whole number", hint=f"set {name} to a byte count or unset it"
        ) from None


class _Resolver(yaml.resolver.Resolver):
    """YAML 1.2 core-schema booleans: ``yes``/``no``/``on``/``off`` stay text."""


_Resolver.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != _T + "bool"]
    for first, resolvers in yaml.resolver.Resolver.yaml_implicit_resolvers.items()
}
_Resolver.add_implicit_resolver(
    _T + "bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


class _Loader(
    yaml.reader.Reader,
    yaml.scanner.Scanner,
    yaml.parser.Parser,
    yaml.composer.Composer,
    yaml.constructor.SafeConstructor,
    _Resolver,
):
    """PyYAML's safe loader with a depth and an alias budget while composing."""

    def __init__(self, stream: str) -> None:
        yaml.reader.Reader.__init__(self, stream)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)
        yaml.composer.Composer.__init__(self)
        yaml.constructor.SafeConstructor.__init__(self)
        _Resolver.__init__(self)
        self.depth = 0
        self.aliases = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        line = event.start_mark.line + 1
        if isinstance(event, yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                raise _Refused(
                    line, f"more than {MAX_ALIASES} aliases (*name): write the values out instead"
                )
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _Refused(line, f"nested more than {MAX_DEPTH} levels deep: flatten the data")
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


class _Refused(Exception):
    def __init__(self, line: int | None, why: str, path: str = "<yaml>") -> None:
        super().__init__(why)
        self.line, self.why, self.path = line, why, path


def _expanded_size(node: yaml.Node, memo: dict[int, int]) -> int:
    """Nodes in ``node`` once aliases are expanded (aliases share a node: count it per use)."""
    done = memo.get(id(node))
    if done is not None:
        return done
    memo[id(node)] = 1  # a self-referencing alias counts once instead of looping
    size = 1
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            size += _expanded_size(k, memo) + _expanded_size(v, memo)
            if size > MAX_NODES:
                break
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            size += _expanded_size(item, memo)
            if size > MAX_NODES:
                break
    memo[id(node)] = size
    return size


def _where(path: tuple[str | int, ...]) -> str:
    return ".".join(map(str, path)) or "<top>"


class _Builder:
    """Nodes → plain Python data, recording the line of every field path."""

    def __init__(self, loader: _Loader, lines: LineMap) -> None:
        self.loader = loader
        self.lines = lines
        self.active: set[int] = set()

    def build(self, node: yaml.Node, path: tuple[str | int, ...]) -> Any:
        line = node.start_mark.line + 1
        self.lines.setdefault(path, line)
        if node.tag not in _PLAIN_TAGS and node.tag != _T + "merge":
            raise _Refused(
                line,
                f"the tag {node.tag!r} is not allowed: remove it (a spec holds plain text, "
                "numbers, true/false, lists and mappings)",
                _where(path),
            )
        if id(node) in self.active:
            raise _Refused(line, "an alias refers to a value that contains it: remove the alias")
        if isinstance(node, yaml.MappingNode):
            self.active.add(id(node))
            try:
                return self._mapping(node, path)
            finally:
                self.active.discard(id(node))
        if isinstance(node, yaml.SequenceNode):
            self.active.add(id(node))
            try:
                return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
            finally:
                self.active.discard(id(node))
        return self.loader.construct_object(node, deep=True)

    def _key(self, key_node: yaml.Node, path: tuple[str | int, ...]) -> str:
        if not isinstance(key_node, yaml.ScalarNode):
            raise _Refused(
                key_node.start_mark.line + 1,
                "a key must be plain text, not a list or a mapping: write it as a string",
                _where(path),
            )
        if key_node.tag not in _PLAIN_TAGS:
            raise _Refused(
                key_node.start_mark.line + 1,
                f"the tag {key_node.tag!r} is not allowed on a key: remove it",
                _where(path),
            )
        # the key as written: `1:` and `true:` are the keys "1" and "true", never 1 == True
        return str(key_node.value)

    def _mapping(self, node: yaml.MappingNode, path: tuple[str | int, ...]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        merged: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _T + "merge":
                merged.update(self._merge(value_node, path))
                continue
            key = self._key(key_node, path)
            if key in out:
                raise _Refused(
                    key_node.start_mark.line + 1,
                    f"the key {key!r} appears twice: keep one",
                    _where((*path, key)),
                )
            out[key] = self.build(value_node, (*path, key))
            self.lines[(*path, key)] = key_node.start_mark.line + 1
        return {**merged, **out}  # keys written in the mapping win over merged ones

    def _merge(self, node: yaml.Node, path: tuple[str | int, ...]) -> dict[str, Any]:
        """``<<: *base`` or ``<<: [*a, *b]`` (earlier mappings win, as in YAML 1.1)."""
        sources = node.value if isinstance(node, yaml.SequenceNode) else [node]
        out: dict[str, Any] = {}
        for src in reversed(sources):
            if not isinstance(src, yaml.MappingNode):
                raise _Refused(
                    src.start_mark.line + 1,
                    "'<<' merges mappings only: give a mapping or a list of mappings",
                    _where(path),
                )
            out.update(self.build(src, path))
        return out


def _read_text(p: Path) -> str:
    limit = _limit_from_env("NETFLEET_MAX_SPEC_BYTES", MAX_SPEC_BYTES)
    try:
        with p.open("rb") as fh:
            raw = fh.read(limit + 1)
    except FileNotFoundError as exc:
        raise SpecError(f"{p}: no such file", hint="check the path") from exc
    except IsADirectoryError as exc:
        raise SpecError(f"{p}: is a directory", hint="give the path of a YAML file") from exc
    except OSError as exc:
        raise SpecError(
            f"{p}: cannot be read ({exc.strerror})", hint="check its permissions"
        ) from exc
    if len(raw) > limit:
        raise SpecError(
            f"{p}: larger than {limit:,} bytes",
            file=str(p),
            hint="a spec this large is a mistake: split it, or raise NETFLEET_MAX_SPEC_BYTES",
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(
            f"{p}: not UTF-8 text (byte {exc.start})", file=str(p), hint="save the file as UTF-8"
        ) from exc


def load_yaml(path: str | Path) -> tuple[Any, LineMap]:
    """Parse YAML safely, returning the data and a map from field path to line number."""
    p = Path(path)
    text = _read_text(p)
    lines: LineMap = {}
    try:
        loader = _Loader(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return {}, {(): 1}  # an empty file: what is missing is missing at line 1
            if _expanded_size(node, {}) > MAX_NODES:
                raise _Refused(
                    node.start_mark.line + 1,
                    f"more than {MAX_NODES:,} values once aliases are expanded (an alias "
                    "bomb?): write the values out, without nested aliases",
                )
            data = _Builder(loader, lines).build(node, ())
        finally:
            loader.dispose()
    except _Refused as exc:
        raise SpecError(
            f"{p}: invalid", file=str(p), problems=[(exc.path, exc.line, exc.why)]
        ) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        if isinstance(exc, yaml.reader.ReaderError):  # a control character: where is it?
            line = text.count("\n", 0, exc.position) + 1
        raise SpecError(
            f"{p}: not valid YAML",
            file=str(p),
            problems=[("<yaml>", line, f"{getattr(exc, 'problem', None) or exc}: fix the syntax")],
        ) from None
    except (ValueError, OverflowError, RecursionError) as exc:  # e.g. a timestamp out of range
        raise SpecError(
            f"{p}: invalid", file=str(p), problems=[("<yaml>", None, f"{exc}: fix the value")]
        ) from None
    return data, lines


def _line_for(loc: tuple[str | int, ...], lines: LineMap) -> int | None:
    for n in range(len(loc), -1, -1):
        if loc[:n] in lines:
            return lines[loc[:n]]
    return None


def field_names(model: Any, seen: set[Any] | None = None) -> set[str]:
    """Every field name (and alias) of ``model`` and of the models its fields hold, and of every
    engine's params model: the words an unknown field may be a misspelling of."""
    from typing import get_args

    top = seen is None
    seen = set() if seen is None else seen
    names: set[str] = set()
    todo = [model]
    if top:
        from netfleet.engines import ENGINES

        todo += [engine.params_model for engine in ENGINES.values()]
    while todo:
        item = todo.pop()
        if item in seen:
            continue
        seen.add(item)
        if isinstance(item, type) and issubclass(item, BaseModel):
            for name, info in item.model_fields.items():
                names.add(info.alias or name)
                todo.append(info.annotation)
        else:
            todo.extend(get_args(item))
    return names


def _did_you_mean(loc: tuple[Any, ...], known: set[str]) -> str:
    """ "did you mean 'parallel'? …" for a misspelt field, else nothing."""
    import difflib

    if not loc or not isinstance(loc[-1], str):
        return ""
    close = difflib.get_close_matches(loc[-1], sorted(known), n=1, cutoff=0.75)
    if not close:
        return ""
    return f"did you mean {close[0]!r}? (else remove it; netfleet schema lists the fields)"


def _pattern_text(err: Any) -> str:
    """A value that does not have the form a field needs, in words: what it was, and the value
    made to fit when replacing what is not allowed by '-' does it (``'my test'`` → ``'my-test'``),
    rather than the regular expression alone."""
    pattern = str((err.get("ctx") or {}).get("pattern", ""))
    value = err.get("input")
    text = f"{value!r} is not allowed here"
    if isinstance(value, str) and pattern:
        fixed = re.sub(r"[^A-Za-z0-9._-]+", "-", value.strip()).strip("-")
        if fixed != value and re.fullmatch(pattern, fixed):
            return f"{text}: use letters, digits, '.', '_' and '-' only, e.g. {fixed!r}"
        if fixed.lower() != value and re.fullmatch(pattern, fixed.lower()):
            return f"{text}: use lower-case letters, digits and '-' only, e.g. {fixed.lower()!r}"
    return f"{text}: it must match the pattern {pattern} (see docs/spec.md)"


def problems_from(
    exc: ValidationError, lines: LineMap, known: set[str] | None = None
) -> list[tuple[str, int | None, str]]:
    """Turn a pydantic ValidationError into (field path, line, message) triples. ``known``: the
    field names an unknown one is compared with (:func:`field_names`)."""
    out = []
    for err in exc.errors():
        loc = tuple(
            x
            for x in err["loc"]
            if not (isinstance(x, str) and x.startswith(("function-", "engine=")))
        )
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown field: " + (
                _did_you_mean(loc, known or set())
                or "remove it or check its spelling (netfleet schema lists the fields)"
            )
        elif err["type"] == "string_pattern_mismatch":
            msg = _pattern_text(err)
        elif err["type"] == "missing":
            msg = "required field is missing: add it"
        elif err["type"] == "string_type" and isinstance(err.get("input"), int | float):
            msg = (
                f"expected text, got the number {err['input']!r}: write it with its unit "
                "in quotes, e.g. '100mbit' or '64k' (see docs/spec.md)"
            )
        located = (err.get("ctx") or {}).get("error")
        if isinstance(located, LocatedError):
            loc = (*loc, *located.loc)
        loc = _written_at(loc)
        found = (".".join(str(x) for x in loc) or "<top>", _line_for(loc, lines), msg)
        if found not in out:  # the cloud block's problem once, not once per host
            out.append(found)
    return out


def _written_at(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """Where the user wrote the field: an aws host's ``cloud`` settings are the campaign's
    ``cloud:`` block copied into every host (``hosts.srv.aws.cloud.controller_cidr`` is
    ``cloud.controller_cidr``)."""
    if len(loc) > 3 and loc[0] == "hosts" and "cloud" in loc[2:4]:
        return ("cloud", *loc[loc.index("cloud", 2) + 1 :])
    return loc


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
            f"{path}: invalid {what}",
            file=str(path),
            problems=problems_from(exc, lines, field_names(model)),
        ) from exc
