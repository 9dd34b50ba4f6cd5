"""A worker's CPU per file (issue 26): ``reader._shipped`` of ``reader._columnar_task`` — read,
hash, inflate, decode, checks, rows, Arrow tables and their IPC bytes — over the first files of
a folder of foreign iperf3 files, in this one process, tasks of ``TASK_FILES`` files, after a
warm-up task; the best of ``--rounds`` passes (CPU seconds: ``time.process_time``), as
milliseconds a file.

    .venv/bin/python bench/worker_cpu.py /tmp/c10k --files 2000 --rounds 3
    .venv/bin/python bench/worker_cpu.py /tmp/c10k --files 2000 --profile tottime
    .venv/bin/python bench/worker_cpu.py /tmp/c10k --instructions 2

On a shared machine, compare trees interleaved (``PYTHONPATH=<other tree>/src`` for the
other), each the best of several passes. ``--instructions K``: the instructions a file
instead (valgrind's callgrind, ≈ 2 min: a run of one task and a run of 1 + K tasks, the
difference over K tasks' files; ``PYTHONHASHSEED=0``) — what other work on the machine does
not move, where CPU seconds move by a third at a load of 8-12 (not the cache's or memory's
cost: a count, not a time). ``--stages``: the instructions a file of each step of a worker's
read alone (SHA-256, inflate, the decode, the checks, the interval rows, a file's whole read,
a task's), over one task's files after a warm-up task (callgrind counting only inside
``operator.call``, which runs each step once; ≈ 2 min). ``--pool``: the same tasks handed to
the import's own pool of two workers (``register.pool``), each task's CPU measured inside its
worker (user, system, minor page faults) against the workers' whole CPU (``/proc``): what the
pool's hand-out and hand-back cost beside the task; then the tasks again in this process alone.

    .venv/bin/python bench/worker_cpu.py /tmp/c10k --files 10000 --pool
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import re
import subprocess
import sys
import time
from functools import partial


def main() -> None:
    from netfleet.catalog import reader
    from netfleet.catalog.sourcelist import Options, listed
    from netfleet.store.sources import PRESETS, pattern_regex

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder")
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pattern", default="seed002", help="a preset or a pattern")
    ap.add_argument("--profile", metavar="SORT", help="cProfile one pass, sorted so")
    ap.add_argument("--instructions", type=int, metavar="K", help="instructions a file, of K tasks")
    ap.add_argument("--stages", action="store_true", help="instructions a file of each step")
    ap.add_argument("--pool", action="store_true", help="in the import's pool, and alone")
    ap.add_argument("--tasks", type=int, help=argparse.SUPPRESS)  # (--instructions' runs)
    ap.add_argument("--stage-run", action="store_true", help=argparse.SUPPRESS)  # (--stages')
    args = ap.parse_args()
    if args.instructions:
        instructions(args.folder, args.pattern, args.instructions)
        return
    if args.stages:
        stages(args.folder, args.pattern)
        return
    pattern = PRESETS.get(args.pattern, args.pattern)
    opts = Options("import", {}, pattern_regex(pattern), side="sender")
    files = list(listed([args.folder], False))[: args.files]
    size = reader.TASK_FILES
    tasks = [files[i : i + size] for i in range(0, len(files), size)]
    if len(tasks) < 2 and args.tasks is None:
        sys.exit(f"{args.folder}: fewer than {2 * size} files")
    shipped = partial(
        reader._shipped, partial(reader._columnar_task, opts=opts, follow_links=False)
    )
    if args.pool:
        in_pool(reader._cut(files, size, True), shipped)
        return
    shipped(tasks[0])  # the libraries it loads on first use
    if args.stage_run:  # (under callgrind: each step over the second task's files)
        run_stages(tasks[1], opts, shipped)
        return
    if args.tasks is not None:  # (under callgrind: the tasks, nothing timed)
        for task in tasks[1 : args.tasks]:
            shipped(task)
        return
    counted = sum(len(task) for task in tasks[1:])
    profile = cProfile.Profile() if args.profile else None
    best = float("inf")
    for _ in range(1 if profile else args.rounds):
        start = time.process_time()
        if profile:
            profile.enable()
        for task in tasks[1:]:
            shipped(task)
        if profile:
            profile.disable()
        best = min(best, time.process_time() - start)
    print(f"{best / counted * 1000:.3f} ms/file CPU ({counted} files)")
    if profile:
        pstats.Stats(profile).sort_stats(args.profile).print_stats(40)


def _measured(shipped: partial, items: list) -> tuple[int, float, float, float, int]:
    """``shipped`` of ``items`` in a worker: its pid, and the task's CPU (all, user, system
    seconds) and minor page faults."""
    import resource

    before, cpu = resource.getrusage(resource.RUSAGE_SELF), time.process_time()
    shipped(items)
    cpu, after = time.process_time() - cpu, resource.getrusage(resource.RUSAGE_SELF)
    return (os.getpid(), cpu, after.ru_utime - before.ru_utime,
            after.ru_stime - before.ru_stime, after.ru_minflt - before.ru_minflt)  # fmt: skip


def _proc_cpu(pid: int) -> tuple[float, float, int]:
    """A process's user and system CPU seconds and minor page faults (``/proc``)."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick, int(fields[7])


