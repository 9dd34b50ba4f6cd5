"""Start-up time of the CLI, side by side with ``python -c "import typer"`` as the floor.

Usage: ``.venv/bin/python bench/startup.py [--runs N]`` (default 15). Prints median and min wall
time of each command over N runs, interleaved so machine load hits all of them alike, and the
targets: ``--version``/``--help`` ≤ 2× the floor's median, ``plan`` ≤ 0.6 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
DEMO = ROOT / "src" / "netfleet" / "demo" / "campaign.yaml"

CASES: dict[str, list[str]] = {
    'python -c "import typer" (floor)': [sys.executable, "-c", "import typer"],
    "netfleet --version": [str(BIN / "netfleet"), "--version"],
    "netfleet --help": [str(BIN / "netfleet"), "--help"],
    "netfleet plan demo/campaign.yaml": [str(BIN / "netfleet"), "plan", str(DEMO)],
}


def wall(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env={**os.environ, "COLUMNS": "200"})  # fmt: skip
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15)
    runs = max(10, parser.parse_args().runs)
    times: dict[str, list[float]] = {name: [] for name in CASES}
    for cmd in CASES.values():  # warm the page cache once
        wall(cmd)
    for _ in range(runs):
        for name, cmd in CASES.items():
            times[name].append(wall(cmd))
    floor = statistics.median(times['python -c "import typer" (floor)'])
    print(f"{'command':40} {'median s':>9} {'min s':>7} {'× floor':>8}   ({runs} runs each)")
    for name, got in times.items():
        med = statistics.median(got)
        print(f"{name:40} {med:9.3f} {min(got):7.3f} {med / floor:8.2f}")
    version = statistics.median(times["netfleet --version"])
    helps = statistics.median(times["netfleet --help"])
    plan = statistics.median(times["netfleet plan demo/campaign.yaml"])
    print(f"target --version ≤ 2× floor: {'met' if version <= 2 * floor else 'MISSED'}")
    print(f"target --help ≤ 2× floor: {'met' if helps <= 2 * floor else 'MISSED'}")
    print(f"target plan ≤ 0.6 s: {'met' if plan <= 0.6 else 'MISSED'}")


if __name__ == "__main__":
    main()
