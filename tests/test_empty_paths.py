"""An empty path is the working directory to the file system, never what the user meant
(issue 37): ``--catalog=`` wrote a catalog into the working directory, ``import ""`` imported
the working directory (the catalog in it included), ``--keep-copy=`` was ignored silently.
Each is an input error, exit 2, and nothing is written."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from netfleet.cli.boundary import guarded
from netfleet.cli.main import app

FIX = Path(__file__).parent / "fixtures" / "import"


def cli(*args: str) -> int:
    return guarded(lambda: app(list(args), standalone_mode=False, prog_name="netfleet"))


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["import", "src", "--catalog="], "--catalog is empty"),
        (["import", "", "--catalog", "cat"], "a source is empty"),
        (["import", "", "-r", "results"], "a source is empty"),
        (["import", "src", "--catalog", "cat", "--keep-copy="], "--keep-copy is empty"),
        (["cheatsheet", "--catalog="], "--catalog is empty"),
        (["import", "src", "--results="], "--results is empty"),
    ],
)
def test_an_empty_path_is_an_input_error_and_nothing_is_written(
    argv: list[str],
    named: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "src").mkdir()
    shutil.copy(next(FIX.glob("*.json")), tmp_path / "src" / "one.json")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NETFLEET_CATALOG", raising=False)
    monkeypatch.delenv("NETFLEET_RESULTS", raising=False)
    assert cli(*argv) == 2
    assert named in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src"]
