"""The cheat sheet kept up to date batch by batch (issue 26, :mod:`netfleet.catalog.sheetstate`):
after an import by reference of new files, the sheet from the kept tally plus the new batch's
runs is the sheet DuckDB computes afresh over every run — the same groups, runs, intervals,
minimum, p5, p50, p95, maximum, flags and notes' counts (the average to a relative 1e-12) — on
both sides, with sender-only files, omitted intervals, UDP runs; a retired run, a damaged
state or a question it does not cover is computed afresh."""

from __future__ import annotations

import gzip
import json
import math
import os
import random
import tempfile
from pathlib import Path
from typing import Any

import duckdb
import pytest

from netfleet.catalog import cheatsheet as cs
from netfleet.catalog import sheetstate
from netfleet.catalog.cheatsheet import CheatSheetData, cheatsheet_data
from netfleet.catalog.register import register
from netfleet.catalog.sheetcache import SHEETS_DIR
from netfleet.catalog.sheetstate import STATE_DIR
from tests.test_import_reference import PUBLIC, RUNS
from tests.test_layers import loaded_modules

TYPES = ("c4.large", "m5.large", "r4.large")
#: captured iperf3 outputs of the engine's tests: --bidir, errors, UDP
ENGINE = sorted(p for p in (Path(__file__).parent / "fixtures" / "iperf3").glob("*.json")
                if p.name != "MANIFEST.json")  # fmt: skip


def _place(folder: Path, files: list[Path], first: int) -> None:
    """Captured iperf3 files (both sides, TCP and UDP, -O) in seed 002's layout, modified a
    minute ago (not "racy")."""
    then = (1_700_000_000 - 60) * 10**9
    for n, f in enumerate(files, start=first):
        path = folder / "d=2018-04-20" / f"{TYPES[n % len(TYPES)]}-{1524200000 + n}.json.gz"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(gzip.compress(f.read_bytes()))
        os.utime(path, ns=(then, then))


def _import(src: Path, cat: Path) -> None:
    register([str(src)], cat, pattern="seed002", workers=1)


