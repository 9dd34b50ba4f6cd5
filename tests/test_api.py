"""The library facade gives what the CLI shows, without the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

import netfleet
from netfleet.errors import InputError

DEMO = Path(netfleet.__file__).parent / "demo" / "campaign.yaml"


def test_plan_expands_the_demo_campaign() -> None:
    planned = netfleet.api.plan(DEMO)
    assert planned.spec.campaign == "demo"
    assert len(planned.runs) == 12
    assert planned.estimated_seconds >= sum(r.params.measured_seconds() for r in planned.runs)


def test_calc_from_given_numbers() -> None:
    answers = netfleet.api.calc(
        baseline=0.75e9, peak=10e9, bucket=2700e9, use=0.6e9, burst_seconds=10, duty=0.05
    )
    by_name = {a.quantity: a for a in answers}
    assert by_name["10 s at X, once every"].value.value == pytest.approx(626.67, abs=0.01)


def test_calc_without_a_bucket_names_what_is_missing() -> None:
    with pytest.raises(InputError, match="missing bucket"):
        netfleet.api.calc(baseline=0.75e9, peak=10e9)
