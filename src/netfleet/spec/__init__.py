"""Campaign specs: YAML → validated pydantic models."""

from netfleet.engines.params import Iperf3Params
from netfleet.spec.load import load_spec, spec_schema
from netfleet.spec.models import CampaignSpec, LocalHostSpec, NetnsHostSpec, TestSpec

__all__ = [
    "CampaignSpec",
    "Iperf3Params",
    "LocalHostSpec",
    "NetnsHostSpec",
    "TestSpec",
    "load_spec",
    "spec_schema",
]
