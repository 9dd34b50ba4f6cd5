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
    """Centered running median; the window shrinks at the ends (no padding). It removes runs of
    up to ``width // 2`` outliers and keeps steps between longer runs exactly."""
    if width < 2 or values.size == 0:
        return values.copy()
    half = width // 2
    out = np.empty_like(values)
    for i in range(values.size):
        out[i] = np.median(values[max(0, i - half) : i + half + 1])
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


def diff_autocorrelation(values: FloatArray) -> float:
    """Lag-1 autocorrelation φ of the noise, from the first differences (for AR(1) noise their
    lag-1 correlation is −(1 − φ)/2): φ = 1 + 2·corr(Δx_i, Δx_i+1). Differences are clipped at
    4 MAD first, so level changes and spikes do not count. 0 when it cannot be told."""
    if values.size < 5:
        return 0.0
    d = np.diff(values)
    spread = 4 * mad(d)
    if spread == 0.0:
        return 0.0
    centre = float(np.median(d))
    d = np.clip(d, centre - spread, centre + spread)
    a, b = d[:-1] - d[:-1].mean(), d[1:] - d[1:].mean()
    denom = math.sqrt(float((a * a).sum() * (b * b).sum()))
    return 0.0 if denom == 0.0 else 1.0 + 2.0 * float((a * b).sum()) / denom
