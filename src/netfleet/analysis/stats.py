"""Small robust-statistics helpers shared by the analysis modules (numpy only)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]

#: consistency constant: MAD × 1.4826 estimates the standard deviation of normal data
MAD_TO_SD = 1.4826
#: two-sided 97.5 % quantiles of Student's t for 1–30 degrees of freedom (then 1.96)
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip
Z975 = 1.96


def t975(dof: int) -> float:
    """Student's t quantile for a two-sided 95 % interval with ``dof`` degrees of freedom."""
    if dof < 1:
        raise ValueError("a t quantile needs at least one degree of freedom")
    return _T975[dof - 1] if dof <= len(_T975) else Z975


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


def mean_interval(values: Sequence[float] | FloatArray, noise_sd: float) -> tuple[float, float]:
    """Mean and the half-width of its 95 % interval: t · s/√n with s the sample standard
    deviation, never below ``noise_sd`` (which is also used when n = 1)."""
    arr = np.asarray(values, dtype=np.float64)
    n = arr.size
    if n == 0:
        raise ValueError("no values")
    mean = float(arr.mean())
    sd = float(arr.std(ddof=1)) if n > 1 else 0.0
    sd = max(sd, noise_sd)
    return mean, (t975(n - 1) if n > 1 else Z975) * sd / math.sqrt(n)


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
