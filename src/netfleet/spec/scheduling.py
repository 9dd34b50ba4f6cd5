"""Campaign keys about *how* runs are scheduled: retries on resume, bandwidth budget, overlap."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from netfleet.spec.common import _Strict
from netfleet.units import parse_rate

Outcome = Literal["failed", "interrupted"]


def _retry_all() -> list[Outcome]:
    return ["failed", "interrupted"]


class RetryPolicy(_Strict):
    """What ``netfleet run --resume`` does with runs that did not end ``ok`` before."""

    on: list[Outcome] = Field(
        default_factory=_retry_all,
        description="which earlier outcomes are run again on --resume ([] = none: only runs "
        "never finished are redone)",
    )
    max_attempts: int = Field(
        3,
        ge=1,
        le=100,
        description="a run is tried at most this many times over all sessions of the campaign",
    )


def check_budget(value: str | None) -> str | None:
    """A bandwidth budget is a rate (``2gbit``) kept as written; it must be positive."""
    if value is not None and parse_rate(value) <= 0:
        raise ValueError("a bandwidth budget must be above zero")
    return value


#: a watch period: 6h, 30m, 90s, 1d (``netfleet.watch.schedule.parse_every`` reads it)
EVERY = r"^\s*\d+(\.\d+)?\s*(s|sec|m|min|h|d)?\s*$"
#: a threshold in percent of the baseline: 10% or 10
THRESHOLD = r"^\s*\d+(\.\d+)?\s*%?\s*$"


class WatchBlock(_Strict):
    """``netfleet watch``'s schedule and alert settings (its flags win)."""

    every: str | None = Field(
        None, pattern=EVERY, description="how often a round runs, e.g. 6h (--every)"
    )
    threshold: str | None = Field(
        None,
        pattern=THRESHOLD,
        description="smallest change of the baseline mean that alerts, e.g. 10% (--threshold)",
    )
    window: int | None = Field(
        None, ge=3, le=1000, description="rounds in the rolling baseline (--window)"
    )
