"""The README's main job, for real: `netfleet demo` end to end (about 100 s)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the demo builds namespaces: needs root")


@pytest.mark.netns
@pytest.mark.slow
@needs_root
def test_demo_prints_a_cheatsheet_that_matches_its_shaper_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "netfleet",
            "demo",
            "--dir",
            str(tmp_path / "d"),
            "--state-dir",
            str(tmp_path / "state"),
        ],
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "Interval goodput" in out and "12/12 runs ok" in out
    assert out.count("✓ steady") == 2
    # issue 9: the lab runs at ×0.05 of the cloud figures its labels name, and says so
    assert "lab-steady-6g, out: lab at ×0.05 of the cloud figures its name gives" in " ".join(
        out.split()
    )
    # the demo's lab is named "demo": none of its namespaces is left (other tests' labs, which
    # another pytest worker may have up right now, are theirs to check)
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True)
    assert not [n for n in listed.stdout.split() if n.startswith("nf-demo-")]
    assert not list((tmp_path / "state").glob("*.json"))
    assert len(list((tmp_path / "d" / "results").rglob("*.json.gz"))) == 12
    # a second demo in the same directory starts afresh
    assert (tmp_path / "d" / ".netfleet-demo").exists()


@needs_root
def test_demo_refuses_a_directory_it_did_not_make(tmp_path: Path) -> None:
    (tmp_path / "mine.txt").write_text("precious")
    proc = subprocess.run(
        [sys.executable, "-m", "netfleet", "demo", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "not made by netfleet demo" in proc.stderr
    assert (tmp_path / "mine.txt").read_text() == "precious"


def test_demo_as_non_root_says_why_and_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from netfleet.demo import run_demo
    from netfleet.errors import EnvironmentProblem, ExitStatus

    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(EnvironmentProblem) as info:
        run_demo(tmp_path / "d")
    assert info.value.exit_status == ExitStatus.ENVIRONMENT
    assert "root" in str(info.value) and "sudo" in str(info.value)
    assert not (tmp_path / "d").exists()  # nothing written
