"""The credit calculator against seed 004's numbers, its errors, and ``netfleet credit calc``."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from netfleet.analysis import (
    BucketModel,
    Estimate,
    accrual_rate,
    burst_period,
    burst_seconds,
    duty_cycle,
    refill_seconds,
    rule_of_thumb_period,
)
from netfleet.analysis.calculator import plan
from netfleet.cli.boundary import guarded
from netfleet.cli.main import app
from netfleet.errors import InputError
from netfleet.report.analysis_tables import calc_table

G = 1e9
R4_LARGE = BucketModel.of(0.75 * G, 10 * G, 2700 * G)


def cli(*args: str) -> int:
    return guarded(lambda: app(list(args), standalone_mode=False, prog_name="netfleet"))


def test_seed_004_worked_example() -> None:
    """Baseline 0.75, use 0.6: accrue 0.15 Gbit/s; 10 s at 10 Gbit/s every ~660 s."""
    assert accrual_rate(R4_LARGE, 0.6 * G).value == pytest.approx(0.15 * G)
    thumb = rule_of_thumb_period(R4_LARGE, 10 * G, 10, 0.6 * G)
    assert thumb == pytest.approx(666.7, abs=0.1)  # the seed's "10 / 0.15" × 10 s, "~660"
    assert rule_of_thumb_period(R4_LARGE, 10 * G, 1, 0.6 * G) == pytest.approx(66.7, abs=0.1)
    # the exact balance: the baseline keeps accruing while bursting, u is part of X
    exact = burst_period(R4_LARGE, 10 * G, 10, 0.6 * G)
    assert exact.value == pytest.approx(10 * (10 - 0.6) / 0.15)
    assert exact.value == pytest.approx(660, rel=0.06)


@pytest.mark.parametrize(
    ("baseline", "credit", "seconds"),
    [(0.75, 2700, 295), (1.25, 5145, 589), (2.5, 8925, 1191), (5, 11950, 2390)],
)
def test_seed_004_table_maximum_time_at_10_gbit(
    baseline: float, credit: float, seconds: float
) -> None:
    model = BucketModel.of(baseline * G, 10 * G, credit * G)
    assert burst_seconds(model, 10 * G).value == pytest.approx(seconds, rel=0.02)


def test_refill_from_empty_and_the_three_hour_idle() -> None:
    assert refill_seconds(R4_LARGE).value == pytest.approx(3600)  # 2700 / 0.75
    # seed 004: 3 h idle "should have" given 8100 credits; the bucket caps at 2700
    assert R4_LARGE.baseline.value * 3 * 3600 / G == pytest.approx(8100)
    assert refill_seconds(R4_LARGE, 0.6 * G).value == pytest.approx(18000)
    assert refill_seconds(R4_LARGE, 0.75 * G).value == float("inf")


def test_duty_cycle() -> None:
    d = duty_cycle(R4_LARGE, 0.05, 0.6 * G)
    assert d.burst_rate.value == pytest.approx(0.75 * G + 0.95 * 0.15 * G / 0.05)
    assert d.average_rate.value == pytest.approx(0.75 * G)  # the balance is the baseline
    assert d.max_period.value == pytest.approx(2700 * G / ((d.burst_rate.value - 0.75 * G) * 0.05))
    capped = duty_cycle(R4_LARGE, 0.01, 0.6 * G)
    assert capped.burst_rate.value == pytest.approx(10 * G)  # never above the peak
    assert capped.average_rate.value == pytest.approx(0.01 * 10 * G + 0.99 * 0.6 * G)


def test_uncertainty_follows_the_inputs() -> None:
    model = BucketModel(Estimate(0.75 * G, 0.05 * G), Estimate(10 * G), Estimate(2700 * G, 100 * G))
    t = burst_seconds(model, 10 * G)
    assert t.value == pytest.approx(2700 / 9.25)
    # the extremes over the inputs' corners: fewer credits and a lower baseline, and vice versa
    assert t.low <= 2600 / 9.3 and t.high >= 2800 / 9.2 * (1 - 1e-12)
    assert t.err == pytest.approx(2800 / 9.2 - 2700 / 9.25)
    floor = BucketModel(
        Estimate(0.75 * G), Estimate(10 * G), Estimate(2000 * G, 0, lower_bound=True)
    )
    assert burst_seconds(floor, 10 * G).lower_bound
    assert refill_seconds(floor).lower_bound


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: BucketModel.of(1 * G, 0.5 * G, 10 * G), "must be above the baseline"),
        (lambda: burst_seconds(R4_LARGE, 20 * G), "above the peak"),
        (lambda: burst_period(R4_LARGE, 10 * G, 400, 0), "more than the bucket"),
        (lambda: duty_cycle(R4_LARGE, 0.0), "not in"),
        (lambda: accrual_rate(R4_LARGE, -1.0), "negative"),
    ],
)
def test_impossible_questions_are_input_errors(call: object, match: str) -> None:
    with pytest.raises(InputError, match=match):
        call()  # type: ignore[operator]


def test_plan_lists_every_answer_with_its_formula() -> None:
    answers = {a.quantity: a for a in plan(R4_LARGE, 0.6 * G, None, 10, 0.05)}
    assert answers["10 s at peak C = 10 Gbit/s, once every"].formula == "b·(X − u) / (ρ − u)"
    assert "… seed 004's rule of thumb" in answers
    assert not any(q.startswith("time at X") for q in answers)  # X is the peak


def test_cli_calc_from_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli("credit", "calc", "--baseline", "0.75gbit", "--peak", "10gbit", "--bucket",
               "2700gbit", "--use", "0.6gbit", "--burst-seconds", "10", "--duty", "0.05",
               "-f", "json")  # fmt: skip
    assert code == 0
    rows = {r["quantity"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert rows["bucket σ (initial/max credit)"]["value"] == pytest.approx(2700)
    assert rows["bucket σ (initial/max credit)"]["unit"] == "Gbit"
    assert rows["10 s at peak C = 10 Gbit/s, once every"]["value"] == pytest.approx(626.67, 1e-4)
    assert rows["refill from empty, idle"]["value"] == pytest.approx(3600)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--baseline", "0.75", "--peak", "10gbit", "--bucket", "2700gbit"], "give a unit"),
        (["--baseline", "0.75gbit", "--peak", "10gbit", "--bucket", "2700"], "credits are Gbit"),
        (["--baseline", "0.75gbit", "--peak", "10gbit"], "missing bucket"),
        (["--baseline", "fast", "--peak", "10gbit", "--bucket", "1gbit"], "not a rate"),
    ],
)
def test_cli_calc_refuses_bad_numbers(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli("credit", "calc", *args) == 2
    assert message in capsys.readouterr().err


def _scaled_lab_run(tmp_path: Path) -> Path:
    """A captured credit run (tests/fixtures/series) stored as a ×0.05 lab's r4.large run."""
    series = Path(__file__).parent / "fixtures" / "series"
    doc = json.loads(gzip.decompress((series / "credit_out.json.gz").read_bytes()))
    doc["labels"].update(lab_scale=0.05, lab_time_scale=0.05, instance_type="r4.large")
    results = tmp_path / "results"
    part = results / "d=2026-11-22" / "campaign=series"
    part.mkdir(parents=True)
    (part / "credit_out.json.gz").write_bytes(gzip.compress(json.dumps(doc).encode()))
    return results


