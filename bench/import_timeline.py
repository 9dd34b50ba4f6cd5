"""Where the importing process spends its time (issue 34): the first sheet of a folder of
foreign files (``netfleet cheatsheet --import-from DIR --catalog C``, or ``--import-only``:
``netfleet import DIR --catalog C``), the importing process apart from its workers.

Default: the command as a process of its own, its CPU and its children's (the fork server
and the workers) sampled from ``/proc`` every 0.1 s with the machine's busy cores
(``/proc/stat``): the wall and CPU seconds of each, the importing process's CPU before its
first child (the serial start: nothing read yet) and after the children's last CPU (the
serial end: the commit, the manifest, the sheet), and a timeline per ``--step`` seconds.

``--phases``: the same command in this process, the load loop's phases timed (wall and CPU
seconds at each: the listing and the pool's start, the lock, the writer loaded, the first and
last tasks landed, the commit, the manifest, the sheet and its DuckDB statements).

    .venv/bin/python bench/import_timeline.py /tmp/corpus34/files-10000-seed-2
    .venv/bin/python bench/import_timeline.py /tmp/corpus34/files-10000-seed-2 --phases
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TICK = os.sysconf("SC_CLK_TCK")


def _busy() -> tuple[int, int]:
    """/proc/stat's total and idle ticks (every CPU)."""
    with open("/proc/stat") as fh:
        ticks = [int(v) for v in fh.readline().split()[1:]]
    return sum(ticks), ticks[3] + ticks[4]


def _cpu(pid: int) -> float | None:
    """A process's own user + system CPU seconds (not its children's)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / TICK


def _descendants(root: int) -> list[int]:
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as fh:
                kids = [int(k) for k in fh.read().split()]
        except OSError:
            kids = []
        found += kids
        todo += kids
    return found


def sampled(argv: list[str], step: float) -> None:
    """Run ``argv``; print its CPU and its children's, the serial start and end, a timeline."""
    cpus = os.cpu_count() or 1
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    children: dict[int, float] = {}
    rises: list[tuple[float, int, float]] = []  # (t, child, its CPU) whenever it ran
    samples = []  # (t, machine busy cores, main CPU, children CPU)
    before = _busy()
    first = last = None  # (t, main CPU) when the first child shows, when children last ran
    main = kids = 0.0
    while proc.poll() is None:
        time.sleep(0.1)
        now_main = _cpu(proc.pid)
        for pid in _descendants(proc.pid):
            used = _cpu(pid)
            if used is not None and used > children.get(pid, 0.0):
                children[pid] = used
                rises.append((time.perf_counter() - start, pid, used))
        now = _busy()
        total, idle = now[0] - before[0], now[1] - before[1]
        before = now
        t = time.perf_counter() - start
        now_kids = sum(children.values())
        if now_main is None:
            continue
        if children and first is None:
            first = (t, now_main)
        if now_kids > kids:
            last = (t, now_main)
        busy = (total - idle) / total * cpus if total else 0.0
        samples.append((t, busy, now_main - main, now_kids - kids))
        main, kids = now_main, now_kids
    wall = time.perf_counter() - start
    print(f"wall {wall:.2f} s; the importing process {main:.2f} CPU s, its children"
          f" {kids:.2f} CPU s ({len(children)} processes)")  # fmt: skip
    print(f"load average at the end: {os.getloadavg()}")
    if first is not None and last is not None:
        print(f"the importing process alone: {first[1]:.2f} CPU s before its first child"
              f" (at {first[0]:.1f} s), {main - last[1]:.2f} CPU s after its children's last"
              f" CPU (from {last[0]:.1f} s)")  # fmt: skip
    workers = sorted(children, key=children.__getitem__)[-2:]  # the two busiest: workers
    if len(workers) == 2:
        ends = {pid: max(t for t, p, _ in rises if p == pid) for pid in workers}
        early, late = sorted(workers, key=ends.__getitem__)
        before_end = max((c for t, p, c in rises if p == late and t <= ends[early]), default=0.0)
        print(f"the last worker alone: {children[late] - before_end:.2f} CPU s after the other"
              f" worker's last CPU ({ends[late] - ends[early]:.1f} s)")  # fmt: skip
    print(f"{'t s':>6} {'machine busy cores':>19} {'importing':>10} {'children':>9}")
    bucket: list[tuple[float, float, float, float]] = []
    for row in samples:
        bucket.append(row)
        if row[0] - bucket[0][0] >= step - 1e-9 or row is samples[-1]:
            span = max(bucket[-1][0] - bucket[0][0] + 0.1, 0.1)
            busy = sum(r[1] for r in bucket) / len(bucket)
            mine, theirs = sum(r[2] for r in bucket) / span, sum(r[3] for r in bucket) / span
            print(f"{bucket[-1][0]:>6.1f} {busy:>19.2f} {mine:>10.2f} {theirs:>9.2f}")
            bucket = []


