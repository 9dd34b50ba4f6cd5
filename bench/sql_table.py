"""A large query result printed as a terminal table (issue 37): ``netfleet sql "select * from
runs"`` over 100,000 runs took 397 s and 4.5 GB as a table (6 s as JSON) — Rich measures every
cell. The table is now bounded (:data:`netfleet.report.output.MAX_TABLE_CELLS` cells and a
note); the other formats print every row.

Usage: ``.venv/bin/python bench/sql_table.py [--rows 100000] [--against SRC]``

Each format is printed by the CLI's own ``emit`` in a child process (stdout to /dev/null, the
console 200 columns wide) from a result shaped like the ``runs`` view (45 columns: text, ints,
floats, timestamps as text, nulls). ``--against SRC`` (e.g. a ``git archive`` of an older
``src``) runs the same with ``PYTHONPATH=SRC``. Prints wall seconds and peak RSS per format.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

CHILD = r"""
import resource, sys, time
from netfleet.cli.emit import emit
from netfleet.report.output import OutputFormat
from netfleet.tabular import Tabular

rows_n, fmt = int(sys.argv[1]), sys.argv[2]
columns = [f"col{i:02d}" for i in range(45)]
rows = []
for n in range(rows_n):
    row = []
    for i in range(45):
        kind = i % 5
        row.append(
            f"run-{n:06d}-{i}" if kind == 0 else n * i if kind == 1 else n / (i + 1)
            if kind == 2 else "2026-11-22T10:00:00+00:00" if kind == 3 else None
        )
    rows.append(row)
data = Tabular(columns=columns, rows=rows, title="sql")
started = time.perf_counter()
emit(data, OutputFormat(fmt))
took = time.perf_counter() - started
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"{took:.2f} {peak:.0f}", file=sys.stderr)
"""


def run(rows: int, fmt: str, src: str | None) -> tuple[float, float]:
    env = {**os.environ, "COLUMNS": "200"}
    if src:
        env["PYTHONPATH"] = src
    with open(os.devnull, "w") as null:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(rows), fmt],
            stdout=null,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            check=True,
        )
    took, peak = done.stderr.split()[-2:]
    return float(took), float(peak)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--against", help="another src folder, run with PYTHONPATH=SRC")
    args = ap.parse_args()
    for label, src in (("this", None), ("against", args.against)):
        if label == "against" and not src:
            continue
        for fmt in ("table", "json", "csv"):
            started = time.perf_counter()
            took, peak = run(args.rows, fmt, src)
            print(
                f"{label:8} {fmt:6} {args.rows:>9,} rows: print {took:7.2f} s, "
                f"peak RSS {peak:6.0f} MiB (child wall {time.perf_counter() - started:.1f} s)"
            )


if __name__ == "__main__":
    main()