def in_pool(tasks: list, shipped: partial) -> None:
    """``tasks`` in the import's pool of two workers, then in this process (ms a file)."""
    from netfleet.catalog.register import pool

    files = sum(map(len, tasks))
    with pool(2, files) as workers:
        time.sleep(2)  # (the workers started: their start is not the tasks')
        start = time.time()
        done = list(workers.map(partial(_measured, shipped), tasks))
        wall = time.time() - start
        whole = [_proc_cpu(pid) for pid in sorted({d[0] for d in done})]
    user, system, faults = (sum(w[k] for w in whole) for k in range(3))
    inside = sum(d[1] for d in done)

    def ms(seconds: float) -> str:
        return f"{seconds / files * 1000:.3f}"

    print(f"pool of {len(whole)} workers, {files} files, {len(tasks)} tasks, {wall:.2f} s wall")
    print(f"  in its tasks:   {ms(inside)} ms/file CPU (user {ms(sum(d[2] for d in done))}, "
          f"system {ms(sum(d[3] for d in done))}), "
          f"{sum(d[4] for d in done) / files:.2f} minor faults a file")  # fmt: skip
    print(f"  workers' whole: {ms(user + system)} ms/file CPU (user {ms(user)}, system "
          f"{ms(system)}), {faults / files:.2f} minor faults a file")  # fmt: skip
    alone = [_measured(shipped, items) for items in tasks]
    print(f"alone, the same tasks in this process: {ms(sum(d[1] for d in alone))} ms/file CPU "
          f"(user {ms(sum(d[2] for d in alone))}, system {ms(sum(d[3] for d in alone))}), "
          f"{sum(d[4] for d in alone) / files:.2f} minor faults a file")  # fmt: skip


def instructions(folder: str, pattern: str, extra: int) -> None:
    """Instructions a file of ``extra`` tasks: callgrind's total of 1 + ``extra`` tasks less
    that of the first (warm-up) task alone."""
    from netfleet.catalog import reader

    totals = []
    for tasks in (1, 1 + extra):
        run = subprocess.run(
            ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
             __file__, folder, "--pattern", pattern, "--files", str(tasks * reader.TASK_FILES),
             "--tasks", str(tasks)],
            capture_output=True, text=True, check=True, env={**os.environ, "PYTHONHASHSEED": "0"},
        )  # fmt: skip
        found = re.search(r"Collected : (\d+)", run.stderr)
        if found is None:
            sys.exit(f"no instruction count from callgrind:\n{run.stderr[-2000:]}")
        totals.append(int(found.group(1)))
    files = extra * reader.TASK_FILES
    print(f"{(totals[1] - totals[0]) / files / 1e6:.3f} M instructions a file ({files} files)")


STAGES = ("sha256", "inflate", "decode", "checked_shape", "check_intervals",
          "interval_columns", "end_row", "read_file", "read_task")  # fmt: skip


def run_stages(items: list, opts: object, shipped: partial) -> None:
    """Each of :data:`STAGES` over ``items``' files, once, through ``operator.call`` (what
    callgrind counts)."""
    import gc
    import hashlib
    import operator

    from netfleet.catalog import reader
    from netfleet.iperf3json import end_row, interval_columns
    from netfleet.store import import_iperf3

    gc.disable()  # (as read_task: the collector waits for the task's end)
    datas = [open(item.path, "rb").read() for item in items]  # noqa: SIM115
    plains = [reader.inflate(data) for data in datas]
    docs = [import_iperf3.parse(plain, streams=False) for plain in plains]
    steps = {
        "sha256": lambda: [hashlib.sha256(data).hexdigest() for data in datas],
        "inflate": lambda: [reader.inflate(data) for data in datas],
        "decode": lambda: [import_iperf3.typed(plain, streams=False) for plain in plains],
        "checked_shape": lambda: [import_iperf3.checked_shape(doc) for doc in docs],
        "check_intervals": lambda: [import_iperf3.check_intervals(doc) for doc in docs],
        "interval_columns": lambda: [interval_columns("r", "client", doc, False) for doc in docs],
        "end_row": lambda: [end_row("r", "client", doc) for doc in docs],
        "read_file": lambda: [
            reader.read_file(item.path, data, {}, opts)  # type: ignore[arg-type]
            for item, data in zip(items, datas, strict=True)
        ],
        "read_task": lambda: shipped(items),
    }
    for name in STAGES:
        operator.call(steps[name])


def stages(folder: str, pattern: str) -> None:
    """:data:`STAGES`' instructions a file: callgrind collecting inside ``operator.call``
    only, a profile dumped after each call."""
    import glob
    import tempfile

    from netfleet.catalog import reader

    with tempfile.TemporaryDirectory(prefix="nf-stages-") as out:
        subprocess.run(
            ["valgrind", "--tool=callgrind", "--collect-atstart=no",
             "--toggle-collect=_operator_call", "--dump-after=_operator_call",
             f"--callgrind-out-file={out}/cg", sys.executable, __file__, folder, "--pattern",
             pattern, "--files", str(2 * reader.TASK_FILES), "--stage-run"],
            capture_output=True, text=True, check=True, env={**os.environ, "PYTHONHASHSEED": "0"},
        )  # fmt: skip
        dumps = sorted(glob.glob(f"{out}/cg.*"), key=lambda p: int(p.rsplit(".", 1)[1]))
        for name, dump in zip(STAGES, dumps, strict=False):  # (then the exit's dump)
            with open(dump) as fh:
                text = fh.read()
            found = re.search(r"^summary: (\d+)", text, re.M) or re.search(
                r"^totals: (\d+)", text, re.M
            )
            count = int(found.group(1)) if found else 0
            print(f"{name:<18} {count / reader.TASK_FILES / 1e6:7.3f} M instructions a file")


if __name__ == "__main__":
    main()
