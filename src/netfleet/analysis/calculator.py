"""What a token bucket lets you do: seed 004's arithmetic, exact.

A credit mechanism is a token bucket: credits accrue at the baseline ρ, are spent by traffic,
and are capped at the bucket σ; the link never exceeds the peak C. Unit: **1 credit = 1 Gbit**
(seed 004): 1 Gbit/s for 1 s. Here every rate is bits/s and every bucket bits; divide by 1e9 for
Gbit/s and credits.

With a base use u below ρ and bursts at X for b seconds every P seconds, the bucket balances
when the credit earned between bursts pays for the burst:

    (ρ − u)·(P − b) = (X − ρ)·b   ⇒   P = b·(X − u)/(ρ − u)

Seed 004 reads the same example (ρ = 0.75, u = 0.6, X = 10, b = 10) as "accrue 0.15 per
second, 10 s at 10 Gbit/s every ~660 s" — its rule of thumb X·b/(ρ − u) = 667 s spends the
whole X from credit and earns nothing while bursting; the balance above gives 627 s.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

from netfleet.analysis.estimate import Estimate
from netfleet.errors import InputError

GBIT = 1e9


@dataclass(frozen=True)
class BucketModel:
    """ρ (bits/s), C (bits/s), σ (bits). Any may carry a ± (from a measurement)."""

    baseline: Estimate
    peak: Estimate
    bucket: Estimate

    @classmethod
    def of(cls, baseline: float, peak: float, bucket: float) -> BucketModel:
        return cls(Estimate(baseline), Estimate(peak), Estimate(bucket))

    def __post_init__(self) -> None:
        if self.baseline.value <= 0:
            raise InputError("the baseline must be above 0", hint="e.g. --baseline 0.75gbit")
        if self.peak.value <= self.baseline.value:
            raise InputError(
                f"the peak ({self.peak.value / GBIT:g} Gbit/s) must be above the baseline "
                f"({self.baseline.value / GBIT:g} Gbit/s)",
                hint="a credit bucket bursts above its baseline; check --peak and --baseline",
            )
        if self.bucket.value < 0:
            raise InputError("the bucket cannot be negative", hint="e.g. --bucket 2700gbit")


def _corners(fn: Callable[..., float], inputs: Mapping[str, Estimate], **fixed: float) -> Estimate:
    """``fn`` at the values, and its range over every corner of the inputs' intervals (the
    formulas here are monotonic in each input, so the corners bound them). A lower-bound input
    makes a lower-bound result when the result grows with it."""
    value = fn(**{k: e.value for k, e in inputs.items()}, **fixed)
    uncertain = {k: e for k, e in inputs.items() if e.err > 0}
    results = [
        fn(
            **{**{k: e.value for k, e in inputs.items()}, **dict(zip(uncertain, c, strict=True))},
            **fixed,
        )
        for c in itertools.product(*((e.low, e.high) for e in uncertain.values()))
        if all(math.isfinite(x) for x in c)
    ]
    finite = [r for r in results if math.isfinite(r)]
    err = max((abs(r - value) for r in finite), default=0.0)
    lower = any(e.lower_bound for e in inputs.values())
    return Estimate(value, err if math.isfinite(value) else 0.0, lower_bound=lower)


def _check_use(model: BucketModel, use: float) -> None:
    if use < 0:
        raise InputError("the average use cannot be negative", hint="e.g. --use 0.6gbit")


def _check_rate(model: BucketModel, rate: float) -> None:
    if rate > model.peak.value * (1 + 1e-9):
        raise InputError(
            f"{rate / GBIT:g} Gbit/s is above the peak {model.peak.value / GBIT:g} Gbit/s",
            hint="a bucket never lets more than the peak through: choose --burst-rate ≤ --peak",
        )


def accrual_rate(model: BucketModel, use: float) -> Estimate:
    """Credits earned per second (bits/s) at a steady use below the baseline: ρ − u."""
    _check_use(model, use)
    return Estimate(model.baseline.value - use, model.baseline.err)


def burst_seconds(model: BucketModel, rate: float) -> Estimate:
    """How long a full bucket lasts at ``rate`` (≤ C): σ / (X − ρ); infinite at or below ρ."""
    _check_rate(model, rate)

    def f(baseline: float, bucket: float) -> float:
        return bucket / (rate - baseline) if rate > baseline else math.inf

    return _corners(f, {"baseline": model.baseline, "bucket": model.bucket})


def refill_seconds(model: BucketModel, use: float = 0.0) -> Estimate:
    """From empty to full at a steady use u < ρ: σ / (ρ − u) (idle: σ/ρ)."""
    _check_use(model, use)

    def f(baseline: float, bucket: float) -> float:
        return bucket / (baseline - use) if baseline > use else math.inf

    return _corners(f, {"baseline": model.baseline, "bucket": model.bucket})


def burst_period(model: BucketModel, rate: float, seconds: float, use: float) -> Estimate:
    """The shortest period P between starts of b-second bursts at X that the bucket sustains
    with a base use u between them: P = b·(X − u)/(ρ − u). Needs (X − ρ)·b ≤ σ."""
    _check_use(model, use)
    _check_rate(model, rate)
    if seconds <= 0:
        raise InputError("the burst must last more than 0 s", hint="e.g. --burst-seconds 10")
    need = (rate - model.baseline.value) * seconds
    if need > model.bucket.value * (1 + 1e-9) and not model.bucket.lower_bound:
        raise InputError(
            f"a {seconds:g} s burst at {rate / GBIT:g} Gbit/s needs {need / GBIT:.1f} credits "
            f"(Gbit), more than the bucket's {model.bucket.value / GBIT:.1f}",
            hint=f"burst for at most {burst_seconds(model, rate).value:.1f} s at this rate",
        )

    def f(baseline: float) -> float:
        return seconds * (rate - use) / (baseline - use) if baseline > use else math.inf

    return _corners(f, {"baseline": model.baseline})


def rule_of_thumb_period(model: BucketModel, rate: float, seconds: float, use: float) -> float:
    """Seed 004's reading: X·b/(ρ − u) (spends all of X from credit; conservative)."""
    _check_use(model, use)
    gain = model.baseline.value - use
    return seconds * rate / gain if gain > 0 else math.inf


