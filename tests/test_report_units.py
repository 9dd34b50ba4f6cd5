"""Plots and the price table without a lab: a simulated token bucket through the real analysis."""

from __future__ import annotations

import math

from netfleet.analysis import RunAnalysis, RunInfo, analyze_series
from netfleet.analysis.estimate import Estimate
from netfleet.report import plots
from netfleet.report.price import PriceRow, cheapest
from tests import pngkit
from tests.bucketsim import token_bucket_series


def _burst_run() -> RunAnalysis:
    series = token_bucket_series(300e6, 40e6, 1040e6, 12, peak_noise=0.01, seed=1)
    info = RunInfo("r1", test="burst", direction="out", labels={"instance_type": "lab-burst"})
    return analyze_series(info, series)


def test_burst_plot_is_drawn_with_a_readable_title() -> None:
    a = _burst_run()
    assert a.credit.kind == "burst"
    png = plots.burst_plot(a, fmt="png")
    assert pngkit.variance(png) > 100
    svg = plots.analysis_figure([a], fmt="svg").decode()
    assert "lab-burst · out · burst" in svg
    assert "τ*" in svg and "envelope" in svg
    assert plots.burst_plot(a, fmt="svg") == plots.burst_plot(a, fmt="svg")  # no dates inside


def test_other_plots_render() -> None:
    for data in (
        plots.inout_bars([("a", 300e6, 100e6), ("b", 2e9, None)], fmt="png"),
        plots.rate_cdf({"a out": [1e8, 1.1e8, 0.9e8]}, fmt="png"),
        plots.price_scatter([("a", 0.1, 1e9, 5e9)], fmt="png"),
        plots.latency_bars([("same-az", 70.0, 96.0, 150.0)], fmt="png"),
        plots.compare_intervals([("out · goodput", -4.6, -5.6, -3.7, "worse")], fmt="png"),
    ):
        assert pngkit.variance(data) > 100


def test_sig_digits() -> None:
    assert plots.sig(468.088) == "468" and plots.sig(0.0050123, 2) == "0.0050"
    assert plots.sig(2.7e3) == "2,700"


def _row(t: str, price: float | None, sustained: float, err: float = 0.0) -> PriceRow:
    e = Estimate(sustained, err)
    return PriceRow(t, "out", price, "label", "steady", e, e)


def test_cheapest_type_meeting_a_target_uses_the_lower_end() -> None:
    rows = [
        _row("big", 1.0, 10e9),
        _row("mid", 0.5, 5.2e9, 0.1e9),
        _row("edge", 0.3, 5.05e9, 0.2e9),
    ]
    best, why = cheapest(rows, 5e9)
    assert best == "mid" and "mid at $0.5/h" in why  # edge's lower end is below 5 Gbit/s
    assert rows[1].per_gbps_hour(rows[1].sustained) == 0.5 / 5.2
    assert rows[1].per_month is not None and math.isclose(rows[1].per_month, 365.0)
    none, why = cheapest(rows, 50e9)
    assert none is None and "no measured type" in why
