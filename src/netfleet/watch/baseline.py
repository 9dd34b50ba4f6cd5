"""The rolling baseline of one series (host pair, type, direction, test, metric) and the
judgement of each new round against it, with ``compare``'s statistics.

A round adds the values of its runs (one per run, in the metric's unit). The *recent* values are
the latest round's, pooled with the rounds before it until there are
:data:`~netfleet.analysis.compare.MIN_RUNS` (a round of one run is judged with the two before
it). The *baseline* is the values of the ``window`` rounds before those that were not part of an
alert — a regression that lasts does not become the new normal, so its alert stays raised until
the series returns. The verdict is :func:`netfleet.analysis.compare.difference` (bootstrap
interval widened to Welch's t with few runs): an alert is raised when the interval excludes 0
**and** ``|diff| ≥ threshold`` of the baseline mean, and cleared when the recent mean is back
within the threshold.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from netfleet.analysis.compare import METRICS, MIN_RUNS, Difference, difference
from netfleet.errors import InputError

#: runs columns / labels that name a series (with the metric)
SERIES_KEYS = ("test", "client", "server", "direction", "instance_type")

State = Literal["building", "ok", "alert"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RoundValues(_Model):
    round: int = Field(ge=1)
    values: list[float] = Field(min_length=1)
    #: part of an alert: never used as baseline
    excluded: bool = False


class Series(_Model):
    key: dict[str, str]
    metric: str
    rounds: list[RoundValues] = Field(default_factory=list)
    alerting: bool = False

    @property
    def name(self) -> str:
        return "|".join([*(f"{k}={self.key.get(k, '')}" for k in SERIES_KEYS), self.metric])


@dataclass(frozen=True)
class Settings:
    #: fraction of the baseline mean, e.g. 0.10
    threshold: float = 0.10
    #: baseline rounds
    window: int = 10
    level: float = 0.95
    resamples: int = 10_000
    seed: int = 0


@dataclass(frozen=True)
class Judgement:
    series: Series
    state: State
    #: the latest round's mean (None when this round measured nothing for the series)
    latest: float | None
    diff: Difference | None
    #: what changed this round: "raised", "cleared" or ""
    event: str = ""

    @property
    def baseline(self) -> float | None:
        return self.diff.mean_a if self.diff else None


def _recent(series: Series) -> int:
    """How many of the latest rounds make the recent side (≥ MIN_RUNS values, ≥ 1 round)."""
    n = count = 0
    for rv in reversed(series.rounds):
        n += 1
        count += len(rv.values)
        if count >= MIN_RUNS:
            break
    return n


def judge(series: Series, settings: Settings) -> Judgement:
    """The verdict on the series' latest round; marks rounds excluded and flips ``alerting``."""
    if not series.rounds:
        return Judgement(series, "building", None, None)
    latest_values = series.rounds[-1].values
    latest = sum(latest_values) / len(latest_values)
    n_recent = _recent(series)
    recent_rounds = series.rounds[-n_recent:]
    earlier = [r for r in series.rounds[:-n_recent] if not r.excluded][-settings.window :]
    base = [v for r in earlier for v in r.values]
    recent = [v for r in recent_rounds for v in r.values]
    if len(base) < MIN_RUNS or len(recent) < MIN_RUNS:
        return Judgement(series, "alert" if series.alerting else "building", latest, None)
    d = difference(
        series.key, METRICS[series.metric], base, recent,
        settings.level, settings.resamples, settings.seed,
    )  # fmt: skip
    over = d.diff_percent is not None and abs(d.diff_percent) >= settings.threshold * 100
    # raised: significant and over the threshold; cleared only once the recent mean is back
    # within the threshold (a recent side that mixes shifted and restored rounds is wide, not
    # back)
    alert = over if series.alerting else bool(d.different) and over
    event = ""
    if alert:
        for rv in recent_rounds:  # the change started within the recent rounds
            rv.excluded = True
        event = "" if series.alerting else "raised"
    elif series.alerting:
        event = "cleared"
    series.alerting = alert
    return Judgement(series, "alert" if alert else "ok", latest, d, event)


def trim(series: Series, settings: Settings) -> None:
    """Keep what a judgement can still use: the window of usable rounds and the recent ones."""
    keep = settings.window + MIN_RUNS
    usable = 0
    for i in range(len(series.rounds) - 1, -1, -1):
        if not series.rounds[i].excluded:
            usable += 1
        if usable > keep or len(series.rounds) - i > 4 * keep:
            del series.rounds[:i]
            return


def parse_threshold(text: str | float, field: str = "--threshold") -> float:
    """``10%`` or ``10`` (percent of the baseline mean) → 0.10."""
    raw = str(text).strip().removesuffix("%").strip()
    try:
        pct = float(raw)
    except ValueError:
        pct = float("nan")
    if not 0 < pct <= 1000:  # also false for NaN
        raise InputError(
            f"{field}: {text!r} is not a percentage above 0", hint="e.g. --threshold 10%"
        )
    return pct / 100