@dataclass(frozen=True)
class DutyCycle:
    """The fastest burst rate a duty cycle sustains, the average it gives, and the longest
    period before one burst would empty a full bucket."""

    fraction: float
    burst_rate: Estimate
    average_rate: Estimate
    max_period: Estimate


def duty_cycle(model: BucketModel, fraction: float, use: float = 0.0) -> DutyCycle:
    """Bursting a ``fraction`` f of the time and using u otherwise, the bucket sustains
    X = min(C, ρ + (1 − f)(ρ − u)/f); the average is f·X + (1 − f)·u; one burst spends
    (X − ρ)·f·P, so the period must stay under σ / ((X − ρ)·f)."""
    _check_use(model, use)
    if not 0 < fraction <= 1:
        raise InputError(f"duty cycle {fraction:g} is not in (0, 1]", hint="e.g. --duty 0.1")

    def rate(baseline: float, peak: float) -> float:
        return min(peak, baseline + (1 - fraction) * (baseline - use) / fraction)

    def average(baseline: float, peak: float) -> float:
        return fraction * rate(baseline, peak) + (1 - fraction) * use

    def period(baseline: float, peak: float, bucket: float) -> float:
        over = (rate(baseline, peak) - baseline) * fraction
        return bucket / over if over > 0 else math.inf

    ins = {"baseline": model.baseline, "peak": model.peak}
    return DutyCycle(
        fraction,
        _corners(rate, ins),
        _corners(average, ins),
        _corners(period, {**ins, "bucket": model.bucket}),
    )


@dataclass(frozen=True)
class Answer:
    """One line of a calculation: what, how much, in which unit, by which formula."""

    quantity: str
    value: Estimate
    unit: Literal["rate", "credit", "s", "ratio"]
    formula: str
    #: from a scaled lab's runs: the cloud figure ``value`` stands for, and the lab's
    #: (rate scale, time scale) — :func:`netfleet.report.labscale.cloud_answer`
    cloud: Estimate | None = None
    lab_scale: tuple[float, float] | None = None
    #: instead of a number: why there is none (a use at or above the baseline never lets a
    #: burst happen), e.g. "never: 1 Gbit/s exceeds the 0.75 Gbit/s baseline; …"
    never: str | None = None


def _said(seconds: float, scale: tuple[float, float] | None) -> float:
    """A burst length as the user gave it: the cloud's when the model is a scaled lab's."""
    return seconds / scale[1] if scale else seconds


def _gbit(bits: float) -> str:
    return f"{bits / GBIT:,.4g}"


def burst_rate_name(model: BucketModel, rate: float, scale: tuple[float, float] | None) -> str:
    """What X is, in an answer's name: "peak C = 10 Gbit/s" or "X = 5 Gbit/s" (the cloud's
    figure when the model is a scaled lab's, as the burst length is)."""
    said = f"{_gbit(rate / (scale[0] if scale else 1.0))} Gbit/s"
    return f"peak C = {said}" if rate == model.peak.value else f"X = {said}"


