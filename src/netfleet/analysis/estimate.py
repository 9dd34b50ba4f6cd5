"""A number with its uncertainty, or a lower bound."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Estimate:
    """``value ± err``: ``err`` is the half-width of an approximately 95 % interval (how it is
    computed is documented per quantity in docs/analysis.md). ``lower_bound`` means the truth is
    at least ``value`` (e.g. the bucket of a burst that never ended) and ``err`` bounds ``value``
    itself."""

    value: float
    err: float = 0.0
    lower_bound: bool = False

    @property
    def low(self) -> float:
        return self.value - self.err

    @property
    def high(self) -> float:
        return math.inf if self.lower_bound else self.value + self.err

    def scaled(self, factor: float) -> Estimate:
        return Estimate(self.value * factor, self.err * abs(factor), self.lower_bound)

    def contains(self, truth: float, slack: float = 0.0) -> bool:
        """Whether ``truth`` lies in the interval (widened by ``slack``, relative to value)."""
        pad = abs(self.value) * slack
        return self.low - pad <= truth <= self.high + pad

    def text(self, scale: float = 1.0, decimals: int = 3) -> str:
        """``1.234 ± 0.010`` or ``≥ 1.234`` in units of ``scale``."""
        v = self.value / scale
        if self.lower_bound:
            return f"≥ {v:.{decimals}f}"
        return f"{v:.{decimals}f} ± {self.err / scale:.{decimals}f}"

    def as_dict(self, scale: float = 1.0) -> dict[str, float | bool]:
        return {
            "value": self.value / scale,
            "err": self.err / scale,
            "lower_bound": self.lower_bound,
        }


def fmt_bits(bits: float) -> str:
    """``3.443 Gbit``, ``993.4 Mbit``: a size in bits for notes, 4 significant digits (1 Gbit =
    1 credit)."""
    for unit, scale in (("Gbit", 1e9), ("Mbit", 1e6), ("kbit", 1e3)):
        if abs(bits) >= scale:
            return f"{bits / scale:.4g} {unit}"
    return f"{bits:.0f} bit"
