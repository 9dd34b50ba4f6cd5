"""The no-op re-run to a printed sheet, alone and interleaved (issue 34: ≤ 0.35 s at 10,000
files): ``netfleet cheatsheet --import-from RAW --pattern seed002 --catalog CAT --side sender
--by instance_type`` a second time, nothing changed, stdout a pipe — as ``python -m netfleet``
(what ``ingest_scale.py`` runs) and as the console script — and ``netfleet import RAW
--pattern seed002 --catalog CAT`` (no-op), beside ``python -c pass`` (the interpreter's own
start-up). ``--against SRC`` (e.g. a ``git archive`` of main's ``src``) runs each command a
second time with ``PYTHONPATH=SRC`` and its own catalog: before and after, interleaved.

Usage: ``.venv/bin/python bench/noop_sheet.py RAW [--runs 20] [--against SRC] [--work DIR]``
(RAW is only read; each catalog is made by a first run, ≈ 5 s at 10,000 files, and kept in
``--work`` for the next call). Prints CPU seconds (user + system of the child) and wall, min
and median of each command over the runs, and whether every run printed the same sheet — the
same bytes with and without ``--against``. Takes ≈ 0.3 s a run and command.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

BIN = Path(sys.executable).parent
SHEET = ["--pattern", "seed002", "--side", "sender", "--by", "instance_type"]


def commands(raw: str, cat: Path, src: str | None) -> dict[str, list[str]]:
    tag = " (against)" if src else ""
    one = ["cheatsheet", "--import-from", raw, "--catalog", str(cat), *SHEET]
    found = {
        f"no-op sheet: python -m netfleet{tag}": [sys.executable, "-m", "netfleet", *one],
        f"no-op import: python -m netfleet{tag}": [
            sys.executable, "-m", "netfleet", "import", raw, "--pattern", "seed002",
            "--catalog", str(cat),
        ],
    }  # fmt: skip
    if not src:  # the console script runs this checkout's netfleet only
        found["no-op sheet: netfleet (console script)"] = [str(BIN / "netfleet"), *one]
    return found


def run(cmd: list[str], env: dict[str, str]) -> tuple[float, float, bytes]:
    """CPU (user + system) and wall seconds of ``cmd``, and its stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        sys.exit(f"{' '.join(cmd)}: exit {done.returncode}\n{done.stderr.decode()}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return cpu, wall, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("raw")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--against", help="another netfleet's src folder (PYTHONPATH)")
    parser.add_argument("--work", default="/tmp/noop-sheet-bench")
    args = parser.parse_args()
    raw, work = os.path.abspath(args.raw), Path(args.work)
    # the bench runs as a user's shell does: modules' bytecode cached
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    cases: dict[str, tuple[list[str], dict[str, str]]] = {
        "python -c pass": ([sys.executable, "-c", "pass"], env)
    }
    for src in [None, *([args.against] if args.against else [])]:
        cat = work / ("catalog-against" if src else "catalog")
        its_env = {**env, "PYTHONPATH": os.path.abspath(src)} if src else env
        todo = commands(raw, cat, src)
        first = next(iter(todo.values()))
        if not (cat / "_sheets").is_dir():
            print(f"first sheet into {cat} …", flush=True)
            run(first, its_env)
        cases.update({name: (cmd, its_env) for name, cmd in todo.items()})
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    sheets: dict[str, set[bytes]] = {name: set() for name in cases}
    for _ in range(args.runs):
        for name, (cmd, its_env) in cases.items():
            cpu, wall, out = run(cmd, its_env)
            times[name].append((cpu, wall))
            sheets[name].add(out)
    print(f"{'command':<46} {'CPU min':>8} {'median':>8} {'wall min':>9} {'median':>8}")
    for name, got in times.items():
        cpu, wall = [c for c, _ in got], [w for _, w in got]
        print(f"{name:<46} {min(cpu):>8.4f} {statistics.median(cpu):>8.4f} "
              f"{min(wall):>9.4f} {statistics.median(wall):>8.4f}")  # fmt: skip
    printed = {out for name, outs in sheets.items() if "sheet" in name for out in outs}
    print(f"sheets printed: {len(printed)} distinct (1: every run, both sources, the same bytes)")
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
