"""What grows with the number of files (issue 26): the manifest's side of an import and the
cheat sheet's memory, each step in its own process, CPU seconds and peak RSS.

Over ``--files`` generated seed-002 files (``bench/ingest_scale.py``'s ``generate``; or a
folder given with ``--raw``, left as it is): the first import (peak RSS), the cheat sheet
computed afresh statement by statement (RSS after each), the no-op import split into listing,
reading the stat index and comparing (CPU), and +100 files (the manifest's write, CPU)::

    .venv/bin/python bench/manifest_scale.py --files 100000   # ≈ 10 min to generate, 1.7 GB

The generated folder and the catalogs are deleted at the end (``TMPDIR`` chooses where).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
ASKED = json.dumps({"labels": {}, "pattern": "seed002", "side": "auto"}, sort_keys=True)

#: the no-op's manifest side, in one process: listing, the stat index, the comparison
NOOP = """
import sys, time
from netfleet.catalog import register as R, sourcelist
from netfleet.catalog.manifest import read_index
c = time.process_time
t0 = c(); found = list(sourcelist.listed([sys.argv[1]], False)); t1 = c()
index = read_index(sys.argv[2]); t2 = c()
active = R._active(index, "imported", sys.argv[3])
todo, gone = R._work(found, [sys.argv[1]], index, active); t3 = c()
print(f"listing {t1 - t0:.3f} s, stat index {t2 - t1:.3f} s, comparison {t3 - t2:.3f} s "
      f"(manifest side {t3 - t1:.3f} s; {len(found)} files, {len(todo)} to read)")
"""

#: the cheat sheet computed afresh: RSS after each statement
SHEET = """
import resource, sys, time
from netfleet.catalog import cheatsheet as cs
from netfleet.catalog.views import connect

class Traced:
    def __init__(self, con): self.con = con
    def execute(self, sql, params=None):
        t = time.process_time()
        self.con.execute(sql, params) if params is not None else self.con.execute(sql)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"  {peak:6.0f} MB {time.process_time() - t:5.2f} s  {sql[:70]}")
        return self
    def fetchall(self): return self.con.fetchall()
    def fetchone(self): return self.con.fetchone()

cs._cheatsheet(Traced(connect(sys.argv[1])), ["instance_type"], "sender", None, None, 1e9,
               "Gbit/s", "goodput")
"""


def _timed(label: str, argv: list[str]) -> None:
    """One process: wall, CPU and peak RSS of it and the processes it waited for (wait4)."""
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read()
    if proc.returncode:
        raise SystemExit(f"{label}: exit {proc.returncode}\n{text[-2000:]}")
    cpu = usage.ru_utime + usage.ru_stime
    print(f"{label:<36} wall {time.perf_counter() - started:7.2f} s  CPU {cpu:7.2f} s  "
          f"peak RSS {usage.ru_maxrss / 1024:5.0f} MB")  # fmt: skip
    if text.strip():
        print(text.rstrip())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--raw", type=Path, help="a folder of seed-002 files (not generated)")
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    import ingest_scale

    work = Path(tempfile.mkdtemp(prefix="nf-manifest-scale-"))
    try:
        raw = args.raw or work / "raw"
        if args.raw is None:
            ingest_scale.generate(raw, args.files, 1)
        cat = work / "catalog"
        nf = [sys.executable, "-m", "netfleet"]
        imp = [*nf, "import", str(raw), "--pattern", "seed002", "--catalog", str(cat)]
        files = sum(1 for _ in raw.rglob("*.json.gz"))
        print(f"{files} files; load average {os.getloadavg()}")
        _timed("first import", imp)
        _timed("cheat sheet, statement by statement", [sys.executable, "-c", SHEET, str(cat)])
        _timed("no-op import (the command)", imp)
        for _ in range(2):
            _timed("no-op, in one process", [sys.executable, "-c", NOOP, str(raw), str(cat), ASKED])
        extra = work / "extra"  # 100 more files in the folder (moved out again for --raw)
        ingest_scale.generate(extra, 100, 1, first=files)
        added = [p.relative_to(extra) for p in extra.rglob("*.json.gz")]
        for name in added:
            (raw / name).parent.mkdir(parents=True, exist_ok=True)
            (extra / name).rename(raw / name)
        try:
            _timed("+100 files: import", imp)
        finally:
            if args.raw is not None:
                for name in added:
                    (raw / name).unlink(missing_ok=True)
        segments = sorted(p.name for p in (cat / "manifest.segments").glob("*.parquet"))
        print(f"manifest segments: {segments}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
