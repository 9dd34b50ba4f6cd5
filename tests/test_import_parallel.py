"""`netfleet import` over worker processes: the same bytes, reports and order as the
sequential path, a bad file among good ones reported in its place, and progress counted."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from netfleet.store import ResultsRoot
from netfleet.store import imports as imports_module
from netfleet.store.imports import import_files

FIX = Path(__file__).parent / "fixtures" / "import"
RUNS = sorted(p for p in FIX.glob("*.json") if p.name != "MANIFEST.json")


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.json.gz"))}


def test_workers_write_what_the_sequential_import_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sources = tmp_path / "src"
    sources.mkdir()
    for path in RUNS:
        shutil.copy(path, sources / path.name)
    (sources / "broken.json").write_text('{"start": {"version": "iperf 3.12"')
    monkeypatch.setattr(imports_module, "PARALLEL_MIN", 2)
    seen: list[tuple[int, int]] = []
    got = {}
    for workers in (1, 2):
        root = tmp_path / f"r{workers}"

        def tick(done: int, total: int, workers: int = workers) -> None:
            if workers == 2:
                seen.append((done, total))

        report = import_files(
            [str(sources)],
            ResultsRoot(root),
            labels=["cloud=lab"],
            workers=workers,
            progress=tick,
        )
        got[workers] = (tree(root), report)
    (seq_files, seq), (par_files, par) = got[1], got[2]
    # byte for byte; a test's client and server file are one run (paired alike)
    assert par_files == seq_files and len(par_files) == len(RUNS) - len(seq.paired)
    assert par.paired == seq.paired and seq.paired
    assert par.imported == [
        str(tmp_path / "r2" / Path(p).relative_to(tmp_path / "r1")) for p in seq.imported
    ]
    assert par.bad == seq.bad and [Path(p).name for p, _ in par.bad] == ["broken.json"]
    assert seen == [(n, len(RUNS) + 1) for n in range(1, len(RUNS) + 2)]
