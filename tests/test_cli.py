"""The command line: help everywhere, documented commands, exit statuses, nothing written on bad
input."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
import typer
import typer.main

from netfleet.cli.boundary import guarded
from netfleet.cli.main import app
from netfleet.errors import ExitStatus

ROOT = Path(__file__).parents[1]


def cli(*args: str) -> int:
    return guarded(lambda: app(list(args), standalone_mode=False, prog_name="netfleet"))


def commands() -> list[tuple[str, Any]]:
    group: Any = typer.main.get_command(app)
    ctx = typer.Context(group)
    out = []
    for name in group.list_commands(ctx):  # the lazy group imports each command here
        cmd = group.get_command(ctx, name)
        if hasattr(cmd, "commands"):
            out += [(f"{name} {sub}", c) for sub, c in cmd.commands.items()]
        else:
            out.append((name, cmd))
    return out


def test_every_command_has_help_and_is_documented() -> None:
    readme = (ROOT / "README.md").read_text()
    names = [n for n, _ in commands()]
    assert {"run", "plan", "schema", "ingest", "cheatsheet", "sql", "demo", "lab up"} <= set(names)
    for name, cmd in commands():
        assert cmd.help and len(cmd.help) > 20, f"{name} lacks help"
        assert f"netfleet {name.split()[0]}" in readme, f"{name} is not in README.md"
        for param in cmd.params:
            if param.param_type_name == "option":
                assert param.help, f"{name} {param.opts} lacks help"


def test_every_exit_status_is_documented() -> None:
    readme = (ROOT / "README.md").read_text()
    for status in ExitStatus:
        assert f"| {int(status)} |" in readme, status


def test_help_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli("--help") == 0
    assert "cheatsheet" in capsys.readouterr().out


def test_schema_prints_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli("schema") == 0
    assert "campaign" in json.loads(capsys.readouterr().out)["properties"]
    assert cli("schema", "--lab") == 0
    assert "hosts" in json.loads(capsys.readouterr().out)["properties"]


SPEC = """\
campaign: c
hosts:
  a: {kind: local}
  b: {kind: local}
tests:
  - {name: t, client: a, server: b, params: {duration: 2}, matrix: {parallel: [1, 2, 4]}}
cooldown: 5
"""


def test_plan_lists_runs_and_estimate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "s.yaml"
    p.write_text(SPEC)
    assert cli("plan", str(p), "--format", "json") == 0
    runs = json.loads(capsys.readouterr().out)["rows"]
    assert [r["params"].get("parallel", 1) for r in runs] == [1, 2, 4]
    assert cli("plan", str(p)) == 0
    out = capsys.readouterr().out
    assert "3 runs" in out and "estimated wall time" in out


def test_invalid_spec_exits_2_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    p = tmp_path / "bad.yaml"
    p.write_text(textwrap.dedent(SPEC.replace("duration: 2", "duration: -2")))
    assert cli("run", str(p), "--results", str(tmp_path / "res")) == ExitStatus.INVALID_INPUT
    err = capsys.readouterr().err
    assert "bad.yaml:6" in err and "tests.0.params.duration" in err
    assert not (tmp_path / "res").exists()
    assert sorted(x.name for x in tmp_path.iterdir()) == ["bad.yaml"]


def test_usage_error_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli("plan") == ExitStatus.INVALID_INPUT
    assert cli("no-such-command") == ExitStatus.INVALID_INPUT


def test_run_exits_3_when_a_run_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "s.yaml"
    p.write_text(
        SPEC.replace("matrix: {parallel: [1, 2, 4]}", "matrix: {congestion: [nope]}")
        .replace("duration: 2", "duration: 1")
        .replace("cooldown: 5", "")
    )
    assert cli("run", str(p), "--results", str(tmp_path / "res")) == ExitStatus.RUNS_FAILED
    assert len(list((tmp_path / "res").rglob("*.json.gz"))) == 1
    assert "0 of 1 runs ok" in capsys.readouterr().out


def test_sql_error_is_clear(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli("sql", "select 1", "--catalog", str(tmp_path / "none")) == ExitStatus.INVALID_INPUT
    assert "ingest" in capsys.readouterr().err
