"""Start-up time of the CLI, side by side with ``python -c "import typer"`` as the floor.

Usage: ``.venv/bin/python bench/startup.py [--runs N]`` (default 15; ~2 min on an idle 2-core
machine). Prints median and min wall time of each case over N runs, interleaved so machine load
hits all of them alike, each median's ratio to the floor's, and the targets: ``--version``,
``--help`` and the ``--help`` of every command (issue 27.9) ≤ 2× the floor's median,
``plan`` ≤ 0.6 s.
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
NETFLEET = str(BIN / "netfleet")
FLOOR = 'python -c "import typer" (floor)'


def cases() -> dict[str, list[str]]:
    from netfleet.cli.main import LAZY_COMMANDS, load_command

    found: dict[str, list[str]] = {
        FLOOR: [sys.executable, "-c", "import typer"],
        "netfleet --version": [NETFLEET, "--version"],
        "netfleet --help": [NETFLEET, "--help"],
    }
    for name in LAZY_COMMANDS:  # every command, and every sub-command of a group
        found[f"netfleet {name} --help"] = [NETFLEET, name, "--help"]
        cmd = load_command(name)
        for sub, sub_cmd in sorted(getattr(cmd, "commands", {}).items()):
            found[f"netfleet {name} {sub} --help"] = [NETFLEET, name, sub, "--help"]
            for leaf in sorted(getattr(sub_cmd, "commands", {})):
                found[f"netfleet {name} {sub} {leaf} --help"] = [
                    NETFLEET, name, sub, leaf, "--help"
                ]  # fmt: skip
    found["netfleet plan demo/campaign.yaml"] = [NETFLEET, "plan", str(DEMO)]
    return found


def wall(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env={**os.environ, "COLUMNS": "200"})  # fmt: skip
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15)
    runs = max(10, parser.parse_args().runs)
    todo = cases()
    times: dict[str, list[float]] = {name: [] for name in todo}
    for cmd in todo.values():  # warm the page cache once
        wall(cmd)
    for _ in range(runs):
        for name, cmd in todo.items():
            times[name].append(wall(cmd))
    floor = statistics.median(times[FLOOR])
    width = max(len(n) for n in todo) + 2
    print(f"{'command':{width}} {'median s':>9} {'min s':>7} {'× floor':>8}   ({runs} runs each)")
    for name, got in times.items():
        med = statistics.median(got)
        print(f"{name:{width}} {med:9.3f} {min(got):7.3f} {med / floor:8.2f}")
    quick = [n for n in todo if n.endswith(("--help", "--version"))]
    slow = [n for n in quick if statistics.median(times[n]) > 2 * floor]
    worst = max(quick, key=lambda n: statistics.median(times[n]))
    ratio = statistics.median(times[worst]) / floor
    print(
        f"target --version, --help and every command's --help ≤ 2× floor: "
        f"{'met' if not slow else 'MISSED: ' + ', '.join(slow)} (slowest: {worst}, {ratio:.2f}×)"
    )
    plan = statistics.median(times["netfleet plan demo/campaign.yaml"])
    print(f"target plan ≤ 0.6 s: {'met' if plan <= 0.6 else 'MISSED'}")


if __name__ == "__main__":
    main()
