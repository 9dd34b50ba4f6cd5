"""Numbers for people: one set of rules for every human rendering (HTML and markdown reports,
terminal and markdown tables, plot labels).

- :func:`sig` — a plain number with 3 significant digits, never scientific, thousands
  separated: ``468``, ``22.8``, ``0.0383``, ``12,346``.
- :func:`pm` — a value with its ± at the precision the ± supports: the ± keeps one significant
  digit (two when it starts with 1, so 1.4 is not rounded to 1), the value is rounded to the same
  decimal place, never left of the units digit: ``286 ± 2``, ``468 ± 23``, ``3.41 ± 0.15``.
- :func:`exact` — a value with no ± at all (a formula over given inputs): 4 significant digits,
  no trailing zeros: ``291.9``, ``0.75``.
- :func:`quantity` — either of those with a unit: ``286 ± 2 Mbit/s``, ``≥ 3.4 Gbit``.
- :func:`cell_text` — a table cell: floats through :func:`sig`, booleans yes/no, None empty.

Machine formats (JSON, CSV) never go through here: they keep full numbers.
"""

from __future__ import annotations

import math
from datetime import date, datetime
from typing import Any

#: never more decimals than this, whatever the ± says
MAX_DECIMALS = 6


def _decimals_for(value: float, digits: int) -> int:
    if value == 0 or not math.isfinite(value):
        return 0
    return min(MAX_DECIMALS, max(0, digits - 1 - math.floor(math.log10(abs(value)))))


def _fixed(value: float, decimals: int) -> str:
    text = f"{value:,.{decimals}f}"
    if text.startswith("-") and not any(c in "123456789" for c in text):
        text = text[1:]  # no "-0"
    return text


def sig(value: float, digits: int = 3) -> str:
    """``468``, ``22.8``, ``0.0383``: ``digits`` significant digits, no trailing noise."""
    if value == 0:
        return "0"
    if math.isnan(value):
        return "?"
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    return _fixed(value, _decimals_for(value, digits))


def exact(value: float, digits: int = 4) -> str:
    """A value known exactly (computed from given inputs, no ±): ``digits`` significant digits
    without trailing zeros — ``291.9``, ``0.75``, ``2,700``."""
    text = sig(value, digits)
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def _err_decimals(err: float) -> int:
    """Decimals that show ``err`` with one significant digit (two when it starts with 1)."""
    lead = math.floor(math.log10(abs(err)))
    first = int(abs(err) / 10**lead + 1e-9)
    return min(MAX_DECIMALS, max(0, (1 if first == 1 else 0) - lead))


def pm(value: float, err: float = 0.0, lower_bound: bool = False, digits: int = 3) -> str:
    """``286 ± 2``, ``≥ 3.4``; without a usable ± the value gets ``digits`` significant digits."""
    if not math.isfinite(value):
        return sig(value)
    usable = math.isfinite(err) and err > 0
    if lower_bound:
        return "≥ " + (_fixed(value, _err_decimals(err)) if usable else sig(value, digits))
    if not usable:
        return sig(value, digits)
    decimals = _err_decimals(err)
    return f"{_fixed(value, decimals)} ± {_fixed(err, decimals)}"


def quantity(
    value: float | None,
    unit: str = "",
    err: float = 0.0,
    lower_bound: bool = False,
    scale: float = 1.0,
) -> str:
    """``286 ± 2 Mbit/s`` (value and ± divided by ``scale``); empty for None."""
    if value is None:
        return ""
    text = pm(value / scale, err / scale, lower_bound)
    return f"{text} {unit}" if unit else text


def cell_text(value: Any, digits: int = 3) -> str:
    """A table cell as text: floats with ``digits`` significant digits (thousands separated),
    booleans as yes/no, nothing for None/NaN."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return "" if math.isnan(value) else sig(value, digits)
    if isinstance(value, int):
        return f"{value:,}" if abs(value) >= 10_000 else str(value)
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, dict):
        return ", ".join(f"{k}={cell_text(v, digits)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(cell_text(v, digits) for v in value)
    return str(value)
