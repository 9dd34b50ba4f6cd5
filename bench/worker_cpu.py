"""A worker's CPU per file (issue 26): ``reader._shipped`` of ``reader._columnar_task`` — read,
hash, inflate, decode, checks, rows, Arrow tables and their IPC bytes — over the first files of
a folder of foreign iperf3 files, in this one process, tasks of ``TASK_FILES`` files, after a
warm-up task; the best of ``--rounds`` passes (CPU seconds: ``time.process_time``), as
milliseconds a file.

    .venv/bin/python bench/worker_cpu.py /tmp/c10k --files 2000 --rounds 3
    .venv/bin/python bench/worker_cpu.py /tmp/c10k --files 2000 --profile tottime

On a shared machine, compare trees interleaved (``PYTHONPATH=<other tree>/src`` for the
other), each the best of several passes.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
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
    args = ap.parse_args()
    pattern = PRESETS.get(args.pattern, args.pattern)
    opts = Options("import", {}, pattern_regex(pattern), side="sender")
    files = list(listed([args.folder], False))[: args.files]
    size = reader.TASK_FILES
    tasks = [files[i : i + size] for i in range(0, len(files), size)]
    if len(tasks) < 2:
        sys.exit(f"{args.folder}: fewer than {2 * size} files")
    shipped = partial(
        reader._shipped, partial(reader._columnar_task, opts=opts, follow_links=False)
    )
    shipped(tasks[0])  # the libraries it loads on first use
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


if __name__ == "__main__":
    main()
