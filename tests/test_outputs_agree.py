"""Issue 9 case 8: machine-readable outputs carry units and the rate basis on every row, the
refill rate and cap are in the analyze table, and markdown keeps the notes."""

from __future__ import annotations

import json
from pathlib import Path

from netfleet.analysis import token_bucket_series
from netfleet.analysis.analyze import analyze_series
from netfleet.analysis.series import RunInfo
from netfleet.report.analysis_tables import runs_table
from netfleet.report.output import render
from netfleet.runner.hostcpu import busy_note, cpu_times


def test_json_rows_say_their_units_and_basis_and_markdown_keeps_notes() -> None:
    series = token_bucket_series(400e6, 50e6, 350e6 * 6, 20, jitter=0.002)
    a = analyze_series(RunInfo("r1"), series)
    table = runs_table([a], keys=(), rate="wire", human=False)
    [record] = json.loads(render(table, "json"))["rows"]
    assert record["rate_unit"] == "Gbit/s" and record["credit_unit"] == "Gbit"
    assert record["rate_basis"] == "wire"
    assert {"refill_rate", "refill_rate_err", "refill_cap", "refill_cap_err"} <= set(record)
    assert record["peak"] is not None
    human = runs_table([a], keys=(), rate="goodput", human=True)
    md = render(human, "markdown")
    assert all(f"- {n}" in md for n in human.notes)


def test_a_peak_measured_on_saturated_cpus_is_labelled_host_limited() -> None:
    """Issue 9 case 4: a peak a busy host could not reach was 9.6 % low with a ± that did not
    hold the truth. With CPUs saturated it is labelled host-limited and its ± is ≥ 10 %."""
    series = token_bucket_series(400e6, 50e6, 350e6 * 6, 20, jitter=0.002)
    busy = {"host_cpu": {"busy_percent": 97.0, "source": "/proc/stat"}}
    a = analyze_series(RunInfo("r", parallel=1, notes=busy), series)
    assert a.credit.peak is not None and a.credit.peak.err >= 0.1 * a.credit.peak.value
    assert a.credit.peak.contains(400e6 * 0.904)  # 9.6 % low is now inside the ±
    assert any("host-limited" in n and "97 %" in n for n in a.credit.notes)
    calm = analyze_series(RunInfo("r", notes={"host_cpu": {"busy_percent": 40.0}}), series)
    assert not any("host-limited" in n for n in calm.credit.notes)


def test_cpu_busy_share_from_proc_stat(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 0 100 800 0 0 0 0 0 0\n")
    before = cpu_times(stat)
    stat.write_text("cpu  190 0 190 820 0 0 0 0 0 0\n")
    note = busy_note(before, cpu_times(stat))
    assert note is not None and note["busy_percent"] == 90.0
    assert cpu_times(tmp_path / "missing") is None
