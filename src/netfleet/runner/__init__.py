"""Runner: executes a planned campaign against hosts with engines, storing each run."""

from netfleet.runner.campaign import CampaignInterrupted, CampaignResult, run_campaign
from netfleet.runner.events import Reporter, SilentReporter

__all__ = ["CampaignInterrupted", "CampaignResult", "Reporter", "SilentReporter", "run_campaign"]
