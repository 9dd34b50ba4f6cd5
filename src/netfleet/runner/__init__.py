"""Runner: executes a planned campaign against hosts with engines, storing each run.

Exports are imported on first use, so ``netfleet.runner.scheduler`` (pure scheduling logic, used
by ``plan`` for its estimate) does not drag in the engines, SSH and numpy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from netfleet.runner.campaign import CampaignInterrupted, CampaignResult, run_campaign
    from netfleet.runner.events import Reporter, SilentReporter

_LAZY = {
    "CampaignInterrupted": "netfleet.runner.campaign",
    "CampaignResult": "netfleet.runner.campaign",
    "run_campaign": "netfleet.runner.campaign",
    "Reporter": "netfleet.runner.events",
    "SilentReporter": "netfleet.runner.events",
}

__all__ = ["CampaignInterrupted", "CampaignResult", "Reporter", "SilentReporter", "run_campaign"]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'netfleet.runner' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
