"""Lazy per-stream rows (issue 26, item 3): what one run's streams cost when a query asks for
them, what building a whole catalog's costs, and that ingest of netfleet's own envelopes is no
slower than on main.

    .venv/bin/python bench/lazy_streams.py [--files 200] [--rounds 3] [--main /work/main/src]

1. Seeded seed-002-shaped files (iperf3 -P 10, 60 intervals: 600 per-stream rows a file) are
   imported as envelopes and ingested: the *eager* catalog; and imported by reference
   (``netfleet import --catalog``: runs, ends and sums, the manifest): the *lazy* catalog.
2. **One run's streams**, over ``--rounds`` × 10 runs picked at random: in-process
   ``lazystreams.run_streams`` (read, SHA-256, decode, Arrow) and ``connect(streams=[run])`` +
   ``SELECT count(*) FROM streams`` (the query layer's whole path); and ``netfleet sql`` of the
   same as its own process (start-up included). Target: ≤ 0.2 s.
3. **A whole catalog's streams built** (``ensure_streams``, a worker per CPU), then the no-op
   check of a built catalog, then ``SELECT count(*) FROM streams`` over the built parts.
4. With ``--main``: ``netfleet ingest`` of the same envelopes into a fresh catalog, this
   checkout against main's sources (``PYTHONPATH``), interleaved over the rounds.

Every count and byte total of the lazy streams is checked against the eager catalog's.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "bench")]

import ingest_scale  # noqa: E402 (seeded seed-002 files)

import netfleet.api  # noqa: E402
from netfleet.catalog import lazystreams as ls  # noqa: E402
from netfleet.catalog import lazystreams_build as lb  # noqa: E402
from netfleet.catalog.ingestion import ingest  # noqa: E402
from netfleet.catalog.views import connect  # noqa: E402
from netfleet.store import ResultsRoot  # noqa: E402
from netfleet.store.imports import import_files  # noqa: E402

ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
TOTALS = "SELECT count(*), sum(bytes) FROM streams"


def spread(values: list[float]) -> str:
    return (
        f"min {min(values) * 1e3:7.1f} ms  median {statistics.median(values) * 1e3:7.1f} ms  "
        f"max {max(values) * 1e3:7.1f} ms  (n={len(values)})"
    )


def totals(catalog: Path, **kw: object) -> tuple[int, int]:
    con = connect(catalog, **kw)  # type: ignore[arg-type]
    try:
        row = con.execute(TOTALS).fetchone()
    finally:
        con.close()
    assert row is not None
    return int(row[0]), int(row[1] or 0)


def one_run(
    lazy: Path, runs: list[ls.SourceRun], rounds: int, rng: random.Random, where: str
) -> None:
    """One run's streams, ``where`` they come from (its file, or the built parts)."""
    inproc: list[float] = []
    query: list[float] = []
    cli: dict[str, list[float]] = {"--streams-of RUN": [], "all streams": []}
    for _ in range(rounds):
        for run in rng.sample(runs, min(10, len(runs))):
            t = time.perf_counter()
            table = ls.run_streams([run])
            inproc.append(time.perf_counter() - t)
            t = time.perf_counter()
            n, _ = totals(lazy, streams=[run.run_id])
            query.append(time.perf_counter() - t)
            assert n == table.num_rows > 0
    for _ in range(rounds):
        run = rng.choice(runs)
        sql = f"SELECT count(*) FROM streams WHERE run_id = '{run.run_id}'"
        argv = [sys.executable, "-m", "netfleet", "sql", "--catalog", str(lazy), sql]
        asks = (("--streams-of RUN", ["--streams-of", run.run_id]), ("all streams", []))
        for name, extra in asks:
            if name == "all streams" and where == "file":
                continue  # that would build every part: measured below
            t = time.perf_counter()
            subprocess.run([*argv, *extra], check=True, capture_output=True, env=ENV)
            cli[name].append(time.perf_counter() - t)
    print(f"one run's streams (600 rows), from {where}:")
    if where == "file":
        print(f"  run_streams (read + sha256 + decode + Arrow)   {spread(inproc)}")
    print(f"  connect(streams=[run]) + count(*)               {spread(query)}")
    for name, values in cli.items():
        if values:
            print(f"  netfleet sql {name:18s} (own process)   {spread(values)}")


