"""Rendering of tabular answers: terminal tables, markdown, CSV, JSON.

The renderers (:mod:`netfleet.report.output`: CSV, JSON, dates) load on first use of these
names: a cheat sheet printed from its kept text (:mod:`netfleet.report.cheatsheet`) needs none
of them (issue 26)."""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (2.5 ms a command)
if TYPE_CHECKING:
    from typing import Any

    from netfleet.report.output import OutputFormat, Tabular, render

__all__ = ["OutputFormat", "Tabular", "render"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from netfleet.report import output

        return getattr(output, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
