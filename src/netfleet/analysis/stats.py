"""Small robust-statistics helpers shared by the analysis modules (numpy; quantiles from
scipy.stats, imported when first needed)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]

#: consistency constant: MAD × 1.4826 estimates the standard deviation of normal data
MAD_TO_SD = 1.4826
#: z with P(|Z| < z) = 0.95: ``scipy.stats.norm.ppf(0.975)``, to full precision
Z975 = 1.959963984540054


def t_quantile(dof: float, level: float = 0.95) -> float:
    """Student's t quantile of a two-sided ``level`` interval with ``dof`` degrees of freedom
    (fractional for Welch–Satterthwaite): ``scipy.stats.t.ppf((1 + level) / 2, dof)``."""
    if dof <= 0:
        raise ValueError("a t quantile needs a positive number of degrees of freedom")
    if not 0 < level < 1:
        raise ValueError(f"a confidence level is between 0 and 1, not {level}")
    from scipy.stats import t

    return float(t.ppf((1 + level) / 2, dof))


def z_quantile(level: float = 0.95) -> float:
    """z with P(|Z| < z) = ``level``: ``scipy.stats.norm.ppf((1 + level) / 2)``."""
    if not 0 < level < 1:
        raise ValueError(f"a confidence level is between 0 and 1, not {level}")
    from scipy.stats import norm

    return float(norm.ppf((1 + level) / 2))


def t975(dof: int) -> float:
    """Student's t quantile for a two-sided 95 % interval with ``dof`` degrees of freedom."""
    if dof < 1:
        raise ValueError("a t quantile needs at least one degree of freedom")
    return t_quantile(dof, 0.95)


def mad(values: FloatArray) -> float:
    """Median absolute deviation from the median, scaled to a standard deviation."""
    if values.size == 0:
        return 0.0
    return float(MAD_TO_SD * np.median(np.abs(values - np.median(values))))


def diff_noise(values: FloatArray) -> float:
    """Noise (standard deviation) of a piecewise-constant series from its first differences:
    MAD(Δx) / √2. A few level changes or single spikes barely move it."""
    if values.size < 2:
        return 0.0
    return mad(np.diff(values)) / math.sqrt(2.0)


def running_median(values: FloatArray, width: int) -> FloatArray:
    """Centered running median of ``width`` values; at the ends the window keeps its width and
    shifts inwards (no padding). It removes runs of up to ``width // 2`` outliers, also at the
    ends, and keeps steps between longer runs exactly."""
    n = values.size
    if width < 2 or n == 0:
        return values.copy()
    half = width // 2
    out = np.empty_like(values)
    for i in range(n):
        first = min(max(0, i - half), max(0, n - width))
        out[i] = np.median(values[first : first + width])
    return out


def mean_interval(
    values: Sequence[float] | FloatArray, noise_sd: float, level: float = 0.95
) -> tuple[float, float]:
    """Mean and the half-width of its two-sided ``level`` interval: t · s/√n with s the sample
    standard deviation, never below ``noise_sd`` (which is also used, with z, when n = 1)."""
    arr = np.asarray(values, dtype=np.float64)
    n = arr.size
    if n == 0:
        raise ValueError("no values")
    mean = float(arr.mean())
    sd = float(arr.std(ddof=1)) if n > 1 else 0.0
    sd = max(sd, noise_sd)
    q = t_quantile(n - 1, level) if n > 1 else z_quantile(level)
    return mean, q * sd / math.sqrt(n)


def hampel(
    values: FloatArray, width: int, threshold: float
) -> tuple[FloatArray, NDArray[np.bool_]]:
    """Hampel filter: a value further than ``threshold`` from the running median of its window
    is replaced by that median. Steps between runs longer than ``width // 2`` pass unchanged;
    the other values keep their own noise (unlike a plain running median, which would make the
    series smoother and autocorrelated). Returns the cleaned values and which were replaced."""
    med = running_median(values, width)
    replaced = np.abs(values - med) > threshold
    return np.where(replaced, med, values), replaced