def phases(argv: list[str]) -> None:
    """Run the command in this process, the load loop's phases timed."""
    import runpy

    t0, c0 = time.monotonic(), time.process_time()
    marks: list[tuple[float, float, str]] = []

    def mark(what: str) -> None:
        marks.append((time.monotonic() - t0, time.process_time() - c0, what))

    def timed(owner: Any, name: str) -> None:
        real = getattr(owner, name)

        @functools.wraps(real)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            mark(f"> {name}")
            try:
                return real(*args, **kwargs)
            finally:
                mark(f"< {name}")

        setattr(owner, name, wrapper)

    from netfleet.catalog import cheatsheet, register, writer

    for owner, name in ((register, "load"), (register, "pool"), (register, "_load_writer"),
                        (writer, "prepared"), (writer.Writer, "commit"),
                        (register._State, "write"), (cheatsheet, "_kept_up_to_date"),
                        (cheatsheet, "_cheatsheet")):  # fmt: skip
        timed(owner, name)
    settle = register._settle_task
    landed = [0]

    settled = [(0.0, 0.0)]  # when the last task was settled

    def counted(*args: Any, **kwargs: Any) -> Any:
        landed[0] += 1
        if landed[0] == 1:
            mark("first task landed")
        try:
            return settle(*args, **kwargs)
        finally:
            settled[0] = (time.monotonic() - t0, time.process_time() - c0)

    register._settle_task = counted
    sys.argv = ["netfleet", *argv]
    with (
        open(os.devnull, "w") as quiet,
        contextlib.redirect_stdout(quiet),
        contextlib.suppress(SystemExit),
    ):
        runpy.run_module("netfleet", run_name="__main__")
    mark("end")
    at, cpu = settled[0]
    marks.append((at, cpu, f"last task settled ({landed[0]} tasks)"))
    for wall, used, what in sorted(marks):
        print(f"{wall:8.3f} s wall {used:7.3f} s CPU  {what}")
    print(f"this process: {_cpu(os.getpid()):.2f} CPU s (/proc/self/stat, its own threads)")


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("folder", type=Path, help="the foreign files (bench/ingest_scale.py's)")
    ap.add_argument("--pattern", default="seed002")
    ap.add_argument("--import-only", action="store_true", help="netfleet import, no sheet")
    ap.add_argument("--phases", action="store_true", help="in this process, phases timed")
    ap.add_argument("--step", type=float, default=0.5, help="timeline seconds a line")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="nf-timeline-"))
    try:
        cat = str(work / "catalog")
        if args.import_only:
            argv = ["import", str(args.folder), "--pattern", args.pattern, "--catalog", cat]
        else:
            argv = ["cheatsheet", "--import-from", str(args.folder), "--pattern", args.pattern,
                    "--catalog", cat, "--side", "sender", "--by", "instance_type"]  # fmt: skip
        if args.phases:
            phases(argv)
        else:
            sampled([sys.executable, "-m", "netfleet", *argv], args.step)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":  # (the fork server imports this module again: run nothing then)
    sys.exit(main())
