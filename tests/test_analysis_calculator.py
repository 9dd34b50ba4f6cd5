"""The credit calculator against seed 004's numbers, its errors, and ``netfleet credit calc``."""

from __future__ import annotations

import json

import pytest

from netfleet.analysis import (
    BucketModel,
    Estimate,
    accrual_rate,
    burst_period,
    burst_seconds,
    duty_cycle,
    refill_seconds,
    rule_of_thumb_period,
)
from netfleet.analysis.calculator import plan
from netfleet.cli.boundary import guarded
from netfleet.cli.main import app
from netfleet.errors import InputError

G = 1e9
R4_LARGE = BucketModel.of(0.75 * G, 10 * G, 2700 * G)


def cli(*args: str) -> int:
    return guarded(lambda: app(list(args), standalone_mode=False, prog_name="netfleet"))


def test_seed_004_worked_example() -> None:
    """Baseline 0.75, use 0.6: accrue 0.15 Gbit/s; 10 s at 10 Gbit/s every ~660 s."""
    assert accrual_rate(R4_LARGE, 0.6 * G).value == pytest.approx(0.15 * G)
    thumb = rule_of_thumb_period(R4_LARGE, 10 * G, 10, 0.6 * G)
    assert thumb == pytest.approx(666.7, abs=0.1)  # the seed's "10 / 0.15" × 10 s, "~660"
    assert rule_of_thumb_period(R4_LARGE, 10 * G, 1, 0.6 * G) == pytest.approx(66.7, abs=0.1)
    # the exact balance: the baseline keeps accruing while bursting, u is part of X
    exact = burst_period(R4_LARGE, 10 * G, 10, 0.6 * G)
    assert exact.value == pytest.approx(10 * (10 - 0.6) / 0.15)
    assert exact.value == pytest.approx(660, rel=0.06)


@pytest.mark.parametrize(
    ("baseline", "credit", "seconds"),
    [(0.75, 2700, 295), (1.25, 5145, 589), (2.5, 8925, 1191), (5, 11950, 2390)],
)
def test_seed_004_table_maximum_time_at_10_gbit(
    baseline: float, credit: float, seconds: float
) -> None:
    model = BucketModel.of(baseline * G, 10 * G, credit * G)
    assert burst_seconds(model, 10 * G).value == pytest.approx(seconds, rel=0.02)


def test_refill_from_empty_and_the_three_hour_idle() -> None:
    assert refill_seconds(R4_LARGE).value == pytest.approx(3600)  # 2700 / 0.75
    # seed 004: 3 h idle "should have" given 8100 credits; the bucket caps at 2700
    assert R4_LARGE.baseline.value * 3 * 3600 / G == pytest.approx(8100)
    assert refill_seconds(R4_LARGE, 0.6 * G).value == pytest.approx(18000)
    assert refill_seconds(R4_LARGE, 0.75 * G).value == float("inf")


def test_duty_cycle() -> None:
    d = duty_cycle(R4_LARGE, 0.05, 0.6 * G)
    assert d.burst_rate.value == pytest.approx(0.75 * G + 0.95 * 0.15 * G / 0.05)
    assert d.average_rate.value == pytest.approx(0.75 * G)  # the balance is the baseline
    assert d.max_period.value == pytest.approx(2700 * G / ((d.burst_rate.value - 0.75 * G) * 0.05))
    capped = duty_cycle(R4_LARGE, 0.01, 0.6 * G)
    assert capped.burst_rate.value == pytest.approx(10 * G)  # never above the peak
    assert capped.average_rate.value == pytest.approx(0.01 * 10 * G + 0.99 * 0.6 * G)


def test_uncertainty_follows_the_inputs() -> None:
    model = BucketModel(Estimate(0.75 * G, 0.05 * G), Estimate(10 * G), Estimate(2700 * G, 100 * G))
    t = burst_seconds(model, 10 * G)
    assert t.value == pytest.approx(2700 / 9.25)
    # the extremes over the inputs' corners: fewer credits and a lower baseline, and vice versa
    assert t.low <= 2600 / 9.3 and t.high >= 2800 / 9.2 * (1 - 1e-12)
    assert t.err == pytest.approx(2800 / 9.2 - 2700 / 9.25)
    floor = BucketModel(
        Estimate(0.75 * G), Estimate(10 * G), Estimate(2000 * G, 0, lower_bound=True)
    )
    assert burst_seconds(floor, 10 * G).lower_bound
    assert refill_seconds(floor).lower_bound


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: BucketModel.of(1 * G, 0.5 * G, 10 * G), "must be above the baseline"),
        (lambda: burst_seconds(R4_LARGE, 20 * G), "above the peak"),
        (lambda: burst_period(R4_LARGE, 10 * G, 400, 0), "more than the bucket"),
        (lambda: duty_cycle(R4_LARGE, 0.0), "not in"),
        (lambda: accrual_rate(R4_LARGE, -1.0), "negative"),
    ],
)
def test_impossible_questions_are_input_errors(call: object, match: str) -> None:
    with pytest.raises(InputError, match=match):
        call()  # type: ignore[operator]


def test_plan_lists_every_answer_with_its_formula() -> None:
    answers = {a.quantity: a for a in plan(R4_LARGE, 0.6 * G, None, 10, 0.05)}
    assert answers["10 s at X, once every"].formula == "b·(X − u) / (ρ − u)"
    assert "… seed 004's rule of thumb" in answers
    assert "time at X, full bucket" not in answers  # X is the peak


def test_cli_calc_from_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli("credit", "calc", "--baseline", "0.75gbit", "--peak", "10gbit", "--bucket",
               "2700gbit", "--use", "0.6gbit", "--burst-seconds", "10", "--duty", "0.05",
               "-f", "json")  # fmt: skip
    assert code == 0
    rows = {r["quantity"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert rows["bucket σ (initial/max credit)"]["value"] == pytest.approx(2700)
    assert rows["bucket σ (initial/max credit)"]["unit"] == "Gbit"
    assert rows["10 s at X, once every"]["value"] == pytest.approx(626.67, abs=0.01)
    assert rows["refill from empty, idle"]["value"] == pytest.approx(3600)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--baseline", "0.75", "--peak", "10gbit", "--bucket", "2700gbit"], "give a unit"),
        (["--baseline", "0.75gbit", "--peak", "10gbit", "--bucket", "2700"], "credits are Gbit"),
        (["--baseline", "0.75gbit", "--peak", "10gbit"], "missing bucket"),
        (["--baseline", "fast", "--peak", "10gbit", "--bucket", "1gbit"], "not a rate"),
    ],
)
def test_cli_calc_refuses_bad_numbers(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli("credit", "calc", *args) == 2
    assert message in capsys.readouterr().err
