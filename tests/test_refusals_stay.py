"""A file refused by an import by reference stays refused — in the report and in the exit
status (3) — on every later import until it changes (issue 37): a cron job running the same
import again must not see success while the file is still not in the catalog."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from netfleet.cli.boundary import guarded
from netfleet.cli.main import app
from tests.test_import_reference import _age, _folder

FIX = Path(__file__).parent / "fixtures" / "import"
GOOD = sorted(p for p in FIX.glob("*.json") if p.name != "MANIFEST.json")[:2]


def cli(*args: str) -> int:
    return guarded(lambda: app(list(args), standalone_mode=False, prog_name="netfleet"))


def test_a_refused_file_keeps_the_exit_status_until_it_changes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = _folder(tmp_path, GOOD)
    (src / "broken.json").write_text('{"start": ')
    _age(src)
    cat = str(tmp_path / "cat")
    assert cli("import", str(src), "--catalog", cat) == 3
    capsys.readouterr()
    assert cli("import", str(src), "--catalog", cat) == 3  # nothing changed: still refused
    err = capsys.readouterr()
    assert "broken.json: unchanged since it was refused: truncated JSON" in err.out + err.err
    shutil.copy(FIX / GOOD[0].name, src / "broken.json")  # mended
    assert cli("import", str(src), "--catalog", cat) == 0
    capsys.readouterr()
    _age(src)
    assert cli("import", str(src), "--catalog", cat) == 0


def test_a_folder_of_refused_files_stays_exit_2(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.json").write_text("not json")
    _age(src)
    cat = str(tmp_path / "cat")
    assert cli("import", str(src), "--catalog", cat) == 2
    assert cli("import", str(src), "--catalog", cat) == 2
