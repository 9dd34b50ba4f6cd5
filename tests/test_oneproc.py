"""From a folder to a printed cheat sheet in one process (issue 26): ``netfleet cheatsheet
--import-from`` prints exactly what ``netfleet import`` + ``netfleet cheatsheet`` print, reports
a bad file and exits as documented, and an unchanged folder's sheet loads no data library."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from netfleet.errors import ExitStatus
from tests.test_import_reference import RUNS, _age, _folder
from tests.test_layers import loaded_modules

#: the fixtures' runs carry no instance type: group by their engine and side
SHEET = ["--by", "engine", "--side", "sender"]


def netfleet(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The netfleet command as a user runs it (its own process: the quick path included)."""
    return subprocess.run(
        [sys.executable, "-m", "netfleet", *args], capture_output=True, text=True, cwd=cwd
    )


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_one_command_prints_what_the_two_commands_print(tmp_path: Path, fmt: str) -> None:
    src = _folder(tmp_path, RUNS[:4])
    one, two = tmp_path / "one", tmp_path / "two"
    sheet = [*SHEET, "--format", fmt]
    imported = netfleet("import", str(src), "--catalog", str(two), cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    alone = netfleet("cheatsheet", "--catalog", str(two), *sheet, cwd=tmp_path)
    both = netfleet(
        "cheatsheet", "--import-from", str(src), "--catalog", str(one), *sheet, cwd=tmp_path
    )
    assert both.returncode == 0, both.stderr
    assert both.stdout == alone.stdout and "4" in both.stdout
    # the import's report on stderr: the import command's line, its catalog named
    assert both.stderr == imported.stdout.replace(str(two), str(one))
    again = netfleet(
        "cheatsheet", "--import-from", str(src), "--catalog", str(one), *sheet, cwd=tmp_path
    )
    assert again.stdout == alone.stdout
    assert again.stderr.startswith("registered 0 file(s), 4 unchanged")


def test_a_bad_file_is_reported_and_the_sheet_still_printed(tmp_path: Path) -> None:
    src = _folder(tmp_path, RUNS[:2])
    (src / "cut.json").write_text('{"start": {}, "intervals": [{"sum": {"bits_per_second": 1')
    cat = tmp_path / "cat"
    args = ["cheatsheet", "--import-from", str(src), "--catalog", str(cat), *SHEET, "-f", "json"]
    done = netfleet(*args, cwd=tmp_path)
    assert done.returncode == ExitStatus.RUNS_FAILED, done.stderr
    assert "1 not imported" in done.stderr and "cut.json" in done.stderr
    assert "truncated" in done.stderr
    sheet = json.loads(done.stdout)
    assert sheet["rows"] and "registered 2 file(s)" in done.stderr
    alone = netfleet("cheatsheet", "--catalog", str(cat), *SHEET, "-f", "json", cwd=tmp_path)
    assert alone.stdout == done.stdout


def test_no_file_imported_exits_2_and_a_stray_pattern_is_refused(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "empty.json").write_bytes(b"")
    cat = str(tmp_path / "cat")
    done = netfleet("cheatsheet", "--import-from", str(src), "--catalog", cat, cwd=tmp_path)
    assert done.returncode == ExitStatus.INVALID_INPUT
    assert "empty.json" in done.stderr and "none was" in done.stderr
    stray = netfleet("cheatsheet", "--catalog", cat, "--pattern", "seed002", cwd=tmp_path)
    assert stray.returncode == ExitStatus.INVALID_INPUT and "--import-from" in stray.stderr
    # an empty source is refused, not read as the current folder
    empty = netfleet("cheatsheet", "--catalog", cat, "--import-from=", cwd=src)
    assert empty.returncode == ExitStatus.INVALID_INPUT and "empty source" in empty.stderr


def test_an_unchanged_folder_s_sheet_loads_no_data_library(tmp_path: Path) -> None:
    """The second run (nothing changed, the answer kept in the catalog) in a fresh interpreter
    reads no file and queries nothing: it loads none of DuckDB, pyarrow, NumPy, pydantic or the
    engines — in every format, and for the no-op import too."""
    src = _folder(tmp_path, RUNS[:3])
    cat = str(tmp_path / "cat")
    argv = ["cheatsheet", "--import-from", str(src), "--catalog", cat, *SHEET]
    assert netfleet(*argv, cwd=tmp_path).returncode == 0
    heavy = ("pydantic", "duckdb", "pyarrow", "numpy", "netfleet.engines", "msgspec")
    again = ["import", str(src), "--catalog", cat]
    for line in ([*argv, "--format", "json"], [*argv, "--format", "table"], again):
        loaded = loaded_modules(
            "import sys\nfrom netfleet.cli.main import main\n"
            f"sys.argv = ['netfleet', *{line!r}]\n"
            "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code"
        )
        assert not {m for m in loaded if m.startswith(heavy)}, line


def test_the_facade_loads_a_name_s_module_on_first_use() -> None:
    code = (
        "import sys\nimport netfleet.api as api\n"
        "before = {m for m in sys.modules if m.startswith('netfleet.api.')}\n"
        "api.cheatsheet\n"
        "after = {m for m in sys.modules if m.startswith('netfleet.api.')}\n"
        "print(sorted(before), sorted(after - before))\n"
        "assert all(getattr(api, name) is not None for name in api.__all__)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == "[] ['netfleet.api._catalog', 'netfleet.api._paths']"


def test_the_sheet_s_query_loads_while_the_files_are_read(tmp_path: Path) -> None:
    """DuckDB and the sheet's modules are loaded once workers have files to read, before the
    first file's rows land (beside the workers, not after them), in a fresh interpreter; each
    file still counted by ``progress``. Fewer files than ``PARALLEL_MIN`` (+100 files: the
    sheet from its tally) load none of them meanwhile. (Three files stand for its 512.)"""
    src = _folder(tmp_path, RUNS[:3])
    for least, early in ((3, True), (4, False)):
        code = (
            "import sys\nfrom netfleet import api\nfrom netfleet.catalog import register\n"
            f"register.PARALLEL_MIN = {least}\nseen = []\n"
            "def progress(done, total):\n    seen.append((done, total, 'duckdb' in sys.modules))\n"
            f"api.cheatsheet(catalog={str(tmp_path / f'cat{least}')!r}, import_from={str(src)!r},"
            " by='engine', side='sender', progress=progress)\nprint(seen)"
        )
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        calls = ast.literal_eval(done.stdout)
        assert calls[0] == (0, 3, early) and calls[-1][:2] == (3, 3)


def test_the_sheet_is_computed_while_the_last_files_are_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With workers, the batch before the last ``TAIL_FILES`` files is committed while they
    are read, and the sheet of what it holds is computed then (DuckDB), its tally kept: after
    the import only the short last batch is written and added to that tally — no second
    DuckDB sheet — and the numbers are those of the sheet computed afresh. Above
    ``AHEAD_FILES`` files the sheet waits for the import. (Ten files stand for 10,000.)"""
    from netfleet import api
    from netfleet.api import _catalog as api_catalog
    from netfleet.catalog import cheatsheet, reader, register
    from netfleet.catalog.manifest import current_generation

    monkeypatch.setattr(register, "PARALLEL_MIN", 4)
    monkeypatch.setattr(register, "TAIL_FILES", 3)
    monkeypatch.setattr(reader, "TASK_FILES", 4)  # (tasks of one file: 10 tasks)
    src = tmp_path / "src"
    src.mkdir()
    body = RUNS[0].read_bytes()
    for n in range(10):  # other bytes each (trailing spaces): 10 runs
        (src / f"f{n}.json").write_bytes(body + b" " * n)
    _age(src)
    real, queried = cheatsheet._cheatsheet, []

    def spied(con: Any, *args: Any, **kwargs: Any) -> Any:
        runs = con.execute("SELECT count(*) FROM runs").fetchone()[0]
        queried.append((runs, current_generation(catalog)))
        return real(con, *args, **kwargs)

    monkeypatch.setattr(cheatsheet, "_cheatsheet", spied)
    reports: list[Any] = []
    sheets = []
    for ahead, catalog in ((10, tmp_path / "ahead"), (9, tmp_path / "after")):
        monkeypatch.setattr(api_catalog, "AHEAD_FILES", ahead)
        queried.clear()
        sheet = api.cheatsheet(
            catalog=catalog, import_from=src, by="engine", side="sender", imported=reports.append
        )
        report = reports[-1]
        assert len(report.registered) == 10 and report.batches == 2
        last = max((catalog / "runs").glob("part-*.parquet"))
        assert [tuple(r) for r in api.sql("SELECT count(*) FROM runs", catalog=catalog).rows] == [
            (10,)
        ]
        assert pq_rows(last) == 3  # the last batch: the last 3 files' runs
        # ahead: DuckDB's sheet of the first 7 runs, before the manifest's first generation
        assert queried == ([(7, 0)] if ahead == 10 else [(10, 1)])
        sheets.append(sheet)
    tallied, fresh = sheets  # the same numbers (the average's sum in another order)
    assert tallied.columns == fresh.columns and len(tallied.rows) == len(fresh.rows) == 1
    for got, want in zip(tallied.rows, fresh.rows, strict=True):
        assert got[0] == want[0] and got[1:-1] == pytest.approx(want[1:-1], rel=1e-12)
        assert got[-1] == want[-1]


def pq_rows(path: Path) -> int:
    import pyarrow.parquet as pq

    return int(pq.ParquetFile(path).metadata.num_rows)
