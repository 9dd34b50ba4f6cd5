"""Issue 37: no Python process netfleet starts imports from the working directory.

Another local user owns the folder root runs netfleet from and plants ``multiprocessing.py``
there. ``python -c``/``-m`` put the working directory first on ``sys.path``; netfleet's fork
server, resource tracker and background builder are such children. Each test runs the real
``netfleet`` command (the console script: its own ``sys.path[0]`` is the script's folder) as
root from the planted folder, over enough files that the worker pool starts, and checks the
plant never ran.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from netfleet.catalog import lazystreams_build as lb

FIXTURE = Path(__file__).parent / "fixtures" / "import" / "v3_12_tcp.client.json"
NETFLEET = Path(sys.executable).parent / "netfleet"
NOBODY = 65534

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the plant's owner is another user")

PLANT = """\
import os, sys
with open({marker!r}, "a") as f:
    f.write(f"uid={{os.getuid()}} argv={{sys.argv!r}}\\n")
raise ImportError("planted")
"""


def _planted(tmp_path: Path, files: int) -> tuple[Path, Path]:
    """A folder ``nobody`` owns: ``files`` copies of a captured client output under
    ``imports/`` and a planted ``multiprocessing.py`` (and ``netfleet.py``) that would write
    ``marker``."""
    home = tmp_path / "theirs"
    (home / "imports").mkdir(parents=True)
    marker = tmp_path / "marker"
    doc = json.loads(FIXTURE.read_text())
    for i in range(files):  # distinct runs: each its own cookie and start time
        doc["start"]["cookie"] = f"plant{i:020d}"
        doc["start"]["timestamp"]["timesecs"] += 1
        (home / "imports" / f"r{i:04d}.json").write_text(json.dumps(doc))
    for name in ("multiprocessing.py", "netfleet.py", "sitecustomize.py"):
        (home / name).write_text(PLANT.format(marker=str(marker)))
    for p in [home, *home.rglob("*")]:
        os.chown(p, NOBODY, NOBODY)
    return home, marker


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSAFEPATH")}
    return subprocess.run(
        [str(NETFLEET), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_an_import_by_reference_with_workers_never_imports_the_cwd(tmp_path: Path) -> None:
    home, marker = _planted(tmp_path, 600)  # ≥ 512 files: the worker pool starts
    done = _run(home, "import", "imports", "--catalog", str(tmp_path / "cat"))
    assert not marker.exists(), marker.read_text()
    assert done.returncode == 0, done.stderr
    assert "registered 600" in done.stdout + done.stderr
    # the per-stream build (workers too) from the same folder
    done = _run(home, "sql", "select count(*) as n from streams", "--catalog",
                str(tmp_path / "cat"), "--format", "json")  # fmt: skip
    assert not marker.exists(), marker.read_text()
    assert done.returncode == 0, done.stderr


def test_an_envelope_import_with_workers_never_imports_the_cwd(tmp_path: Path) -> None:
    home, marker = _planted(tmp_path, 80)  # ≥ 64 files: the worker pool starts
    done = _run(home, "import", "imports", "--results", str(tmp_path / "results"))
    assert not marker.exists(), marker.read_text()
    assert done.returncode == 0, done.stderr
    assert len(list((tmp_path / "results").rglob("*.json.gz"))) == 80, done.stdout


def test_the_background_stream_builder_never_imports_the_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, marker = _planted(tmp_path, 4)
    assert _run(home, "import", "imports", "--catalog", str(tmp_path / "cat")).returncode == 0
    monkeypatch.chdir(home)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    proc = lb.start_background(tmp_path / "cat")
    assert proc is not None
    try:
        assert proc.wait(timeout=120) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not marker.exists(), marker.read_text()