class _Fresh:
    """Counts the sheets DuckDB computes (the incremental path computes none)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        real = cs._cheatsheet

        def counted(*args: Any, **kwargs: Any) -> CheatSheetData:
            self.calls += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(cs, "_cheatsheet", counted)


def _afresh(cat: Path, **question: Any) -> CheatSheetData:
    """The sheet with nothing kept: no cached answer, no tally."""
    for entry in [*(cat / SHEETS_DIR).glob("*"), *(cat / STATE_DIR).glob("*")]:
        entry.unlink()
    return cheatsheet_data(cat, **question)


def _same(kept: CheatSheetData, fresh: CheatSheetData) -> None:
    """Everything equal but the average, which sums in another order (relative 1e-12)."""
    avg = 2 + len(kept.group_keys) + cs.STATS.index("avg")
    assert len(kept.rows) == len(fresh.rows) and kept.rows
    for a, b in zip(kept.rows, fresh.rows, strict=True):
        assert math.isclose(a[avg], b[avg], rel_tol=1e-12), (a, b)
        assert a[:avg] + a[avg + 1 :] == b[:avg] + b[avg + 1 :], (a, b)
    others = [f for f in CheatSheetData.__slots__ if f != "rows"]
    assert {f: getattr(kept, f) for f in others} == {f: getattr(fresh, f) for f in others}


@pytest.mark.parametrize("side", ["receiver", "sender"])
def test_the_kept_sheet_after_new_files_is_the_fresh_sheet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, side: str
) -> None:
    src, cat = tmp_path / "src", tmp_path / "cat"
    # every captured file, twice: a fifth of them in the second import
    files = (RUNS + PUBLIC + ENGINE) * 2
    _place(src, files[: len(files) * 4 // 5], 0)
    _import(src, cat)
    question: dict[str, Any] = {"group_by": "instance_type", "side": side}
    first = cheatsheet_data(cat, **question)
    assert list((cat / STATE_DIR).glob("state-*.bin")), "a fresh sheet keeps its tally"
    _place(src, files[len(files) * 4 // 5 :], len(files) * 4 // 5)
    _import(src, cat)
    fresh = _Fresh(monkeypatch)
    kept = cheatsheet_data(cat, **question)
    assert fresh.calls == 0, "computed from the kept tally"
    assert kept.runs > first.runs and kept.not_tcp and kept.omitted and kept.stubs
    if side == "receiver":
        assert kept.from_sender  # client-side files: their sender's intervals, flagged
    _same(kept, _afresh(cat, **question))
    assert fresh.calls == 1


def test_narrow_windows_give_the_same_sheet_or_a_fresh_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Windows of two ranks either side (a few hundred intervals a group): each import's
    sheet is the fresh one, read from the windows when its ranks are inside them."""
    monkeypatch.setattr(sheetstate, "WINDOW", 2)
    src, cat = tmp_path / "src", tmp_path / "cat"
    files = RUNS * 2
    rng = random.Random(7)
    rng.shuffle(files)
    question: dict[str, Any] = {"group_by": ["instance_type"], "side": "sender"}
    done = 0
    fresh = _Fresh(monkeypatch)
    for step in (len(files) // 2, 3, 1, 4, 2, len(files)):
        _place(src, files[done : done + step], done)
        done += step
        _import(src, cat)
        kept = cheatsheet_data(cat, **question)
        _same(kept, _afresh(cat, **question))
        cheatsheet_data(cat, **question)  # the tally kept again, for the next step
    assert fresh.calls < 2 * 6, "some sheets came from the windows"


def test_a_retired_run_or_a_damaged_state_is_computed_afresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src, cat = tmp_path / "src", tmp_path / "cat"
    _place(src, RUNS[:10], 0)
    _import(src, cat)
    question: dict[str, Any] = {"group_by": "instance_type", "side": "sender"}
    cheatsheet_data(cat, **question)
    changed = next(src.rglob("*.json.gz"))
    changed.write_bytes(gzip.compress(RUNS[12].read_bytes()))  # its run retires
    os.utime(changed, ns=(1_600_000_000 * 10**9,) * 2)
    _import(src, cat)
    fresh = _Fresh(monkeypatch)
    after = cheatsheet_data(cat, **question)
    assert fresh.calls == 1  # a batch was written again: afresh
    _same(after, _afresh(cat, **question))
    cheatsheet_data(cat, **question)
    (state,) = (cat / STATE_DIR).glob("state-*.bin")
    raw = bytearray(state.read_bytes())
    raw[-3] ^= 0xFF  # one rate's bytes: the checksum differs
    state.write_bytes(bytes(raw))
    for entry in (cat / SHEETS_DIR).glob("sheet-*.json"):
        entry.unlink()
    again = cheatsheet_data(cat, **question)
    assert fresh.calls == 3 and again == after


def test_questions_outside_the_rules_are_not_kept(tmp_path: Path) -> None:
    src, cat = tmp_path / "src", tmp_path / "cat"
    _place(src, RUNS[:6], 0)
    _import(src, cat)
    for question in (
        {"group_by": "instance_type", "rate": "wire"},
        {"group_by": ["instance_type", "flow"]},
        {"group_by": "instance_type", "where": {"protocol": "tcp"}},
        {"group_by": "started_at"},  # a timestamp: not a JSON value
    ):
        cheatsheet_data(cat, **question)
    assert not list((cat / STATE_DIR).glob("state-*.bin"))


@pytest.mark.parametrize("seed", range(6))
def test_a_window_gives_duckdb_s_quantiles_or_none(seed: int) -> None:
    """Random rates (ties included) into a group whose windows hold a few ranks: wherever the
    quantile's ranks are inside, the value is DuckDB's quantile_cont of all the rates."""
    rng = random.Random(seed)
    pool = [rng.choice([1.0, 2.5, 3.0]) if rng.random() < 0.2 else rng.gauss(3e9, 1e9)
            for _ in range(rng.randrange(50, 400))]  # fmt: skip
    start = sorted(pool[: len(pool) // 2])
    group = sheetstate.Group()
    group.count, group.total, group.low, group.high = len(start), sum(start), start[0], start[-1]
    width = rng.randrange(1, 6)
    for q, window in zip(sheetstate.QUANTILES, group.windows, strict=True):
        rank = (len(start) - 1) * q
        lo, hi = max(0, math.floor(rank) - width), math.ceil(rank) + width + 1
        window[0], window[1] = lo, start[lo:hi]
    every = list(start)
    con = duckdb.connect()
    checked = 0
    for n, rate in enumerate(pool[len(pool) // 2 :]):
        group.add([rate])
        every.append(rate)
        found = group.quantiles()
        if found is not None and n % 5 == 0:
            want = con.execute(
                "SELECT quantile_cont(v, [0.05, 0.5, 0.95]) FROM (SELECT unnest(?) AS v)",
                [every],
            ).fetchone()
            assert want is not None and found == want[0]
            checked += 1
    assert checked
    assert group.count == len(every) and group.low == min(every) and group.high == max(every)


def _run(argv: list[str]) -> tuple[str, set[str]]:
    """The command's stdout (a file, as a pipe: no terminal) and the modules it loaded, in a
    fresh interpreter."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "stdout"
        loaded = loaded_modules(
            "import os, sys\nfrom netfleet.cli.main import main\n"
            + f"sys.argv = ['netfleet', *{argv!r}]\n"
            + f"fd, kept = os.open({str(out)!r}, os.O_WRONLY | os.O_CREAT), os.dup(1)\n"
            + "os.dup2(fd, 1)\n"
            + "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code\n"
            + "sys.stdout.flush()\nos.dup2(kept, 1)\n"
        )
        return out.read_text(), loaded


def test_the_command_after_new_files_loads_no_duckdb(tmp_path: Path) -> None:
    """``netfleet cheatsheet`` after an import of new files, in a fresh interpreter: the kept
    tally and the batch read with pyarrow — no DuckDB — and the sheet printed is the one
    printed afresh."""
    src, cat = tmp_path / "src", tmp_path / "cat"
    _place(src, RUNS[:8], 0)
    _import(src, cat)
    argv = ["cheatsheet", "--catalog", str(cat), "--by", "instance_type", "--side", "sender"]
    _run([*argv, "-f", "csv"])  # the first sheet keeps its tally
    _place(src, RUNS[8:12], 8)
    _import(src, cat)
    kept, loaded = _run([*argv, "-f", "csv"])
    assert "pyarrow" in loaded and "duckdb" not in loaded
    for entry in [*(cat / SHEETS_DIR).glob("*"), *(cat / STATE_DIR).glob("*")]:
        entry.unlink()
    fresh, loaded = _run([*argv, "-f", "csv"])
    assert "duckdb" in loaded

    def all_but_the_average(text: str) -> list[list[str]]:
        rows = [line.split(",") for line in text.splitlines()]
        at = rows[0].index("avg")  # it may differ in its last digit (summed in another order)
        return [row[:at] + row[at + 1 :] for row in rows]

    assert all_but_the_average(kept) == all_but_the_average(fresh) and len(kept.splitlines()) > 2


def test_a_large_import_is_computed_afresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """More new interval rows than the loop adds quicker than DuckDB recomputes: afresh."""
    src, cat = tmp_path / "src", tmp_path / "cat"
    _place(src, RUNS[:6], 0)
    _import(src, cat)
    question: dict[str, Any] = {"group_by": "instance_type", "side": "sender"}
    cheatsheet_data(cat, **question)
    _place(src, RUNS[6:12], 6)
    _import(src, cat)
    monkeypatch.setattr(sheetstate, "MAX_NEW_ROWS", 5)
    fresh = _Fresh(monkeypatch)
    _same(cheatsheet_data(cat, **question), _afresh(cat, **question))
    assert fresh.calls == 2


def test_netfleet_s_own_runs_ingested_in_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Envelopes ingested batch by batch (the catalog without a manifest): --bidir runs,
    failed runs and intervals whose rates no link carries (NaN, infinite, negative, huge —
    kept in the catalog, left out of the statistics, counted) in the new batch."""
    from netfleet.catalog import ingest
    from netfleet.store.rawfile import partition_path
    from netfleet.store.root import ResultsRoot
    from tests.test_catalog import NAMES, TYPES, make_envelope
    from tests.test_hostile_output import BAD_RATES, _set_rates, _write_raw

    root, cat = ResultsRoot(tmp_path / "raw"), tmp_path / "cat"
    for n, name in enumerate(NAMES):
        root.write(make_envelope(name, f"run-{n}", labels={"instance_type": TYPES[n % 3]}))
    ingest(root, cat)
    question: dict[str, Any] = {"group_by": ["instance_type", "direction"], "campaign": "camp"}
    first = cheatsheet_data(cat, **question)
    for n, name in enumerate(NAMES):
        root.write(make_envelope(name, f"again-{n}", labels={"instance_type": TYPES[n % 2]}))
    for name, value in BAD_RATES.items():
        env = make_envelope("tcp_bidir", f"bad-{name}", labels={"instance_type": TYPES[0]})
        doc = json.loads(env.model_dump_json())
        assert _set_rates(doc["result"], value)
        _write_raw(root, doc, partition_path(env))
    env = make_envelope("tcp_omit1", "short-omitted", labels={"instance_type": TYPES[1]})
    doc = json.loads(env.model_dump_json())
    short = [iv for iv in _sums(doc["result"]) if iv["omitted"]]
    for iv in short:  # omitted and shorter than half the interval: an omitted, not a stub
        iv["seconds"] = 0.001
    _write_raw(root, doc, partition_path(env))
    ingest(root, cat)
    fresh = _Fresh(monkeypatch)
    kept = cheatsheet_data(cat, **question)
    assert fresh.calls == 0 and short
    assert kept.impossible > first.impossible and kept.bidir > first.bidir > 0
    _same(kept, _afresh(cat, **question))


def _sums(node: Any) -> list[dict[str, Any]]:
    """Every interval's ``sum`` under ``node`` (an envelope's result)."""
    if isinstance(node, dict):
        found = [iv["sum"] for iv in node.get("intervals", []) if isinstance(iv, dict)]
        return found + [s for k, v in node.items() if k != "intervals" for s in _sums(v)]
    if isinstance(node, list):
        return [s for v in node for s in _sums(v)]
    return []


def test_the_runs_shorter_than_a_burst_are_the_sheet_s_own_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fixed-length runs per instance type (what the note on runs shorter than their
    type's burst reads) are answered by the sheet's query and kept up to date by its tally:
    after new files, the kept sheet's are the fresh sheet's, with no DuckDB; one cache entry
    holds the sheet and them."""
    from netfleet.report.cheatsheet import cheatsheet_table

    src, cat = tmp_path / "src", tmp_path / "cat"
    burst = ["baseline_gbps=0.75", "peak_gbps=10", "bucket_gbit=2700"]
    _place(src, RUNS[:6], 0)
    register([str(src)], cat, pattern="seed002", labels=burst, workers=1)
    question: dict[str, Any] = {"group_by": "instance_type", "side": "sender"}
    first = cheatsheet_data(cat, **question)
    assert [t[:2] for t in first.types] == [[k, 2] for k in TYPES]
    assert len(list((cat / SHEETS_DIR).glob("sheet-*.json"))) == 1
    _place(src, RUNS[6:9], 6)
    register([str(src)], cat, pattern="seed002", labels=burst, workers=1)
    fresh = _Fresh(monkeypatch)
    kept = cheatsheet_data(cat, **question)
    assert fresh.calls == 0, "computed from the kept tally"
    assert [t[:2] for t in kept.types] == [[k, 3] for k in TYPES]
    assert kept.types[2][3]["bucket_gbit"] == "2700"
    notes = cheatsheet_table(kept).notes
    assert any(n.startswith("r4.large: ") and "burst lasts ~292 s" in n for n in notes)
    _same(kept, _afresh(cat, **question))