def floor(rounds: int) -> None:
    values = []
    for _ in range(rounds):
        version = [sys.executable, "-m", "netfleet", "--version"]
        t = time.perf_counter()
        subprocess.run(version, check=True, capture_output=True, env=ENV)
        values.append(time.perf_counter() - t)
    print(f"netfleet --version (start-up floor)               {spread(values)}")


def build(lazy: Path, eager_totals: tuple[int, int]) -> None:
    shutil.rmtree(lazy / lb.STREAMS_DIR, ignore_errors=True)
    runs = ls.manifest_runs(lazy)
    t = time.perf_counter()
    lb.ensure_streams(lazy, runs, workers=lb.cpu_workers())
    built = time.perf_counter() - t
    t = time.perf_counter()
    lb.ensure_streams(lazy, runs)
    again = time.perf_counter() - t
    t = time.perf_counter()
    got = totals(lazy, streams=True)
    read = time.perf_counter() - t
    assert got == eager_totals, (got, eager_totals)
    files = len(runs)
    size = sum(p.stat().st_size for p in (lazy / lb.STREAMS_DIR).glob("part-*.parquet"))
    print(
        f"whole catalog: built {files} files / {got[0]} rows in {built:.2f} s "
        f"({files / built:.0f} files/s, {lb.cpu_workers()} workers, "
        f"{size / 1e6:.1f} MB of parts); built already: {again * 1e3:.1f} ms; "
        f"connect(streams=True) + count(*): {read * 1e3:.1f} ms"
    )


def ingest_against_main(raw: Path, work: Path, main_src: str, rounds: int) -> None:
    sources = {"this branch": str(REPO / "src"), "main": main_src}
    times: dict[str, list[float]] = {k: [] for k in sources}
    for r in range(rounds):
        for name, src in sources.items():
            catalog = work / f"ingest-{r}-{name.replace(' ', '-')}"
            argv = [sys.executable, "-m", "netfleet", "ingest", "-r", str(raw), "--catalog"]
            env = {**ENV, "PYTHONPATH": src}
            t = time.perf_counter()
            subprocess.run([*argv, str(catalog)], check=True, capture_output=True, env=env)
            times[name].append(time.perf_counter() - t)
            shutil.rmtree(catalog)
    print("netfleet ingest of the envelopes (fresh catalog, own process):")
    for name, values in times.items():
        print(f"  {name:12s} " + "  ".join(f"{v:.2f} s" for v in values))
    ratio = [a / b for a, b in zip(times["this branch"], times["main"], strict=True)]
    print("  branch/main  " + "  ".join(f"{v:.2f}×" for v in ratio))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=2)
    parser.add_argument("--main", help="main's src folder: compare netfleet ingest with it")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="netfleet-lazy-streams-"))
    try:
        files = work / "files"
        ingest_scale.generate(files, args.files, args.seed)
        sources = sorted(p.resolve() for p in files.rglob("*.json.gz"))
        root = ResultsRoot(work / "raw")
        t = time.perf_counter()
        report = import_files([str(p) for p in sources], root, workers=lb.cpu_workers())
        assert not report.bad, report.bad
        imported = time.perf_counter() - t
        t = time.perf_counter()
        assert not ingest(root, work / "eager").bad
        took = time.perf_counter() - t
        print(f"{args.files} seed-002 files: import {imported:.2f} s, ingest {took:.2f} s (eager)")
        lazy = work / "lazy"
        t = time.perf_counter()
        registered = netfleet.api.register([str(p) for p in sources], catalog=lazy)
        assert not registered.bad, registered.bad
        print(f"imported by reference (runs, ends, sums): {time.perf_counter() - t:.2f} s")
        eager_totals = totals(work / "eager")
        runs = ls.manifest_runs(lazy)
        one_run(lazy, runs, args.rounds, random.Random(args.seed), "file")
        build(lazy, eager_totals)
        one_run(lazy, runs, args.rounds, random.Random(args.seed + 1), "the built parts")
        floor(args.rounds)
        if args.main:
            ingest_against_main(work / "raw", work, args.main, args.rounds)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
