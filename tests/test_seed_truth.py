"""Issue 27: what a user reads around the numbers tells the truth — seed 002's own files keep
their region and instance type, and a sender-only import still gives a cheat sheet (said so).
Parsing and DuckDB only: the files are real iperf3 3.12 captures (tests/fixtures/import) with
the top-level keys seed 002's script appended."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from netfleet.catalog.ingestion import ingest
from netfleet.cli.boundary import guarded
from netfleet.cli.main import app
from netfleet.report.cheatsheet import cheatsheet
from netfleet.store import ResultsRoot
from netfleet.store.imports import import_files

FIX = Path(__file__).parent / "fixtures" / "import"


def cli(*args: str) -> int:
    return guarded(lambda: app(list(args), standalone_mode=False, prog_name="netfleet"))


def seed002_file(root: Path, day: str, name: str, **top: Any) -> Path:
    """A client-side -J capture (no server output: sender side only) as seed 002 stored it."""
    doc = json.loads((FIX / "v3_12_tcp.client.json").read_bytes())
    doc.update(top)
    src = root / f"d={day}" / f"{name}.json.gz"
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_bytes(gzip.compress(json.dumps(doc).encode()))
    return src


def test_seed002_files_keep_their_region_and_instance_type(tmp_path: Path, capsys: Any) -> None:
    raw = tmp_path / "in"
    seed002_file(
        raw, "2018-04-10", "t2.nano-1523348026", instanceType="t2.nano", region="us-east-1"
    )
    seed002_file(
        raw, "2018-04-11", "m5.large-1523348099", instanceType="m5.large", region="eu-west-1"
    )
    root = ResultsRoot(tmp_path / "r")
    report = import_files([str(raw)], root, pattern="seed002")
    assert report.bad == [] and len(report.imported) == 2
    labels = sorted((d["labels"] for d in map(root.read, root.files())), key=str)
    assert labels == [
        {"instance_type": "m5.large", "region": "eu-west-1"},
        {"instance_type": "t2.nano", "region": "us-east-1"},
    ]
    ingest(root, tmp_path / "c")
    code = cli(
        "cheatsheet", "--catalog", str(tmp_path / "c"), "--by", "region,instance_type",
        "--format", "json",
    )  # fmt: skip
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert [(r["region"], r["instance_type"]) for r in out["rows"]] == [
        ("eu-west-1", "m5.large"),
        ("us-east-1", "t2.nano"),
    ]


def test_a_path_that_disagrees_with_the_file_is_reported(tmp_path: Path) -> None:
    raw = tmp_path / "in"
    bad = seed002_file(raw, "2018-04-10", "c4.large-1523348026", instanceType="t2.nano")
    root = ResultsRoot(tmp_path / "r")
    report = import_files([str(raw)], root, pattern="seed002")
    assert report.imported == [] and len(report.bad) == 1
    where, why = report.bad[0]
    assert where == str(bad)
    assert "instance_type='c4.large'" in why and "'instanceType' is 't2.nano'" in why
    assert "--label instance_type=" in why
    assert list(root.files()) == []


def test_a_sender_only_import_gives_a_cheat_sheet_that_says_so(tmp_path: Path, capsys: Any) -> None:
    raw = tmp_path / "in"
    seed002_file(
        raw, "2018-04-10", "t2.nano-1523348026", instanceType="t2.nano", region="us-east-1"
    )
    root = ResultsRoot(tmp_path / "r")
    assert import_files([str(raw)], root, pattern="seed002").bad == []
    ingest(root, tmp_path / "c")
    sheet = cheatsheet(tmp_path / "c")  # the default: receiver side
    (row,) = sheet.records()
    assert row["instance_type"] == "t2.nano" and row["runs"] == 1 and row["avg"] > 0
    assert "sender side" in str(row["flag"])
    # issue 36: a sheet made of the senders' intervals only says so, title and first note
    assert str(sheet.title).endswith("direction, sender side (no receiver data)")
    assert "seen by the sender" in sheet.notes[0]
    assert any("no receiver-side intervals" in n for n in sheet.notes)
    assert cli("cheatsheet", "--catalog", str(tmp_path / "c"), "--format", "json") == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rows"] and any("sender" in n for n in out["notes"])
    # asked for the sender side, nothing is said: it is what was asked
    sender = cheatsheet(tmp_path / "c", side="sender")
    assert sender.records()[0]["avg"] == row["avg"] and not sender.records()[0]["flag"]
    assert not any("no receiver-side intervals" in n for n in sender.notes)


# ---- item 4: a scaled lab's figures never leak into money or credits unlabelled -------------

SERIES = Path(__file__).parent / "fixtures" / "series"


def _group(fixture: str, direction: str, **labels: str) -> Any:
    """A captured lab run (tests/fixtures/series) as a group with the given labels."""
    from dataclasses import replace

    from netfleet.analysis import GroupAnalysis, analyze_file

    manifest = json.loads((SERIES / "MANIFEST.json").read_text())["fixtures"]
    a = analyze_file(SERIES / manifest[fixture]["file"])
    a = replace(a, run=replace(a.run, labels=labels))
    return GroupAnalysis({"instance_type": labels["instance_type"], "direction": direction}, (a,))


def test_price_per_gbit_of_a_scaled_lab_uses_the_cloud_rate() -> None:
    import pytest

    from netfleet.report.price import GBIT, price_performance
    from netfleet.report.study import rates_of

    # the fargate lab: ×0.2 of the cloud's rates; its price is the cloud's
    g = _group(
        "steady_out", "out", instance_type="fargate-1vcpu", price_per_hour="0.076",
        lab_scale="0.2", lab_time_scale="1",
    )  # fmt: skip
    lab = rates_of(g).sustained
    assert lab is not None
    pp = price_performance("unused", groups=[g], target="1gbit")
    (row,) = pp.table().records()
    assert row["sustained_gbps"] == pytest.approx(lab.value / GBIT)  # the lab's, as measured
    assert row["cloud_sustained_gbps"] == pytest.approx(lab.value / 0.2 / GBIT)
    assert row["usd_per_sustained_gbps_hour"] == pytest.approx(0.076 / (lab.value / 0.2 / GBIT))
    assert row["lab_scale"] == "lab ×0.2 (time ×1)"
    assert any("the cloud figures they stand for" in n for n in pp.table().notes)
    # 287 Mbit/s in the lab stands for 1.43 Gbit/s: it meets a 1 Gbit/s target
    assert pp.cheapest == "fargate-1vcpu", pp.verdict
    human, _ = pp.report_table()
    assert "sustained Gbit/s (lab)" in human.columns and "sustained Gbit/s (cloud)" in human.columns


def test_seed004_table_and_answer_carry_the_cloud_figures_beside_the_lab() -> None:
    import pytest

    from netfleet.report.burst_answer import burst_answer
    from netfleet.report.study_report import credit_table

    # the r4 lab: rates and times ×0.05, so a bucket (rate × time) ×0.0025
    g = _group("credit_out", "out", instance_type="r4.large", lab_scale="0.05",
               lab_time_scale="0.05")  # fmt: skip
    t = credit_table([g])
    (rec,) = t.records()
    lab_credit = rec["lab_initial_max_credit_gbit"]
    assert lab_credit == pytest.approx(3.6, rel=0.1)  # the shaper's 3600 Mbit
    assert rec["cloud_credit_gbit"] == pytest.approx(lab_credit / 0.0025)
    assert rec["cloud_peak_gbps"] == pytest.approx(rec["lab_peak_mbps"] / 1e3 / 0.05)
    assert rec["lab_scale"] == "lab ×0.05"
    assert any("credit (rate × time) ÷ 0.0025" in n for n in t.notes)
    answer = burst_answer(g)
    assert answer is not None
    text = answer.sentence()
    assert "in the cloud (lab" in text and "then gives" in text, text
    assert "Gbit in the cloud (lab 3." in text, text
    cmd = answer.calc_command()
    assert cmd is not None and "--bucket 1" in cmd and "gbit" in cmd, cmd  # ≈ 1,400 Gbit


def test_the_same_finding_over_two_runs_is_one_row_with_both_runs() -> None:
    from netfleet.advice.model import Advice
    from netfleet.report.advice import advice_table

    def gw(run: str) -> Advice:  # what the path-mtu rule says for each run over one gateway
        return Advice(
            "path-mtu", "warn", "path MTU 1500 is below the interface MTU 9000 towards x",
            "use private addresses", {"path_mtu": 1500, "interface_mtu": 9000}, (run,),
        )  # fmt: skip

    other = Advice("asymmetry", "info", "out ≠ in", "report both", {"ratio": 2.7}, ("r3",))
    t = advice_table([gw("r1"), gw("r2"), other, gw("r1")])
    assert [r["code"] for r in t.records()] == ["path-mtu", "asymmetry"]
    assert t.records()[0]["runs"] == "r1, r2"


def test_issue_36_imported_runs_shorter_than_their_type_s_burst_say_so(
    tmp_path: Path, capsys: Any
) -> None:
    """001d0e3: a 10 s import of r4.large (bucket 2700 Gbit, 0.75 → 10 Gbit/s: a 292 s burst)
    read as the type's rate, unflagged. Now a note and the row's flag say it is the burst's;
    a burstable type without a known burst length says it may be; a fixed one says nothing."""
    raw = tmp_path / "in"
    (raw / "r4").mkdir(parents=True)
    (raw / "t3").mkdir()
    (raw / "c5").mkdir()
    for d in ("r4", "t3", "c5"):
        (raw / d / "a.client.json").write_bytes((FIX / "v3_12_tcp.client.json").read_bytes())
    root = ResultsRoot(tmp_path / "r")
    kinds = {
        "r4": ["instance_type=r4.large", "baseline_gbps=0.75", "peak_gbps=10", "bucket_gbit=2700"],
        "t3": ["instance_type=t3.micro", "network_performance=Up to 5 Gigabit"],
        "c5": ["instance_type=c5n.18xlarge", "burstable=false"],
    }
    for d, labels in kinds.items():
        assert import_files([str(raw / d)], root, labels=labels, campaign=d).bad == []
    ingest(root, tmp_path / "c")
    sheet = cheatsheet(tmp_path / "c")
    seconds = {r["instance_type"]: r for r in sheet.records()}
    assert set(seconds) == {"r4.large", "t3.micro", "c5n.18xlarge"}
    r4 = next(n for n in sheet.notes if n.startswith("r4.large: "))
    assert r4.endswith("s runs, burst lasts ~292 s at 10 Gbit/s — this is the burst rate, not "
                       "the baseline")  # fmt: skip
    assert any(n.startswith("t3.micro: ") and "may be the burst's" in n for n in sheet.notes)
    assert not any(n.startswith("c5n.18xlarge") for n in sheet.notes)
    assert "shorter than the burst" in str(seconds["r4.large"]["flag"])
    assert "shorter than the burst" not in str(seconds["c5n.18xlarge"]["flag"])
    assert cli("cheatsheet", "--catalog", str(tmp_path / "c"), "--format", "json") == 0
    out = json.loads(capsys.readouterr().out)
    assert r4 in out["notes"]
    assert cli("cheatsheet", "--catalog", str(tmp_path / "c")) == 0
    assert "burst lasts ~292 s at 10 Gbit/s" in " ".join(capsys.readouterr().out.split())
    only_c5 = cheatsheet(tmp_path / "c", campaign="c5")
    assert not any("burst" in n and "lasts" in n for n in only_c5.notes)
