"""Issue 9 case 8: machine-readable outputs carry units and the rate basis on every row, the
refill rate and cap are in the analyze table, and markdown keeps the notes."""

from __future__ import annotations

import json

from netfleet.analysis import token_bucket_series
from netfleet.analysis.analyze import analyze_series
from netfleet.analysis.series import RunInfo
from netfleet.analysis.table import runs_table
from netfleet.report.output import render


def test_json_rows_say_their_units_and_basis_and_markdown_keeps_notes() -> None:
    series = token_bucket_series(400e6, 50e6, 350e6 * 6, 20, jitter=0.002)
    a = analyze_series(RunInfo("r1"), series)
    table = runs_table([a], keys=(), rate="wire", human=False)
    [record] = json.loads(render(table, "json"))
    assert record["rate_unit"] == "Gbit/s" and record["credit_unit"] == "Gbit"
    assert record["rate_basis"] == "wire"
    assert {"refill_rate", "refill_rate_err", "refill_cap", "refill_cap_err"} <= set(record)
    assert record["peak"] is not None
    human = runs_table([a], keys=(), rate="goodput", human=True)
    md = render(human, "markdown")
    assert all(f"- {n}" in md for n in human.notes)
