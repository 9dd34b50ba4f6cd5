"""Both entry points of the catalog's load loop write the golden rows (tests/fixtures/golden/,
made by scripts/golden_rows.py from the reference builder): ``ingest`` of every captured
iperf3 output as an envelope, ``register`` by reference of every captured file an import
takes (iperf3 JSON and ``--json-stream``, iperf 2 CSV and text, published outputs; a refused
one's reason). A change to a builder, the reader or the writer that changes a row fails here; a
deliberate one is a new golden file, reviewed as a diff."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from netfleet.catalog import connect, ingest
from netfleet.catalog.register import register
from netfleet.store.root import ResultsRoot
from tests import goldenkit


def _golden(kind: str, name: str) -> dict[str, list[list[Any]]]:
    data: dict[str, list[list[Any]]] = json.loads(
        (goldenkit.GOLDEN_DIR / kind / f"{name}.json").read_text()
    )
    return data


def _read_back(
    catalog: Path, run_ids: list[str], where: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """Each run's rows of each compared table, read back from the catalog, normal form (each
    table read once; ``where``: a run's folder, made independent of it)."""
    con = connect(catalog)
    try:
        by_run: dict[str, dict[str, list[dict[str, Any]]]] = {
            run: {table: [] for table in goldenkit.TABLES} for run in run_ids
        }
        for table in goldenkit.TABLES:
            cursor = con.execute(
                f"SELECT * FROM {table} WHERE run_id IN (SELECT unnest(?::VARCHAR[]))", [run_ids]
            )
            names = [d[0] for d in cursor.description]
            for row in cursor.fetchall():
                got = dict(zip(names, row, strict=True))
                by_run[got["run_id"]][table].append(got)
        return [
            {
                table: json.loads(
                    json.dumps(goldenkit.normal(rows, table, (where or {}).get(run, "")))
                )
                for table, rows in by_run[run].items()
            }
            for run in run_ids
        ]
    finally:
        con.close()


@pytest.mark.parametrize("workers", [1, 2])
def test_ingest_writes_the_golden_rows(
    tmp_path: Path, workers: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    from netfleet.catalog import register as load_loop

    monkeypatch.setattr(load_loop, "PARALLEL_MIN", 8)  # workers=2: the envelopes read in workers
    root = ResultsRoot(tmp_path / "raw")
    runs = []
    for n, name in enumerate(goldenkit.CASES):
        runs.append(goldenkit.run_id(n, name))
        root.write(goldenkit.envelope(name, runs[-1]))
    report = ingest(root, tmp_path / "cat", batch_runs=7, workers=workers)  # several batches
    assert (report.ingested, report.bad) == (len(goldenkit.CASES), [])
    got = _read_back(tmp_path / "cat", runs)
    for name, tables in zip(goldenkit.CASES, got, strict=True):
        assert tables == _golden("ingest", name), name


@pytest.mark.parametrize("workers", [1, 2])
def test_register_writes_the_golden_rows(
    tmp_path: Path, workers: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    from netfleet.catalog import reader
    from netfleet.catalog import register as load_loop

    monkeypatch.setattr(load_loop, "PARALLEL_MIN", 8)  # workers=2: the files read in workers
    monkeypatch.setattr(reader, "TASK_FILES", 16)
    files = []  # each capture copied beside its golden name, modified at the golden's time
    for path in goldenkit.FOREIGN:
        copy = tmp_path / "src" / Path(goldenkit.foreign_name(path)).parent / path.name
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, copy)
        os.utime(copy, (goldenkit.MTIME, goldenkit.MTIME))
        files.append(str(copy))
    report = register(files, tmp_path / "cat", workers=workers)
    con = connect(tmp_path / "cat")
    try:
        rows = con.execute("SELECT source, run_id, reason FROM manifest").fetchall()
    finally:
        con.close()
    by_file = {source: (run, reason) for source, run, reason in rows}
    names = [goldenkit.foreign_name(p) for p in goldenkit.FOREIGN]
    refused = {n: _golden("register", n)["refused"] for n in names if _is_refused(n)}
    assert len(report.bad) == len(refused)
    assert len(report.registered) == len(files) - len(refused)
    kept = [f for f, n in zip(files, names, strict=True) if n not in refused]
    runs = [by_file[f][0] for f in kept]
    where = {by_file[f][0]: str(Path(f).parent) for f in kept}
    got = dict(zip(kept, _read_back(tmp_path / "cat", runs, where), strict=True))
    for file, name in zip(files, names, strict=True):
        if name in refused:
            assert by_file[file][1] == refused[name], name
            continue
        assert got[file] == _golden("register", name), name


def _is_refused(name: str) -> bool:
    return "refused" in _golden("register", name)
