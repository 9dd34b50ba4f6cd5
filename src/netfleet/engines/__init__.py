"""Engines: the trusted tools netfleet drives. One module per engine, one registry line.

Everything else that depends on the set of engines — the spec's test kinds, the preflight's
tools, the package list, the catalog parsers, progress and advice summaries, which reports read
a result — is derived from :data:`ENGINES` (see docs/extending.md).
"""

from netfleet.engines.contract import Engine, EngineInfo, Measure, Outcome, Summary
from netfleet.engines.credit import Credit
from netfleet.engines.iperf2 import Iperf2
from netfleet.engines.iperf3 import Iperf3
from netfleet.engines.iperf3_multi import Iperf3Multi
from netfleet.engines.irtt import Irtt
from netfleet.engines.latency import Latency
from netfleet.engines.ping import Ping
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
}


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
    "Iperf3",
    "Outcome",
    "Summary",
    "measuring",
    "summary",
]
