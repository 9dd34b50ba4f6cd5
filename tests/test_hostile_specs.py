"""The hostile-input corpus (scripts/hostile_corpus.py) through the real CLI: every malformed
campaign spec through ``plan`` and ``run --dry-run``, every malformed lab file through ``lab up``.
Each must exit 2 naming the file (and line) with a fix, print no traceback, and finish in under
2 s within 1 GiB of address space (issue 10). The 2 s are CPU seconds (what the case costs: a
quadratic parse or an alias bomb burns them); the wall clock, which a busy shared machine
stretches, is bounded by the harness's 10 s alarm (a case that hangs)."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
MEMORY_LIMIT = 1 << 30
CASE_LIMIT_S = 2.0


def _script(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CORPUS = _script("hostile_corpus")
CASES = [(kind, name) for kind, name, _ in CORPUS.corpus()]
COMMANDS = {"campaign": ["plan", "run"], "lab": ["lab up"]}
JOBS = [(kind, name, cmd) for kind, name in CASES for cmd in COMMANDS[kind]]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str, str], Any]:
    out = tmp_path_factory.mktemp("corpus")
    CORPUS.write(out)
    proc = subprocess.run(
        [sys.executable, str(SCRIPTS / "hostile_harness.py"), str(out), str(MEMORY_LIMIT)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = {}
    for line in proc.stdout.splitlines():
        rec = json.loads(line)
        path = Path(rec["file"])
        found[(path.parent.name, path.stem, rec["cmd"])] = rec
    return found


def test_the_corpus_is_large_enough() -> None:
    assert len(CASES) >= 120
    assert len({(k, n) for k, n in CASES}) == len(CASES), "case names repeat"


@pytest.mark.parametrize(("kind", "name", "cmd"), JOBS, ids=[f"{c}:{k}/{n}" for k, n, c in JOBS])
def test_hostile_input_is_refused_cleanly(
    results: dict[tuple[str, str, str], Any], kind: str, name: str, cmd: str
) -> None:
    rec = results[(kind, name, cmd)]
    out = rec["out"]
    assert rec["rc"] == 2, out
    assert "Traceback" not in out and "internal error" not in out, out
    took = f"took {rec['cpu_seconds']} s of CPU, {rec['seconds']} s of wall clock"
    assert rec["cpu_seconds"] < CASE_LIMIT_S, took
    assert f"{name}.yaml" in out, "the file is not named"
    located = re.search(rf"{re.escape(name)}\.yaml:\d+:", out)
    assert located or "fix:" in out, f"no line and no fix: {out}"
    assert "\x1b" not in out and "\x07" not in out, "a control character reached the terminal"
