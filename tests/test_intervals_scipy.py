"""Every interval netfleet prints agrees with scipy.stats on the same data (issue 22.3): compare's
Welch and bootstrap intervals, a level's (credit) ±, the pooled ± of several runs and the
calculator's ± built on it — at 0.9, 0.95 and 0.99."""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest

from netfleet.analysis import BucketModel, Estimate, burst_seconds
from netfleet.analysis.analyze import pool
from netfleet.analysis.compare import (
    METRICS,
    SMALL,
    bootstrap_diff,
    difference,
    welch_interval,
)
from netfleet.analysis.refill import _fit_line
from netfleet.analysis.stats import mean_interval, t_quantile, z_quantile

LEVELS = (0.9, 0.95, 0.99)
TOL = 1e-6


@pytest.fixture(scope="module")
def stats() -> ModuleType:
    """SciPy's ``stats``, imported by the tests that compare with it (not at collection: every
    xdist worker collects this file, most never run it)."""
    from scipy import stats

    return stats


def samples(seed: int, n: int, loc: float, scale: float) -> list[float]:
    return list(np.random.default_rng(seed).normal(loc, scale, n))


@pytest.mark.parametrize("level", LEVELS)
def test_quantiles_are_scipys(level: float, stats: ModuleType) -> None:
    for dof in (1, 2.5, 7, 29, 31, 200):
        assert t_quantile(dof, level) == pytest.approx(stats.t.ppf((1 + level) / 2, dof), abs=TOL)
    assert z_quantile(level) == pytest.approx(stats.norm.ppf((1 + level) / 2), abs=TOL)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize(("na", "nb"), [(3, 3), (4, 7), (12, 15)])
def test_welch_interval_is_scipys(level: float, na: int, nb: int, stats: ModuleType) -> None:
    a, b = samples(na, na, 300.0, 12.0), samples(100 + nb, nb, 320.0, 30.0)
    lo, hi = welch_interval(a, b, level)
    ci = stats.ttest_ind(b, a, equal_var=False).confidence_interval(confidence_level=level)
    assert lo == pytest.approx(ci.low, abs=TOL)
    assert hi == pytest.approx(ci.high, abs=TOL)


@pytest.mark.parametrize("level", LEVELS)
def test_bootstrap_interval_is_scipys(level: float, stats: ModuleType) -> None:
    a, b = samples(1, 12, 300.0, 12.0), samples(2, 15, 320.0, 30.0)
    lo, hi = bootstrap_diff(a, b, level, 2000, seed=7)

    def diff(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.asarray(np.mean(y, axis=axis) - np.mean(x, axis=axis))

    ci = stats.bootstrap(
        (np.asarray(a), np.asarray(b)),
        diff,
        n_resamples=2000,
        confidence_level=level,
        method="percentile",
        paired=False,
        vectorized=True,
        rng=np.random.default_rng(7),
    ).confidence_interval
    assert lo == pytest.approx(ci.low, abs=TOL)
    assert hi == pytest.approx(ci.high, abs=TOL)


@pytest.mark.parametrize("level", LEVELS)
def test_compare_prints_at_least_welchs_interval_with_few_runs(
    level: float, stats: ModuleType
) -> None:
    """Three runs a side: the printed interval holds scipy's Welch interval at that level (the
    old code scaled a 95 % t by the normal ratio: 21-43 % too narrow at 0.99)."""
    a, b = samples(3, 3, 300.0, 12.0), samples(4, 3, 330.0, 25.0)
    d = difference({}, METRICS["goodput"], a, b, level=level, resamples=2000)
    ci = stats.ttest_ind(b, a, equal_var=False).confidence_interval(confidence_level=level)
    assert d.ci_low is not None and d.ci_high is not None
    assert d.ci_low <= ci.low + TOL and d.ci_high >= ci.high - TOL
    # widened to Welch's t: one end is exactly scipy's
    assert min(abs(d.ci_low - ci.low), abs(d.ci_high - ci.high)) < TOL


@pytest.mark.parametrize("level", LEVELS)
def test_compare_with_many_runs_prints_the_bootstrap(level: float, stats: ModuleType) -> None:
    a, b = samples(5, SMALL, 300.0, 12.0), samples(6, SMALL + 2, 310.0, 12.0)
    d = difference({}, METRICS["goodput"], a, b, level=level, resamples=2000, seed=3)
    assert (d.ci_low, d.ci_high) == pytest.approx(bootstrap_diff(a, b, level, 2000, 3), abs=TOL)


@pytest.mark.parametrize("level", LEVELS)
def test_level_plus_minus_is_scipys_t_interval(level: float, stats: ModuleType) -> None:
    """A level's ± (peak, baseline: mean of its samples, t · s/√n) is scipy's t interval."""
    values = samples(8, 9, 6750.0, 40.0)
    mean, err = mean_interval(values, noise_sd=0.0, level=level)
    lo, hi = stats.t.interval(level, len(values) - 1, loc=np.mean(values), scale=stats.sem(values))
    assert mean - err == pytest.approx(lo, abs=TOL)
    assert mean + err == pytest.approx(hi, abs=TOL)


@pytest.mark.parametrize("level", LEVELS)
def test_pooled_and_calculator_plus_minus_are_scipys(level: float, stats: ModuleType) -> None:
    """Several runs' buckets pooled (their own ± zero): scipy's t interval of their mean; the
    calculator's burst length on that bucket carries the same interval through σ / (X − ρ)."""
    buckets = [2690e9, 2712e9, 2701e9, 2695e9]
    pooled = pool([Estimate(v) for v in buckets], level=level)
    assert pooled is not None
    k, mean, sem = len(buckets) - 1, np.mean(buckets), stats.sem(buckets)
    lo, hi = stats.t.interval(level, k, loc=mean, scale=sem)
    assert pooled.err == pytest.approx((hi - lo) / 2, rel=TOL)
    model = BucketModel(Estimate(0.75e9), Estimate(10e9), pooled)
    secs = burst_seconds(model, 10e9)
    assert secs.err == pytest.approx((hi - lo) / 2 / (10e9 - 0.75e9), rel=TOL)


@pytest.mark.parametrize("level", LEVELS)
def test_refill_line_plus_minus_is_scipys(level: float, stats: ModuleType) -> None:
    """The refill rate's ± (a least-squares slope over idle time, points' own ± zero): scipy's
    ``linregress`` standard errors times the t quantile on n − 2 degrees of freedom."""
    t = np.array([30.0, 60.0, 90.0, 120.0, 180.0, 240.0])
    y = 0.75e9 * t + np.random.default_rng(9).normal(0, 2e9, t.size)
    line = _fit_line(t, y, np.zeros(t.size), level=level)
    fit = stats.linregress(t, y)
    q = stats.t.ppf((1 + level) / 2, t.size - 2)
    assert line.slope == pytest.approx(fit.slope, rel=1e-9)
    assert line.slope_err == pytest.approx(q * fit.stderr, rel=TOL)
    assert line.offset_err == pytest.approx(q * fit.intercept_stderr, rel=TOL)
