"""Plan: a campaign spec expanded into an ordered list of runs."""

from netfleet.plan.matrix import PlannedRun, combinations, estimate_seconds, expand

__all__ = ["PlannedRun", "combinations", "estimate_seconds", "expand"]
