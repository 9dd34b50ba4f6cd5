"""A token bucket, simulated exactly per interval: what a credit link delivers to a sender that
always has data. Test machinery (it was ``netfleet.analysis.simulate``): the product never
imports it (tests/test_layers.py)."""

from __future__ import annotations

import numpy as np

from netfleet.analysis.series import Series


def token_bucket_series(
    peak: float,
    baseline: float,
    bucket: float,
    seconds: int,
    *,
    interval: float = 1.0,
    start: float | None = None,
    peak_noise: float = 0.0,
    jitter: float = 0.0,
    seed: int | None = 0,
) -> Series:
    """Bits received per interval through a bucket of ``bucket`` bits that refills at
    ``baseline`` bits/s, by a sender capped at ``peak`` while credit lasts.

    ``start``: credit at t = 0 (default: full). ``peak_noise``: relative standard deviation of
    the path's ceiling, drawn per interval (the bucket still decides: a slower peak just lasts
    longer). ``jitter``: measurement noise that moves bits between neighbouring intervals
    (standard deviation, relative to the baseline's bits per interval; zero-sum, as when a
    report's boundary falls a little early or late). ``seed``: the noise's draw, the same on
    every run unless another is asked for (``None``: a fresh one) — a test's verdict never
    hangs on an unseeded draw (CI once printed a refill of 3,599 s where 3,600 was asserted)."""
    rng = np.random.default_rng(seed)
    level = bucket if start is None else start
    n = int(seconds / interval)
    bits = np.empty(n)
    for i in range(n):
        cap = max(peak * (1.0 + peak_noise * rng.standard_normal()), 0.0) if peak_noise else peak
        if cap > baseline:
            at_peak = min(interval, level / (cap - baseline))
            bits[i] = cap * at_peak + baseline * (interval - at_peak)
            level = max(0.0, level - (cap - baseline) * interval)
        else:
            bits[i] = cap * interval
            level = min(bucket, level + (baseline - cap) * interval)
    if jitter and n > 1:
        moved = jitter * baseline * interval * rng.standard_normal(n - 1)
        bits[:-1] += moved
        bits[1:] -= moved
    return Series.from_rates(np.maximum(bits, 0.0) / interval, interval)