def test_cli_calc_from_a_scaled_lab_run_shows_the_cloud_figures_beside_the_lab(
    tmp_path: object, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 27: a run of a lab at ×0.05 (rates and times) stands for a cloud host 20× as fast
    whose bucket is 400× as large; every format shows both, labelled."""
    results = _scaled_lab_run(Path(str(tmp_path)))
    args = ("credit", "calc", "credit_out", "--results", str(results), "--unit", "gbit")
    assert cli(*args, "-f", "json") == 0
    out = json.loads(capsys.readouterr().out)
    rows = {r["quantity"]: r for r in out["rows"]}
    assert any("÷ 0.0025" in n for n in out["notes"]), out["notes"]
    base, peak = rows["baseline ρ"], rows["peak C"]
    bucket, at_peak = rows["bucket σ (initial/max credit)"], rows["time at peak, full bucket"]
    assert base["lab_scale"] == "lab ×0.05"
    assert peak["value"] == pytest.approx(0.4 * 0.956, rel=0.05)  # the lab's, as measured
    assert peak["cloud_value"] == pytest.approx(peak["value"] / 0.05)
    assert base["cloud_value"] == pytest.approx(base["value"] / 0.05)
    assert bucket["cloud_value"] == pytest.approx(bucket["value"] / 0.0025)
    assert bucket["cloud_err"] == pytest.approx(bucket["err"] / 0.0025)
    assert at_peak["cloud_value"] == pytest.approx(at_peak["value"] / 0.05)
    assert at_peak["cloud_unit"] == "s" and bucket["cloud_unit"] == "Gbit"
    assert cli(*args, "-f", "csv") == 0
    header = capsys.readouterr().out.splitlines()[0]
    assert "cloud_value" in header and "lab_scale" in header
    for fmt in ("table", "markdown"):
        assert cli(*args, "-f", fmt) == 0
        text = capsys.readouterr().out
        assert "cloud" in text and "lab ×0.05" in text, text
        cloud_bucket = f"{bucket['cloud_value']:,.0f}"  # ≈ 1,377 Gbit
        assert cloud_bucket in text, (cloud_bucket, text)


def test_analyze_terminal_puts_a_scaled_run_s_cloud_figures_in_a_row_under_it(
    tmp_path: Path,
) -> None:
    """Issue 27: at 100 columns one long ``cloud`` cell wrapped word by word; the terminal
    table has the cloud figures in the quantity columns of a row labelled ``cloud``."""
    from rich.console import Console

    from netfleet.analysis import analyze_run
    from netfleet.report.analysis_tables import runs_table
    from netfleet.report.output import render

    a = analyze_run(str(_scaled_lab_run(tmp_path)), "credit_out")
    t = runs_table([a], ("instance_type", "direction"), "goodput", "auto", True, True)
    lab_row, cloud_row = t.records()
    assert "cloud" not in t.columns and lab_row["lab_scale"] == "lab ×0.05"
    assert cloud_row["lab_scale"] == "cloud" and cloud_row["run_id"] == ""
    peak = a.estimate("goodput").peak
    assert peak is not None and cloud_row["peak"].startswith(f"{peak.value / 0.05 / 1e9:.2f}")
    assert cloud_row["peak"].endswith("Gbit/s") and cloud_row["credit"].endswith("Gbit")
    console = Console(width=100, record=True)
    console.print(render(t, "table"))
    text = console.export_text()
    assert max(map(len, text.splitlines())) <= 100
    assert "cloud" in text and "Gbit/s" in text and "lab ×0.05" in text


def test_issue_36_use_above_the_baseline_is_never_unlimited(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """001d0e3: "unlimited" and "burst rate sustained … −1.5 Gbit/s", exit 0."""
    args = ("credit", "calc", "--baseline", "0.75gbit", "--peak", "10gbit", "--bucket",
            "2700gbit", "--use", "1gbit", "--burst-seconds", "10", "--duty", "0.1")  # fmt: skip
    assert cli(*args, "-f", "json") == 0
    rows = {r["quantity"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    never = "never: 1 Gbit/s exceeds the 0.75 Gbit/s baseline; a full bucket empties in 10,800 s"
    for q in ("refill from empty at use u", "10 s at peak C = 10 Gbit/s, once every",
              "burst rate sustained at duty 0.1"):  # fmt: skip
        assert rows[q]["never"] == never and rows[q]["value"] is None
    assert rows["full bucket empties at use u"]["value"] == pytest.approx(10_800)
    assert rows["credit drained at use u"]["value"] == pytest.approx(0.25)
    assert all(r["value"] is None or r["value"] >= 0 for r in rows.values())
    assert cli(*args) == 0
    text = capsys.readouterr().out
    assert "unlimited" not in text and "-1.5" not in text and "−1.5" not in text
    assert "never: 1 Gbit/s exceeds" in text


@pytest.mark.parametrize("bucket", ["2700G", "2700g", "2700M"])
def test_issue_36_a_bucket_in_iperf3_s_bare_units_is_refused_with_both_readings(
    bucket: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """001d0e3 read --bucket 2700G as 2700 GiB (23,193 Gbit) beside --peak 10G = 10 Gbit/s."""
    args = ("credit", "calc", "--baseline", "0.75G", "--peak", "10G", "--bucket", bucket)
    assert cli(*args) == 2
    n, p = bucket[:-1], bucket[-1].lower()
    assert f"{n}{p}bit or {n}{p.upper()}iB?" in capsys.readouterr().err


def test_issue_36_given_figures_on_a_scaled_lab_run_are_the_cloud_s(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """001d0e3 read --use 0.6gbit on a ×0.05 lab run as the lab's: "credit accrued at use u |
    −11.28 Gbit/s" (cloud). Now 0.6 is the cloud's; above the baseline it says never."""
    results = _scaled_lab_run(tmp_path)
    args = ("credit", "calc", "credit_out", "--results", str(results), "--unit", "gbit",
            "--burst-seconds", "10", "-f", "json")  # fmt: skip
    assert cli(*args, "--use", "0.6gbit") == 0
    out = json.loads(capsys.readouterr().out)
    rows = {r["quantity"]: r for r in out["rows"]}
    base = rows["baseline ρ"]["cloud_value"]
    accrued = rows["credit accrued at use u"]
    assert accrued["cloud_value"] == pytest.approx(base - 0.6)
    assert accrued["value"] == pytest.approx((base - 0.6) * 0.05)
    peak = rows["peak C"]["cloud_value"]
    every = next(q for q in rows if q.startswith("10 s at peak C = "))
    assert every == f"10 s at peak C = {rows['peak C']['cloud_value']:.4g} Gbit/s, once every"
    period = rows[every]  # 10 cloud seconds at the cloud peak
    assert period["cloud_value"] == pytest.approx(10 * (peak - 0.6) / (base - 0.6), rel=1e-3)
    assert any("taken as the cloud's" in n for n in out["notes"])
    assert cli(*args, "--use", "2gbit") == 0
    rows = {r["quantity"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert rows[every]["never"].startswith(
        f"never: 2 Gbit/s (cloud) exceeds the {base:.4g} Gbit/s baseline"
    )
    assert rows["credit drained at use u"]["cloud_value"] == pytest.approx(2 - base)


def test_issue_36_calculator_rows_say_what_x_is_and_give_a_plus_minus_note_only_with_a_plus_minus(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """001d0e3: "10 s at X, once every" (X = peak?) and "± from the inputs' ±" under numbers
    given without any ±."""
    args = ("credit", "calc", "--baseline", "0.75gbit", "--peak", "10gbit", "--bucket",
            "2700gbit", "--burst-seconds", "10", "--burst-rate", "5gbit")  # fmt: skip
    assert cli(*args, "-f", "json") == 0
    out = json.loads(capsys.readouterr().out)
    rows = {r["quantity"]: r for r in out["rows"]}
    assert rows["time at X = 5 Gbit/s, full bucket"]["value"] == pytest.approx(2700 / 4.25)
    assert "10 s at X = 5 Gbit/s, once every" in rows
    assert not any(" at X," in q for q in rows)
    assert not any("±" in n for n in out["notes"])
    assert cli(*args[:-2]) == 0
    text = capsys.readouterr().out
    assert "at peak C = 10 Gbit/s, once" in text and "±" not in text
    measured = BucketModel(Estimate(0.75 * G, 0.01 * G), Estimate(10 * G), Estimate(2700 * G))
    table = calc_table(plan(measured, seconds=10))
    assert any("± from the inputs' ±" in n for n in table.notes)


def test_issue_36_a_study_report_gives_one_time_at_peak_per_burst_group() -> None:
    """001d0e3's report gave the best run's σ/(C − ρ) in seed 004's table, each run's measured
    burst in the group table and the pooled model's σ/(C − ρ) in the calculator: now the one
    the calculator answers from, in both places."""
    from netfleet.report.document import Table
    from netfleet.report.study_report import burst_section
    from tests.test_seed_truth import _group

    g = _group("credit_out", "out", instance_type="r4.large")
    section = burst_section([g])
    assert section is not None
    tables = [b.data for b in section.blocks if isinstance(b, Table)]
    credit, per_group, calc = tables[0], tables[1], tables[2]
    assert "at_peak_s" not in per_group.columns
    (rec,) = credit.records()
    at_peak = next(r for r in calc.records() if r["quantity"] == "time at peak, full bucket")
    seconds = float(at_peak["value"].split(" ")[0].replace(",", ""))
    assert float(rec["max_time_at_peak_s"]) == pytest.approx(seconds, rel=0.01)