def never_text(model: BucketModel, use: float, scale: tuple[float, float] | None = None) -> str:
    """Why a use u ≥ ρ sustains no burst: the bucket only drains, and how fast a full one
    empties (σ / (u − ρ)). With ``scale`` (a lab's rate and time scales) the figures are the
    cloud's the lab's stand for."""
    rate_s, time_s = scale or (1.0, 1.0)
    base, bucket = model.baseline.value, model.bucket.value
    where = " (cloud)" if scale else ""
    head = f"never: {_gbit(use / rate_s)} Gbit/s"
    if use <= base:
        return f"{head}{where} equals the baseline: the bucket neither fills nor empties"
    empties = bucket / (use - base) / time_s
    return (
        f"{head}{where} exceeds the {_gbit(base / rate_s)} Gbit/s baseline; a full bucket "
        f"empties in {empties:,.0f} s"
    )


def plan(
    model: BucketModel,
    use: float = 0.0,
    rate: float | None = None,
    seconds: float | None = None,
    duty: float | None = None,
    scale: tuple[float, float] | None = None,
) -> list[Answer]:
    """Everything the calculator answers for a bucket, a base use u, a burst rate X (default
    the peak), a burst length b and a duty cycle f (each optional). A use at or above the
    baseline answers "never" (with the reason) where a burst or refill would be; ``scale``: the
    lab's (rate, time) scales when the model is a scaled lab's, for that text."""
    x = model.peak.value if rate is None else rate
    _check_rate(model, x)
    at = burst_rate_name(model, x, scale)
    out = [
        Answer("baseline ρ", model.baseline, "rate", "measured or given"),
        Answer("peak C", model.peak, "rate", "measured or given"),
        Answer("bucket σ (initial/max credit)", model.bucket, "credit", "1 credit = 1 Gbit"),
        Answer(
            "time at peak, full bucket", burst_seconds(model, model.peak.value), "s", "σ / (C − ρ)"
        ),
    ]
    if x != model.peak.value:
        out.append(
            Answer(f"time at {at}, full bucket", burst_seconds(model, x), "s", "σ / (X − ρ)")
        )
    out.append(Answer("refill from empty, idle", refill_seconds(model), "s", "σ / ρ"))
    if use >= model.baseline.value:
        return out + _drained(model, use, x, seconds, duty, scale)
    if use > 0:
        out += [
            Answer("credit accrued at use u", accrual_rate(model, use), "rate", "ρ − u"),
            Answer("refill from empty at use u", refill_seconds(model, use), "s", "σ / (ρ − u)"),
        ]
    if seconds is not None:
        out += [
            Answer(
                f"{_said(seconds, scale):g} s at {at}, once every",
                burst_period(model, x, seconds, use),
                "s",
                "b·(X − u) / (ρ − u)",
            ),
            Answer(
                "… seed 004's rule of thumb",
                Estimate(rule_of_thumb_period(model, x, seconds, use)),
                "s",
                "X·b / (ρ − u)",
            ),
        ]
    if duty is not None:
        d = duty_cycle(model, duty, use)
        out += [
            Answer(
                f"burst rate sustained at duty {duty:g}",
                d.burst_rate,
                "rate",
                "min(C, ρ + (1 − f)(ρ − u)/f)",
            ),
            Answer("average rate at that duty", d.average_rate, "rate", "f·X + (1 − f)·u"),
            Answer("longest period at that duty", d.max_period, "s", "σ / ((X − ρ)·f)"),
        ]
    return out


def _drained(
    model: BucketModel,
    use: float,
    rate: float,
    seconds: float | None,
    duty: float | None,
    scale: tuple[float, float] | None,
) -> list[Answer]:
    """The answers for u ≥ ρ: the bucket drains at u − ρ and empties in σ / (u − ρ); no
    refill, no sustained burst — each such answer says "never" and why."""
    _check_use(model, use)
    why = never_text(model, use, scale)
    none = Estimate(math.nan)
    out = []
    if use > model.baseline.value:
        drain = Estimate(use - model.baseline.value, model.baseline.err)
        empties = _corners(
            lambda baseline, bucket: bucket / (use - baseline) if use > baseline else math.inf,
            {"baseline": model.baseline, "bucket": model.bucket},
        )
        out += [
            Answer("credit drained at use u", drain, "rate", "u − ρ (u ≥ ρ: nothing accrues)"),
            Answer("full bucket empties at use u", empties, "s", "σ / (u − ρ)"),
        ]
    out.append(Answer("refill from empty at use u", none, "s", "σ / (ρ − u)", never=why))
    if seconds is not None:
        _check_rate(model, rate)
        out.append(
            Answer(
                f"{_said(seconds, scale):g} s at {burst_rate_name(model, rate, scale)}, once every",
                none,
                "s",
                "b·(X − u) / (ρ − u)",
                never=why,
            )
        )
    if duty is not None:
        if not 0 < duty <= 1:
            raise InputError(f"duty cycle {duty:g} is not in (0, 1]", hint="e.g. --duty 0.1")
        formula = "min(C, ρ + (1 − f)(ρ − u)/f)"
        out.append(
            Answer(f"burst rate sustained at duty {duty:g}", none, "rate", formula, never=why)
        )
    return out
