"""Engines: the trusted tools netfleet drives. One module per engine, one registry line.

Everything else that depends on the set of engines — the spec's test kinds, the preflight's
tools, the package list (``--install``, cloud user-data), doctor's tool list, the catalog
parsers, ``netfleet import``'s formats, progress and advice summaries and evidence, which
reports read a result — is derived from :data:`ENGINES` (see docs/extending.md).
:func:`register_engine` adds one at run time (a plugin, a test); the spec's test kinds are
built when :mod:`netfleet.spec` is first imported, so register before that.

A built-in engine's module is imported when its entry is first read: the catalog's reader of
iperf3 files asks only for ``iperf3``, whose module leaves its spec model (pydantic) to the
spec; the rest load with a walk over the registry (``items()``, ``values()``).
"""

import importlib
from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any

from netfleet.engines.contract import (
    Engine,
    EngineInfo,
    Evidence,
    ImportedRun,
    ImportFormat,
    Measure,
    Outcome,
    Summary,
)

#: the built-in engines, in registry order: name → (module, class)
BUILT_IN: dict[str, tuple[str, str]] = {
    "iperf3": ("netfleet.engines.iperf3", "Iperf3"),
    "credit": ("netfleet.engines.credit", "Credit"),
    "iperf2": ("netfleet.engines.iperf2", "Iperf2"),
    "iperf3-multi": ("netfleet.engines.iperf3_multi", "Iperf3Multi"),
    "throughput": ("netfleet.engines.throughput", "Throughput"),
    "latency": ("netfleet.engines.latency", "Latency"),
    "ping": ("netfleet.engines.ping", "Ping"),
    "irtt": ("netfleet.engines.irtt", "Irtt"),
    "latency-under-load": ("netfleet.engines.loaded_latency", "LoadedLatency"),
    "pps": ("netfleet.engines.pps", "Pps"),
}


class Registry(MutableMapping[str, Engine]):
    """Engine name → engine, in registry order; a built-in one is made on its first read."""

    def __init__(self, built_in: Mapping[str, tuple[str, str]]) -> None:
        self._entries: dict[str, Engine | tuple[str, str]] = dict(built_in)

    def __getitem__(self, name: str) -> Engine:
        entry = self._entries[name]
        if isinstance(entry, tuple):
            module, cls = entry
            entry = self._entries[name] = getattr(importlib.import_module(module), cls)()
        return entry

    def __setitem__(self, name: str, engine: Engine) -> None:
        self._entries[name] = engine

    def __delitem__(self, name: str) -> None:
        del self._entries[name]

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)


ENGINES: MutableMapping[str, Engine] = Registry(BUILT_IN)


def register_engine(engine: Engine, *, replace: bool = False) -> None:
    """Add ``engine`` to the registry under ``engine.name`` (the one registry line, at run
    time). A name already taken is a ValueError unless ``replace``."""
    if engine.name in ENGINES and not replace:
        raise ValueError(f"an engine named {engine.name!r} is already registered")
    ENGINES[engine.name] = engine


def tools() -> tuple[str, ...]:
    """Every tool (command on a host) an engine runs or may choose, each once, in registry
    order: what doctor looks for and what a cloud host gets installed."""
    found: dict[str, None] = {}
    for engine in ENGINES.values():
        found.update(dict.fromkeys(engine.tools))
        found.update(dict.fromkeys(engine.packages))
    return tuple(found)


def packages() -> dict[str, dict[str, str]]:
    """Tool → package per package manager, merged over every engine's ``packages``."""
    return {t: m for engine in ENGINES.values() for t, m in engine.packages.items()}


def import_formats() -> dict[str, ImportFormat]:
    """Engine name → the tool output files ``netfleet import`` reads for it (registry order)."""
    found = {}
    for name, engine in ENGINES.items():
        imports = getattr(engine, "imports", None)
        if isinstance(imports, ImportFormat):
            found[name] = imports
    return found


def evidence(engine: str, result: Any) -> Evidence:
    """What advice reads of a stored result (empty where the engine reports none)."""
    read = getattr(ENGINES.get(engine), "evidence", None)
    return read(result if isinstance(result, Mapping) else {}) if callable(read) else Evidence()


def measuring(kind: Measure) -> tuple[str, ...]:
    """Names of the engines whose results are of this kind (e.g. the throughput engines the
    cheat sheet reads)."""
    return tuple(name for name, engine in ENGINES.items() if engine.measures == kind)


def summary(engine: str, result: object) -> Summary | None:
    """An engine's one-line summary of a stored result (``None`` for an unknown engine or a
    result that is not a JSON object)."""
    known = ENGINES.get(engine)
    if known is None or not isinstance(result, dict):
        return None
    return known.summary(result)


__all__ = [
    "ENGINES",
    "Engine",
    "EngineInfo",
    "Evidence",
    "ImportFormat",
    "ImportedRun",
    "Outcome",
    "Summary",
    "evidence",
    "import_formats",
    "measuring",
    "packages",
    "register_engine",
    "summary",
    "tools",
]
