"""Rendering of tabular answers: terminal tables, markdown, CSV, JSON."""

from netfleet.report.output import OutputFormat, Tabular, render

__all__ = ["OutputFormat", "Tabular", "render"]
