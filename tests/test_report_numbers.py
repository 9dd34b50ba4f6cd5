"""One set of number rules for every human rendering: the HTML and markdown report, terminal and
markdown tables, the analysis tables and plot labels."""

from __future__ import annotations

from rich.console import Console

from netfleet.analysis import analyze_series
from netfleet.analysis.estimate import Estimate
from netfleet.analysis.series import RunInfo
from netfleet.report.analysis_tables import estimate_text, groups_table
from netfleet.report.document import Table, cell_text
from netfleet.report.html import _table_html
from netfleet.report.markdown import _table_md
from netfleet.report.numbers import exact, pm, quantity, sig
from netfleet.report.output import render
from netfleet.tabular import Tabular
from tests.bucketsim import token_bucket_series


def test_the_error_sets_the_precision() -> None:
    assert pm(285.922, 2.256) == "286 ± 2"  # the burst section's old "285.922 ± 2.256"
    assert pm(468.088, 22.772) == "468 ± 23"  # never rounded left of the units digit
    assert pm(3.4132, 0.152) == "3.41 ± 0.15"  # a leading 1 keeps two digits
    assert pm(0.04321, 0.0038) == "0.043 ± 0.004"
    assert pm(9413.2, 0.9) == "9,413.2 ± 0.9"
    assert pm(286.4, 0.0) == "286" and pm(3.456, 0.1, lower_bound=True) == "≥ 3.46"
    assert pm(3.456, lower_bound=True) == "≥ 3.46"
    assert pm(-0.0004, 0.01) == "0.000 ± 0.010"  # no "-0"
    assert quantity(285.922e6, "Mbit/s", 2.256e6, scale=1e6) == "286 ± 2 Mbit/s"
    assert quantity(None, "Mbit/s") == ""
    assert estimate_text(Estimate(3.4e9, 0.3e9, True), "Gbit", 1e9) == "≥ 3.4 Gbit"


def test_plain_numbers_get_three_significant_digits() -> None:
    assert sig(468.088) == "468" and sig(22.772) == "22.8" and sig(0.038321) == "0.0383"
    assert sig(12345.6) == "12,346" and sig(0.0050123, 2) == "0.0050"
    assert sig(float("inf")) == "∞" and sig(float("nan")) == "?" and sig(0.0) == "0"
    assert cell_text(0.085) == "0.0850" and cell_text(None) == "" and cell_text(False) == "no"
    # exact values (formulas over given inputs): 4 digits, no trailing zeros
    assert exact(291.8918) == "291.9" and exact(0.75) == "0.75" and exact(2700.0) == "2,700"


def test_html_markdown_and_terminal_tables_show_the_same_numbers() -> None:
    t = Tabular(["mbps", "ratio", "n"], [[285.9221, 0.95634, 12]], decimals=3)
    html = _table_html(Table(t))
    md = "\n".join(_table_md(Table(t)))
    term = Console(record=True, width=120)
    term.print(render(t, "table"))
    text = term.export_text()
    for out in (html, md, text, render(t, "markdown")):
        assert "286" in out and "0.956" in out and "285.92" not in out, out
    assert '"mbps": 285.9221' in render(t, "json")  # machine formats keep every digit


def test_the_reports_analysis_tables_carry_units_in_each_cell() -> None:
    series = token_bucket_series(300e6, 40e6, 1040e6, 14, peak_noise=0.01, seed=3)
    a = analyze_series(RunInfo("r", direction="out", labels={"instance_type": "x"}), series)
    from netfleet.analysis import GroupAnalysis

    group = GroupAnalysis({"instance_type": "x"}, (a,))
    narrow = groups_table([group], unit="mbit").records()[0]  # terminal: the title has units
    assert " ± " in narrow["peak"] and "Mbit" not in narrow["peak"]
    row = groups_table([group], unit="mbit", units_in_cells=True).records()[0]
    assert row["peak"].endswith(" Mbit/s") and " ± " in row["peak"], row
    assert row["credit"].endswith(" Mbit") and row["at_peak_s"].endswith(" s"), row
    _value, err = row["peak"].removesuffix(" Mbit/s").split(" ± ")
    assert len(err.replace(".", "").strip("0")) <= 2  # one or two significant digits
