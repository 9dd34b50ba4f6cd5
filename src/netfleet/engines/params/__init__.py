"""Engine parameters, one module per engine. They live in the spec layer because a spec is
validated against them; engines import them, never the other way round."""

from netfleet.engines.params.base import EngineParams, spec_params
from netfleet.engines.params.iperf3 import Iperf3Params

__all__ = ["EngineParams", "Iperf3Params", "spec_params"]
