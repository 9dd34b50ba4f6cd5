"""Engines: the trusted tools netfleet drives. One module per engine, one registry line."""

from netfleet.engines.contract import Engine, EngineInfo, Outcome
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

__all__ = ["ENGINES", "Engine", "EngineInfo", "Iperf3", "Outcome"]
