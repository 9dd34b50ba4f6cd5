"""Tolerant coercion of JSON values into typed columns: a wrong type becomes NULL, never a crash."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from itertools import compress
from typing import Any

_EMPTY: Mapping[str, Any] = {}
_INT64 = range(-(2**63), 2**63)


def obj(value: Any) -> Mapping[str, Any]:
    """``value`` if it is a JSON object, else an empty one."""
    if type(value) is dict:  # the common cases, without the ABC check (a hot path of ingest)
        return value
    if value is None:
        return _EMPTY
    return value if isinstance(value, Mapping) else _EMPTY


def as_int(value: Any) -> int | None:
    """An integer that fits the int64 columns, else None."""
    number: int | None = None
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        number = value
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        number = int(value)
    elif isinstance(value, str):
        try:
            number = int(value.strip())
        except ValueError:
            return None
    return number if number is not None and number in _INT64 else None


def as_float(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        try:
            number = float(value)
        except OverflowError:  # an int beyond a float's range
            return None
        return number if math.isfinite(number) else None
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


def as_bool(value: Any) -> bool | None:
    """JSON booleans, and iperf3's 0/1 integers (``test_start.reverse``)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    return None


def as_str(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)


class Columns:
    """A table's rows as one list per column (``lists``: name → values, each list as long as
    the others): built a column at a time, where a dict per row costs ≈ 3 µs (iperf3's
    interval rows, hundreds a run). A column not held reads as NULLs; ``names``, the table's
    columns when known, are the keys of every row :meth:`rows` gives (those not held: None)."""

    __slots__ = ("lists", "names")

    def __init__(
        self, lists: dict[str, list[Any]] | None = None, names: tuple[str, ...] = ()
    ) -> None:
        self.lists = {} if lists is None else lists
        self.names = names

    @classmethod
    def of_rows(cls, rows: Iterable[Mapping[str, Any]], names: Iterable[str]) -> Columns:
        """Dict rows (a small engine's) as columns of ``names``."""
        rows = list(rows)
        return cls({name: [row.get(name) for row in rows] for name in names})

    def __len__(self) -> int:
        return len(next(iter(self.lists.values()), ()))

    def column(self, name: str) -> list[Any]:
        values = self.lists.get(name)
        return [None] * len(self) if values is None else values

    def rows(self) -> list[dict[str, Any]]:
        """A dict per row (for readers of one run: analysis, tests)."""
        names = self.names or tuple(self.lists)
        lists = [self.column(name) for name in names]
        return [dict(zip(names, row, strict=True)) for row in zip(*lists, strict=True)]

    def where(self, name: str, value: Any, *, equal: bool = True) -> Columns:
        """The rows whose ``name`` is ``value`` (``equal=False``: is not)."""
        column = self.column(name)
        if not equal and value not in column:
            return self
        chosen = [(v == value) is equal for v in column]
        return Columns({n: list(compress(v, chosen)) for n, v in self.lists.items()}, self.names)

    def extend(self, other: Columns) -> None:
        """``other``'s rows after these (columns only one of them holds: NULL in the other)."""
        size, more = len(self), len(other)
        self.names = self.names or other.names
        for name in other.lists.keys() - self.lists.keys():
            self.lists[name] = [None] * size
        for name, values in self.lists.items():
            values.extend(other.column(name) if more else ())
