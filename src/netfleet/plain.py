"""Plain value classes that behave as dataclasses do, without ``dataclasses`` (issue 26): a
dataclass costs every process that defines it half a millisecond, and the module loads
``inspect``, ``dis``, ``ast`` and ``tokenize`` — the no-op import and its cached cheat sheet
define several on every run.

A subclass names its fields in ``__slots__`` (in order) and sets them in its ``__init__``;
:class:`Plain` gives it the dataclass's ``==`` (same class, every field equal), ``repr``
(``Name(field=value, …)``), no hash (mutable) and pickling through ``__init__``;
:class:`Frozen` as a frozen dataclass: read-only fields (set once with :meth:`Frozen._set`)
and a hash of the fields. tests/test_plain_classes.py checks each class against the
dataclass it was.
"""

from __future__ import annotations

from typing import Any


class Plain:
    """Fields in ``__slots__``; ``==``, ``repr`` and pickling as a dataclass's."""

    __slots__: tuple[str, ...] = ()

    def _fields(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Plain) or other.__class__ is not self.__class__:
            return NotImplemented
        return self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]  # mutable, as a dataclass is

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__qualname__}({shown})"

    def __reduce__(self) -> tuple[type[Plain], tuple[Any, ...]]:
        return (type(self), self._fields())  # pickled and copied through ``__init__``


class Frozen(Plain):
    """:class:`Plain`, read-only (a frozen dataclass's ``AttributeError``), hashed by its
    fields (a ``TypeError`` when one is a list or a dict, as a frozen dataclass's)."""

    __slots__: tuple[str, ...] = ()

    def _set(self, *values: Any) -> None:
        """Set the fields, in ``__slots__``'s order (from ``__init__``)."""
        for name, value in zip(self.__slots__, values, strict=True):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}")

    def __hash__(self) -> int:  # type: ignore[override]  # Plain's None: mutable
        return hash(self._fields())
