"""An import by reference settles a task whose files are all new, ok and of new runs
column-wise, any other task file by file (issue 26): both give the same report, manifest and
catalog rows — checked here against every task forced file by file."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from netfleet.catalog import readtasks
from netfleet.catalog import register as register_module
from netfleet.catalog.manifest import read_manifest
from netfleet.catalog.query import query
from netfleet.catalog.register import register

FIX = Path(__file__).parent / "fixtures" / "import"
RUNS = sorted(p for p in FIX.glob("*.json") if p.name != "MANIFEST.json")


def _folder(tmp_path: Path) -> Path:
    """Tasks of two files: all ok (column-wise), one with a bad file, one whose second file
    repeats its first's run, one repeating a run of an earlier task."""
    src = tmp_path / "src"
    src.mkdir()
    plain = [p for p in RUNS if "stream" not in p.name][:5]
    for n, path in enumerate(plain):
        shutil.copy(path, src / f"a{n}.json")
    (src / "a2.json").write_text('{"start": {"version": "iperf 3.12"')  # a bad one, in a task
    shutil.copy(plain[0], src / "b0.json")  # the first file's run again, in a later task
    shutil.copy(plain[1], src / "b1.json")
    shutil.copy(plain[1], src / "b2.json")  # the same run twice in one task
    then = time.time_ns() - 60 * 10**9  # not racy
    for p in src.iterdir():
        os.utime(p, ns=(then, then))
    return src


def _outcome(catalog: Path, report: Any) -> tuple[Any, ...]:
    manifest = read_manifest(catalog).drop_columns(["checked_ns"]).to_pylist()
    runs = [tuple(r) for r in query(catalog, "SELECT * FROM runs ORDER BY run_id").rows]
    sums = query(catalog, "SELECT * FROM intervals_stored ORDER BY run_id, side, idx, role")
    names = ("registered", "bad", "flagged", "duplicates", "already", "changed", "unchanged")
    return (
        {name: getattr(report, name) for name in names},
        manifest,
        runs,
        [tuple(r) for r in sums.rows],
    )


def test_column_wise_settling_is_file_by_file_settling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = _folder(tmp_path)
    monkeypatch.setattr(readtasks, "TASK_FILES", 2)
    columnwise = tmp_path / "columnwise"
    calls: list[bool] = []
    all_new = register_module._all_new

    def spy(*args: Any) -> bool:
        calls.append(all_new(*args))
        return calls[-1]

    monkeypatch.setattr(register_module, "_all_new", spy)
    got = _outcome(columnwise, register([str(src)], columnwise))
    assert True in calls and False in calls  # both ways were taken
    monkeypatch.setattr(register_module, "_all_new", lambda *args: False)
    filewise = tmp_path / "filewise"
    want = _outcome(filewise, register([str(src)], filewise))
    assert got[0]["registered"] and got[0]["bad"] and got[0]["duplicates"]
    assert got == want
