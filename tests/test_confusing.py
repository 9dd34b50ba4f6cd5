"""Issue 36, "Confusing": messages and listings a new user misread — each checked through the
real command or function a user calls."""

from __future__ import annotations

from pathlib import Path

import pytest

from netfleet.cli.boundary import guarded
from netfleet.cli.main import app
from netfleet.errors import SpecError
from netfleet.spec import load_spec

SPEC = """\
campaign: {name}
hosts:
  a: {{kind: local}}
  b: {{kind: local}}
tests:
  - name: t
    engine: iperf3
    client: a
    server: b
    params: {{duration: 5, {field}: 2}}
"""


def cli(*args: str) -> int:
    return guarded(lambda: app(list(args), standalone_mode=False, prog_name="netfleet"))


def test_spec_errors_say_the_fix_not_the_regex(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(SPEC.format(name="my test", field="paralel"))
    with pytest.raises(SpecError) as info:
        load_spec(path)
    text = "\n".join(f"{where}: {msg}" for where, _line, msg in info.value.problems)
    assert "campaign: 'my test' is not allowed here" in text and "e.g. 'my-test'" in text
    assert "[A-Za-z0-9]" not in text  # no regular expression where words do
    assert "tests.0.params.paralel: unknown field: did you mean 'parallel'?" in text


def test_types_are_sorted_naturally_in_the_cheat_sheet(tmp_path: Path) -> None:
    import gzip
    import json

    from netfleet.catalog import ingest
    from netfleet.report.cheatsheet import cheatsheet

    series = Path(__file__).parent / "fixtures" / "series"
    part = tmp_path / "results" / "d=2026-11-22" / "campaign=series"
    part.mkdir(parents=True)
    for name, itype in (("steady_out", "fargate-2048-16384"), ("erratic_out", "fargate-256-512")):
        doc = json.loads(gzip.decompress((series / f"{name}.json.gz").read_bytes()))
        doc["labels"] = {"instance_type": itype}
        (part / f"{name}.json.gz").write_bytes(gzip.compress(json.dumps(doc).encode()))
    ingest(tmp_path / "results", tmp_path / "catalog")
    sheet = cheatsheet(tmp_path / "catalog", group_by=("instance_type",))
    assert [r["instance_type"] for r in sheet.records()] == [
        "fargate-256-512",
        "fargate-2048-16384",
    ]


def test_cloud_plan_reads_the_fargate_example_its_header_names(tmp_path: Path) -> None:
    from netfleet import api

    example = Path(__file__).resolve().parent.parent / "examples" / "fargate-tiers.cloud.yaml"
    assert f"netfleet cloud plan examples/{example.name}" in example.read_text()
    table = api.cloud_plan(example, state_dir=tmp_path)  # was "fargate: unknown field"
    [note] = [n for n in table.notes if n.startswith("fargate: 10 tier task(s)")]
    # 10 tiers: 15.5 vCPU and 75.5 GB, priced per vCPU-hour and GB-hour of eu-west-1
    assert "15.5 vCPU and 75.5 GB" in note and "/hour at eu-west-1's Fargate price" in note


def test_doctor_json_is_one_document(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    path = tmp_path / "c.yaml"
    path.write_text(SPEC.format(name="doc", field="parallel"))
    cli("doctor", str(path), "--format", "json")
    doc = json.loads(capsys.readouterr().out)  # three documents back to back did not parse
    assert set(doc) == {"hosts", "pairs", "advice"}
    assert [h["host"] for h in doc["hosts"]["rows"]] == ["a", "b"]


def test_a_sheet_of_foreign_files_without_labels_falls_back_and_does_not_nag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import json
    import shutil

    fixtures = Path(__file__).parent / "fixtures"
    (tmp_path / "in").mkdir()
    shutil.copy(fixtures / "import" / "v3_18_tcp.client.json", tmp_path / "in")
    # an unrelated ./results with a raw result the catalog has not got
    stray = tmp_path / "results" / "d=2026-01-01" / "campaign=x"
    stray.mkdir(parents=True)
    shutil.copy(fixtures / "series" / "steady_out.json.gz", stray)
    monkeypatch.chdir(tmp_path)
    assert cli("cheatsheet", "--import-from", "in", "--catalog", "cat", "--format", "json") == 0
    doc = json.loads(capsys.readouterr().out)  # was: an error and ~45 column names
    assert [(r["client"], r["direction"], r["runs"]) for r in doc["rows"]] == [("client", "out", 1)]
    assert "--label instance_type=TYPE" in doc["notes"][0]
    assert not any("not in the catalog yet" in n for n in doc["notes"])
    # the sheet of the files just imported says it is the sender's (client -J, no server side)
    assert doc["title"].endswith("sender side (no receiver data)")


def test_lab_status_without_root_just_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import os

    from netfleet import api

    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert api.lab_status(state_dir=tmp_path) == []  # was: "needs root"
    assert cli("lab", "status", "--state-dir", str(tmp_path)) == 0
    assert "no lab is up" in capsys.readouterr().out


def test_advice_is_a_command_of_its_own(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    (tmp_path / "r").mkdir()
    assert cli("advice", "--results", str(tmp_path / "r"), "--format", "json") == 0  # was 2
    assert json.loads(capsys.readouterr().out)["rows"] == []


def test_a_bad_cloud_block_field_is_said_once_where_it_was_written(tmp_path: Path) -> None:
    example = Path(__file__).resolve().parent.parent / "examples" / "aws-cheatsheet.yaml"
    text = example.read_text()
    assert "  backing: sim\n" in text
    path = tmp_path / "c.yaml"
    path.write_text(
        text.replace("  backing: sim\n", "  backing: ssh\n  controller_cidr: 10.1.2.3/32\n")
    )
    with pytest.raises(SpecError) as info:
        load_spec(path)
    # 4 fleets: the block is copied into each aws host, its problem was printed 5 times
    [(where, line, msg)] = info.value.problems
    assert where == "cloud.controller_cidr" and "not a public range" in msg
    assert line == text.splitlines().index("  backing: sim") + 2


def test_a_narrow_terminal_folds_the_type_and_never_cuts_it() -> None:
    import io

    from rich.console import Console

    from netfleet.report.output import render
    from netfleet.tabular import Tabular

    cols = ["instance type", "direction", "$/hour", "$/month", "sustained Gbit/s", "peak Gbit/s",
            "$/h per sustained Gbit/s", "$/h per peak Gbit/s", "price from"]  # fmt: skip
    rows = [[t, "out", 0.1, 73.0, 0.5, 0.6, 0.2, 0.17, "table 2024-06-01"]
            for t in ("fargate-2048-16384", "fargate-256-512")]  # fmt: skip
    console = Console(width=80, file=io.StringIO(), color_system=None)
    console.print(render(Tabular(cols, rows), "table"))
    body = [line for line in console.file.getvalue().splitlines() if line.startswith("│")]  # type: ignore[attr-defined]
    first = "".join(line.split("│")[1].strip() for line in body)
    assert first == "fargate-2048-16384fargate-256-512"  # was "farga…farga…"
