"""Rendering of tabular answers: terminal tables, markdown, CSV, JSON.

The renderers (:mod:`netfleet.report.output`: CSV, JSON, dates) load on first use of these
names: a cheat sheet printed from its kept text (:mod:`netfleet.report.cheatsheet`) needs none
of them (issue 26)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from netfleet.report.output import OutputFormat, Tabular, render

__all__ = ["OutputFormat", "Tabular", "render"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from netfleet.report import output

        return getattr(output, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
