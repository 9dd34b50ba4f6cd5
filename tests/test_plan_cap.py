"""A campaign's runs are counted before they are expanded (issue 37 item 9): a spec of ten
million runs (10,000 repeats × 1,000 combinations, each within its own cap) is refused at once,
exit 2, naming the count and the cap, instead of planning until memory runs out. ``--max-runs``
(or NETFLEET_MAX_RUNS) moves the cap either way."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

NETFLEET = Path(sys.executable).parent / "netfleet"

HUGE = """\
campaign: huge
hosts:
  a: {kind: local}
  b: {kind: local}
tests:
  - name: t
    client: a
    server: b
    params: {duration: 1}
    matrix: {parallel: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], omit: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
             bitrate: [1M, 2M, 3M, 4M, 5M, 6M, 7M, 8M, 9M, 10M]}
repeats: 10000
"""


def plan(
    spec: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(NETFLEET), "plan", str(spec), "-f", "json", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def test_a_spec_of_ten_million_runs_is_refused_before_it_is_expanded(tmp_path: Path) -> None:
    spec = tmp_path / "huge.yaml"
    spec.write_text(HUGE)
    done = plan(spec)
    assert done.returncode == 2, done.stderr
    assert "10,000 repeats × 1,000 runs a repeat = 10,000,000 runs, over the cap of 1,000,000" in (
        " ".join(done.stderr.split())
    )
    assert "Traceback" not in done.stderr and "--max-runs" in done.stderr


def test_max_runs_moves_the_cap(tmp_path: Path) -> None:
    spec = tmp_path / "small.yaml"
    spec.write_text(HUGE.replace("repeats: 10000", "repeats: 3"))  # 3,000 runs
    assert plan(spec, env={"NETFLEET_MAX_RUNS": "2999"}).returncode == 2
    assert plan(spec, "--max-runs", "3000", env={"NETFLEET_MAX_RUNS": "2999"}).returncode == 0
