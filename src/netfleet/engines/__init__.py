"""Engines: the trusted tools netfleet drives. One module per engine, one registry line."""

from netfleet.engines.base import Engine, EngineInfo, Outcome
from netfleet.engines.iperf3 import Iperf3

ENGINES: dict[str, Engine] = {"iperf3": Iperf3()}

__all__ = ["ENGINES", "Engine", "EngineInfo", "Iperf3", "Outcome"]
