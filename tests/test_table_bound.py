"""A terminal table is bounded (issue 37): ``sql "select * from runs"`` over 100,000 runs took
397 s and 4.5 GB as a Rich table. The table shows as many rows as 10,000 cells hold (at least
100) and says how many it left out; the other formats print every row."""

from __future__ import annotations

from netfleet.report.output import OutputFormat, render
from netfleet.tabular import Tabular


def _runs(rows: int, columns: int = 45) -> Tabular:
    return Tabular(
        columns=[f"c{i}" for i in range(columns)],
        rows=[[f"run-{n}", *range(columns - 1)] for n in range(rows)],
        notes=["units: none"],
    )


def test_a_large_result_is_a_bounded_table_with_a_note() -> None:
    table = render(_runs(100_000), OutputFormat.table)
    assert table.row_count == 10_000 // 45
    assert "showing the first 222 of 100,000 rows: -f csv, json or markdown prints them all" in str(
        table.caption
    )
    assert "units: none" in str(table.caption)


def test_a_small_result_is_whole_and_other_formats_print_every_row() -> None:
    assert render(_runs(150, columns=3), OutputFormat.table).row_count == 150
    assert len(render(_runs(5_000), OutputFormat.csv).splitlines()) == 5_001
