"""Engines: the trusted tools netfleet drives. One module per engine, one registry line.

Everything else that depends on the set of engines — the spec's test kinds, the preflight's
tools, the package list (``--install``, cloud user-data), doctor's tool list, the catalog
parsers, ``netfleet import``'s formats, progress and advice summaries and evidence, which
reports read a result — is derived from :data:`ENGINES` (see docs/extending.md).
:func:`register_engine` adds one at run time (a plugin, a test); the spec's test kinds are
built when :mod:`netfleet.spec` is first imported, so register before that.
"""

from collections.abc import Mapping
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
from netfleet.engines.credit import Credit
from netfleet.engines.iperf2 import Iperf2
from netfleet.engines.iperf3 import Iperf3
from netfleet.engines.iperf3_multi import Iperf3Multi
from netfleet.engines.irtt import Irtt
from netfleet.engines.latency import Latency
from netfleet.engines.loaded_latency import LoadedLatency
from netfleet.engines.ping import Ping
from netfleet.engines.pps import Pps
from netfleet.engines.throughput import Throughput

ENGINES: dict[str, Engine] = {
    "iperf3": Iperf3(),
    "credit": Credit(),
    "iperf2": Iperf2(),
    "iperf3-multi": Iperf3Multi(),
    "throughput": Throughput(),
    "latency": Latency(),
    "ping": Ping(),
    "irtt": Irtt(),
    "latency-under-load": LoadedLatency(),
    "pps": Pps(),
}


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
    "Iperf3",
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
