"""Both entry points of the catalog's load loop write the golden rows (tests/fixtures/golden/,
made by scripts/golden_rows.py from the reference builder): ``ingest`` of every captured
iperf3 output as an envelope, ``register`` of every captured foreign iperf3 file by
reference. A change to a builder, the reader or the writer that changes a row fails here; a
deliberate one is a new golden file, reviewed as a diff."""

from __future__ import annotations

import json
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


def _read_back(catalog: Path, run_ids: list[str], where: str = "") -> list[dict[str, Any]]:
    """Each run's rows of each compared table, read back from the catalog, normal form."""
    con = connect(catalog)
    try:
        out = []
        for run in run_ids:
            tables = {}
            for table in goldenkit.TABLES:
                cursor = con.execute(f"SELECT * FROM {table} WHERE run_id = ?", [run])
                names = [d[0] for d in cursor.description]
                rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
                tables[table] = json.loads(json.dumps(goldenkit.normal(rows, table, where)))
            out.append(tables)
        return out
    finally:
        con.close()


@pytest.mark.parametrize("workers", [1, 2])
def test_ingest_writes_the_golden_rows(
    tmp_path: Path, workers: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    from netfleet.catalog import reader

    monkeypatch.setattr(reader, "PARALLEL_MIN", 8)  # workers=2: the envelopes read in workers
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

    monkeypatch.setattr(reader, "PARALLEL_MIN", 8)  # workers=2: the files read in workers
    monkeypatch.setattr(reader, "TASK_FILES", 16)
    files = [str(p) for p in goldenkit.FOREIGN]
    report = register(files, tmp_path / "cat", workers=workers)
    assert not report.bad and len(report.registered) == len(files)
    con = connect(tmp_path / "cat")
    try:
        by_file = dict(con.execute("SELECT source, run_id FROM manifest").fetchall())
    finally:
        con.close()
    names = [Path(f).name.removesuffix(".json") for f in files]
    got = _read_back(tmp_path / "cat", [by_file[f] for f in files], str(goldenkit.HERE / "import"))
    for name, tables in zip(names, got, strict=True):
        assert tables == _golden("register", name), name
