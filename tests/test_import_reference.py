"""Import by reference (issue 26): the manifest, one read per file, change detection by stat,
verify, provenance, S3 sources (moto's server as its own process) and --keep-copy — over the
captured iperf3/iperf2 outputs of tests/fixtures/import (scripts/capture_import_fixtures.py)."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from netfleet import api, aws
from netfleet.catalog.ingestion import ingest
from netfleet.catalog.manifest import current_generation, manifest_path, read_manifest
from netfleet.catalog.query import query
from netfleet.catalog.register import register
from netfleet.catalog.verify import verify
from netfleet.cli.boundary import guarded
from netfleet.cli.main import app
from netfleet.errors import ExitStatus, InputError
from netfleet.store import ResultsRoot
from netfleet.store.imports import import_files
from tests.motokit import moto_server

FIX = Path(__file__).parent / "fixtures" / "import"
RUNS = sorted(p for p in FIX.glob("*.json") if p.name != "MANIFEST.json")
IPERF2 = sorted(p for p in (FIX / "iperf2").glob("*.txt"))
#: public projects' outputs (SOURCES.md): iperf3 3.0.11-3.17.1, errors, -O, and intervals of
#: 2.001 s holding 1 s of bytes (flagged)
PUBLIC = sorted((FIX.parent / "public").glob("*.json"))


def cli(*args: str) -> int:
    return guarded(lambda: app(list(args), standalone_mode=False, prog_name="netfleet"))


def _folder(tmp_path: Path, files: list[Path], gz: bool = False) -> Path:
    """The files in a folder, modified a minute ago (not "racy": see the test of those)."""
    src = tmp_path / "src"
    src.mkdir()
    for f in files:
        if gz:
            (src / (f.name + ".gz")).write_bytes(gzip.compress(f.read_bytes()))
        else:
            shutil.copy(f, src / f.name)
    _age(src)
    return src


def _age(folder: Path, seconds: int = 60) -> None:
    then = time.time_ns() - seconds * 10**9
    for p in folder.iterdir():
        if p.is_file() and not p.is_symlink():
            os.utime(p, ns=(then, then))


def _rows(catalog: Path, sql: str) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in query(catalog, sql).rows]


def _states(catalog: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for row in read_manifest(catalog).to_pylist():
        out.setdefault(Path(row["source"]).name, []).append(row["state"])
    return out


RUN_COLUMNS = (
    "run_id, campaign, status, reason, direction, subject, started_at, ended_at, duration_s,"
    " engine, engine_version, client_address, server_address, protocol, parallel, reverse,"
    " bidir, duration, omit, interval, labels"
)


def test_rows_by_reference_are_the_envelope_path_rows_without_streams(tmp_path: Path) -> None:
    """Every captured output (iperf3 3.9-3.22 both sides, --json-stream, iperf 2 text and CSV):
    the runs, ends and interval-sum rows an import by reference writes are those import +
    ingest write from envelopes (same run ids: the same bytes, campaign and labels); only the
    per-stream rows are left to the streams (lazy)."""
    files = [*RUNS, *IPERF2, *PUBLIC]
    src = _folder(tmp_path, files)
    root = ResultsRoot(tmp_path / "raw")
    # an import by reference keeps a run per file: compared with the envelope path unpaired
    assert import_files([str(src)], root, labels=["cloud=lab"], pair=False).bad == []
    ingest(root, tmp_path / "cat_env")
    report = register([str(src)], tmp_path / "cat_ref", labels=["cloud=lab"])
    assert report.bad == [] and len(report.registered) == len(files)
    for sql in (
        f"SELECT {RUN_COLUMNS} FROM runs ORDER BY run_id",
        "SELECT run_id, json_extract(notes, '$.imported.flags') FROM runs ORDER BY run_id",
        "SELECT * FROM ends ORDER BY run_id, side",
        "SELECT * FROM intervals_stored WHERE kind = 'sum' ORDER BY run_id, side, idx, role",
    ):
        want = _rows(tmp_path / "cat_env", sql)
        assert want and _rows(tmp_path / "cat_ref", sql) == want, sql
    streams = "SELECT count(*) FROM intervals WHERE kind = 'stream'"
    stored = query(tmp_path / "cat_ref", streams, streams=False).rows  # the parts: sums only
    assert stored == [[0]]
    # a query that names them gets them, made from the files (netfleet.catalog.lazystreams)
    assert _rows(tmp_path / "cat_ref", streams) == _rows(tmp_path / "cat_env", streams) != [(0,)]
    flagged = "SELECT count(*) FROM runs WHERE json_array_length(notes, '$.imported.flags') > 0"
    assert _rows(tmp_path / "cat_ref", flagged)[0][0] >= 2  # the 2.001 s intervals


def test_a_typed_read_of_whole_numbers_flags_and_rows_as_the_full_read_does() -> None:
    """iperf3 writes its times as floats; a file that writes whole numbers (``"start": 0``)
    is read typed — its times as floats, its rate as written — and gets the same interval
    flags (a seconds mismatch, a gap, a rate off bytes) and the same rows as the full read."""
    from netfleet.iperf3json import Typed, interval_columns
    from netfleet.store.import_iperf3 import check_intervals, parse

    sums = [(0, 1, 1, 125, 1000), (1, 2, 1, 125, 1000), (3, 4, 2, 125, 1000), (4, 5, 1, 250, 1000)]
    intervals = [{"streams": [{"socket": 5, "start": a, "end": b, "bytes": n}],
                  "sum": {"start": a, "end": b, "seconds": c, "bytes": n, "bits_per_second": r,
                          "omitted": False, "sender": True}} for a, b, c, n, r in sums]  # fmt: skip
    doc = {"start": {"timestamp": {"timesecs": 1}}, "intervals": intervals, "end": {}}
    data = json.dumps(doc).encode()
    typed, full = parse(data, streams=False), parse(data)
    assert type(typed["intervals"]) is Typed and type(full["intervals"]) is list
    fields = typed["intervals"].fields
    assert [type(v) for v in fields["start"] + fields["seconds"]] == [float] * 8
    assert fields["bits_per_second"] == [1000] * 4 and type(fields["bits_per_second"][0]) is int
    flags = check_intervals(typed)
    assert flags == check_intervals(full)
    assert {(f["interval"], f["field"]) for f in flags} == {
        (2, "seconds"), (2, "start"), (2, "bits_per_second"), (3, "bits_per_second")}  # fmt: skip
    rows = interval_columns("r", "client", typed, False).rows()
    want = interval_columns("r", "client", full, False).where("kind", "sum").rows()
    assert rows == want and [type(row["start"]) for row in rows] == [float] * 4


def test_a_script_s_keys_become_labels_and_the_manifest_keeps_them(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    doc = json.loads(RUNS[0].read_bytes())
    (src / "a.json").write_text(json.dumps({**doc, "instanceType": "t2.nano", "region": "x"}))
    (src / "b.json").write_text(json.dumps({**doc, "instanceType": "m5.large", "host": "h1"}))
    register([str(src)], tmp_path / "cat")
    rows = {Path(r["source"]).name: r for r in read_manifest(tmp_path / "cat").to_pylist()}
    assert json.loads(rows["a.json"]["labels"]) == {"instance_type": "t2.nano", "region": "x"}
    assert json.loads(rows["b.json"]["file_keys"]) == {"instanceType": "m5.large", "host": "h1"}
    labels = _rows(tmp_path / "cat", "SELECT labels FROM runs ORDER BY labels")
    assert [json.loads(x)["instance_type"] for (x,) in labels] == ["m5.large", "t2.nano"]


def test_every_number_traces_to_bytes_that_verify(tmp_path: Path) -> None:
    src = _folder(tmp_path, RUNS[:4], gz=True)
    cat = tmp_path / "cat"
    register([str(src)], cat)
    manifest = {r["run_id"]: r for r in read_manifest(cat).to_pylist()}
    for run_id, rate in _rows(cat, "SELECT run_id, bits_per_second FROM intervals LIMIT 20"):
        row = manifest[run_id]  # sum row → run → manifest row → the bytes
        data = Path(row["source"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == row["file_id"]
        assert (len(data), os.stat(row["source"]).st_mtime_ns) == (row["size"], row["mtime_ns"])
        assert rate is None or rate >= 0
    runs = _rows(cat, "SELECT run_id, json_extract_string(notes, '$.imported.sha256') FROM runs")
    assert all(manifest[r]["file_id"] == sha for r, sha in runs)
    assert verify(cat).ok == 4


def test_import_again_opens_only_what_changed_and_reports_changed_corrupt_deleted(
    tmp_path: Path,
) -> None:
    src = _folder(tmp_path, RUNS[:5], gz=True)
    cat = tmp_path / "cat"
    first = register([str(src)], cat, pattern="{name}.json.gz")
    assert len(first.registered) == 5 and first.generation == 1
    stamp = os.stat(manifest_path(cat)).st_mtime_ns

    again = register([str(src)], cat, pattern="{name}.json.gz")
    assert (again.unchanged, again.registered, again.generation) == (5, [], 1)
    assert os.stat(manifest_path(cat)).st_mtime_ns == stamp  # nothing written

    names = sorted(src.iterdir())
    changed, corrupt, deleted, touched = names[0], names[1], names[2], names[3]
    old_run = _run_of(cat, changed)
    doc = json.loads(gzip.decompress(changed.read_bytes()))
    doc["start"]["test_start"]["duration"] = 9  # other bytes: another run
    changed.write_bytes(gzip.compress(json.dumps(doc).encode()))
    corrupt.write_bytes(corrupt.read_bytes()[:300])  # a truncated gzip
    shutil.copy(deleted, tmp_path / "kept-deleted")
    deleted.unlink()
    os.utime(touched, ns=(1, 2))  # the same bytes, another mtime

    report = register([str(src)], cat, pattern="{name}.json.gz")
    assert sorted(report.changed) == sorted(str(p) for p in (changed, corrupt))
    assert [Path(p) for p, _ in report.bad] == [corrupt]
    assert "gzip" in report.bad[0][1]
    assert report.missing == [str(deleted)] and report.touched == [str(touched)]
    assert report.unchanged == 1 and report.registered == [str(changed)]
    assert report.generation == 2 == current_generation(cat)
    said = _details(report)  # what the import prints of each: a refused change is no new run
    assert f"changed {changed}: a new run; the old one retired" in said
    assert f"changed {corrupt}: refused now (below); the old one retired" in said
    assert f"not imported {corrupt}: " in said and f"missing {deleted}: " in said
    states = _states(cat)
    assert states[changed.name] == ["retired", "ok"]
    assert states[corrupt.name] == ["retired", "bad"]
    assert states[deleted.name] == ["missing"] and states[touched.name] == ["ok"]
    runs = {r for (r,) in _rows(cat, "SELECT run_id FROM runs")}
    assert old_run in report.retired and old_run not in runs
    assert _run_of(cat, changed) in runs and len(runs) == 4  # the corrupt file's old run retired
    assert not _rows(cat, f"SELECT 1 FROM intervals_stored WHERE run_id = '{old_run}'")

    # the deleted file back as it was (a file system mounted again): read again, ok again
    deleted.write_bytes(b"placeholder")
    deleted.unlink()
    shutil.copy(tmp_path / "kept-deleted", deleted)
    os.utime(deleted, ns=(1, 2))
    back = register([str(src)], cat, pattern="{name}.json.gz")
    assert back.touched == [str(deleted)] and _states(cat)[deleted.name] == ["ok"]

    # the CLI says so, exit 3 (a file refused, the others imported)
    corrupt.write_bytes(b"\x1f\x8b damaged again")
    assert cli("import", str(src), "--catalog", str(cat), "--pattern", "{name}.json.gz") == 3


def _details(report: Any) -> str:
    from io import StringIO

    from rich.console import Console

    from netfleet.cli.registered import details

    out = Console(file=StringIO(), width=400, color_system=None)
    details(report, out)
    return str(out.file.getvalue())


def _run_of(cat: Path, path: Path) -> str:
    rows = [
        r for r in read_manifest(cat).to_pylist() if r["source"] == str(path) and r["state"] == "ok"
    ]
    return str(rows[-1]["run_id"])


def test_verify_finds_changed_corrupt_and_missing_files(tmp_path: Path) -> None:
    src = _folder(tmp_path, RUNS[:4])
    cat = tmp_path / "cat"
    register([str(src)], cat)
    a, b, c, _ = sorted(src.iterdir())
    a.write_bytes(a.read_bytes() + b" ")  # rewritten
    st = os.stat(b)
    data = bytearray(b.read_bytes())
    data[10] ^= 1
    b.write_bytes(bytes(data))  # other bytes, the same size ...
    os.utime(b, ns=(st.st_atime_ns, st.st_mtime_ns))  # ... and times: nobody wrote it
    c.unlink()
    report = api.verify(catalog=str(cat))
    assert report.changed == [str(a)] and [p for p, _ in report.corrupt] == [str(b)]
    assert report.missing == [str(c)] and report.ok == 1
    assert cli("verify", "--catalog", str(cat)) == ExitStatus.RUNS_FAILED


def test_verify_prune_forgets_files_gone_and_a_refused_one_gone_is_no_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 36: verify stayed at exit 3 forever once a file was deleted — even a refused one
    that never held a run — and its fix ("import the sources again") changed nothing. A refused
    file gone is listed, not a problem; ``--prune`` (asked, ``--yes``, ``--dry-run``) forgets
    the missing ones, their runs leave the catalog, and verify is green again."""
    src = _folder(tmp_path, RUNS[:3])
    (src / "zero.json").write_bytes(b"")  # refused: no run
    cat = tmp_path / "cat"
    register([str(src)], cat)
    (src / "zero.json").unlink()
    register([str(src)], cat)  # the import marks it missing
    assert "missing" in _states(cat)["zero.json"]
    report = api.verify(catalog=str(cat))
    assert report.gone_refused == [str(src / "zero.json")] and report.problems == 0
    assert cli("verify", "--catalog", str(cat)) == 0

    a = sorted(src.glob("*.json"))[0]
    gone_run = _run_of(cat, a)
    a.unlink()
    runs = {r[0] for r in query(cat, "SELECT run_id FROM runs").rows}
    assert gone_run in runs and len(runs) == 3
    capsys.readouterr()
    assert cli("verify", "--catalog", str(cat)) == ExitStatus.RUNS_FAILED
    said = " ".join(capsys.readouterr().err.split())
    assert f"netfleet verify --prune --catalog {cat}" in said
    # without --yes and no terminal to ask: refused, nothing changed
    with pytest.raises(InputError, match="--yes"):
        api.verify(catalog=str(cat), prune=True)
    declined = api.verify(catalog=str(cat), prune=True, ask=lambda question: False)
    assert declined.pruned == [] and declined.missing == [str(a)]
    assert cli("verify", "--catalog", str(cat), "--prune", "--dry-run") == ExitStatus.RUNS_FAILED
    said = " ".join(capsys.readouterr().out.split())
    assert "would forget 2 file(s) and take 1 run(s) out" in said
    assert {r[0] for r in query(cat, "SELECT run_id FROM runs").rows} == runs
    assert cli("verify", "--catalog", str(cat), "--prune", "--yes") == 0
    assert {r[0] for r in query(cat, "SELECT run_id FROM runs").rows} == runs - {gone_run}
    assert _states(cat)[a.name][-1] == "retired" and _states(cat)["zero.json"][-1] == "retired"
    again = api.verify(catalog=str(cat))
    assert again.problems == 0 and again.prunable == [] and again.ok == 2
    a.write_bytes(RUNS[0].read_bytes())  # back at its source: a new run when imported again
    assert len(register([str(src)], cat).registered) == 1


def test_a_bad_file_never_stops_the_others_and_links_are_refused(tmp_path: Path) -> None:
    src = _folder(tmp_path, RUNS[:2])
    (src / "zero.json").write_bytes(b"")
    (src / "nan.json").write_text('{"start": {}, "intervals": [{"sum": {"bits_per_second": NaN')
    (src / "link.json").symlink_to(RUNS[2])
    os.mkfifo(src / "fifo.json")
    report = register([str(src)], tmp_path / "cat")
    assert len(report.registered) == 2
    why = {Path(p).name: r for p, r in report.bad}
    assert set(why) == {"zero.json", "nan.json", "link.json", "fifo.json"}
    assert "symbolic link" in why["link.json"] and "FIFO" in why["fifo.json"]
    assert "truncated" in why["nan.json"] and "empty" in why["zero.json"]
    assert _states(tmp_path / "cat")["link.json"] == ["bad"]


def test_a_folder_is_listed_in_path_order_and_a_link_loop_walked_once(tmp_path: Path) -> None:
    """The listing walks each folder's entries sorted (no sort after): the order of the paths
    compared component by component; with --follow-links, a link back up is not walked again."""
    from netfleet.store.sources import source_files

    for rel in ("b.json", "a/z.json", "a b/c.json", "a.json", "a/y/x.csv", "skip.bin"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("{}")
    (tmp_path / "a" / "up").symlink_to(tmp_path)
    got = [Path(p).relative_to(tmp_path).as_posix() for p in source_files(str(tmp_path))]
    assert got == ["a/up", "a/y/x.csv", "a/z.json", "a b/c.json", "a.json", "b.json"]
    assert got == sorted(got, key=lambda p: p.split("/"))
    followed = [Path(p).relative_to(tmp_path).as_posix() for p in source_files(str(tmp_path), True)]
    assert followed == [p for p in got if p != "a/up"]


def test_many_files_are_read_in_worker_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from netfleet.catalog import register as register_module

    monkeypatch.setattr(register_module, "PARALLEL_MIN", 64)
    src = tmp_path / "src"
    src.mkdir()
    body = RUNS[0].read_bytes()
    for n in range(70):  # other bytes each (trailing spaces): 70 runs
        (src / f"f{n:02d}.json").write_bytes(body + b" " * n)
    report = register([str(src)], tmp_path / "cat", workers=2)
    assert len(report.registered) == 70 and report.bad == []
    assert _rows(tmp_path / "cat", "SELECT count(*) FROM runs") == [(70,)]
    # the tables' trip back from the workers (Arrow IPC) keeps every row as read here
    register([str(src)], tmp_path / "here", workers=1)
    for sql in (
        "SELECT * FROM runs ORDER BY run_id",
        "SELECT * FROM ends ORDER BY run_id, side",
        "SELECT * FROM intervals_stored ORDER BY run_id, side, idx, role",
    ):
        want = _rows(tmp_path / "here", sql)
        assert want and _rows(tmp_path / "cat", sql) == want, sql


def test_keep_copy_keeps_the_bytes_as_they_are(tmp_path: Path) -> None:
    src = _folder(tmp_path, RUNS[:2], gz=True)
    kept = tmp_path / "kept"
    register([str(src)], tmp_path / "cat", keep_copy=str(kept))
    for row in read_manifest(tmp_path / "cat").to_pylist():
        copy = Path(row["kept"])
        assert copy.parent == kept and copy.name.startswith(row["file_id"])
        assert copy.read_bytes() == Path(row["source"]).read_bytes()  # no re-gzip, no base64
        assert os.stat(copy).st_ino == row["inode"]  # same file system: a hardlink
    Path(row["source"]).unlink()
    report = verify(tmp_path / "cat")
    assert report.missing == [row["source"]] == report.kept_ok


def test_a_keep_copy_that_cannot_be_written_is_refused_before_anything(tmp_path: Path) -> None:
    """A --keep-copy destination that is a file is one clear error (exit 2) before any file is
    read: no catalog, no manifest (it was an internal error half-way through)."""
    src = _folder(tmp_path, RUNS[:2], gz=True)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(InputError, match=r"--keep-copy .*a-file: cannot keep files there"):
        register([str(src)], tmp_path / "cat", keep_copy=str(blocker))
    assert not (tmp_path / "cat").exists()


def test_the_import_command_calls_one_function_per_kind_of_import(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``netfleet import`` without --catalog makes envelopes (``api.import_files``), with it
    registers by reference (``api.register``); --keep-copy without --catalog is refused before
    anything is written."""
    src = _folder(tmp_path, RUNS[:4:2])  # two tests' client files (a client and its server pair)
    results, cat = tmp_path / "results", tmp_path / "cat"
    refused = cli("import", str(src), "--results", str(results), "--keep-copy", str(tmp_path))
    assert refused == ExitStatus.INVALID_INPUT
    assert "--keep-copy is for an import by reference" in capsys.readouterr().err
    assert not results.exists()
    assert cli("import", str(src), "--results", str(results)) == 0
    assert capsys.readouterr().out.startswith("imported 2 file(s)")
    assert len(list(results.rglob("*.json.gz"))) == 2 and not cat.exists()
    assert cli("import", str(src), "--catalog", str(cat)) == 0
    assert capsys.readouterr().out.startswith("registered 2 file(s)")
    assert len(read_manifest(cat).to_pylist()) == 2


def test_s3_sources_listed_for_changes_read_once_and_copied_server_side(
    tmp_path: Path,
) -> None:
    with moto_server():
        s3 = aws.client("s3")
        s3.create_bucket(Bucket="seeds")
        for f in RUNS[:3]:
            s3.put_object(Bucket="seeds", Key=f"d=2018-04-10/{f.name}.gz",
                          Body=gzip.compress(f.read_bytes()))  # fmt: skip
        cat = tmp_path / "cat"
        first = register(["s3://seeds/d=2018-04-10/"], cat, keep_copy="s3://seeds/kept")
        assert len(first.registered) == 3 and first.bad == []
        rows = read_manifest(cat).to_pylist()
        assert all(r["etag"] and r["mtime_ns"] is None and r["inode"] is None for r in rows)
        kept = s3.list_objects_v2(Bucket="seeds", Prefix="kept/")["Contents"]
        assert len(kept) == 3
        assert register(["s3://seeds/d=2018-04-10/"], cat).unchanged == 3
        key = f"d=2018-04-10/{RUNS[0].name}.gz"
        s3.put_object(Bucket="seeds", Key=key, Body=gzip.compress(RUNS[0].read_bytes() + b" "))
        s3.delete_object(Bucket="seeds", Key=f"d=2018-04-10/{RUNS[1].name}.gz")
        report = register(["s3://seeds/d=2018-04-10/"], cat)
        assert report.changed == [f"s3://seeds/{key}"] and len(report.missing) == 1
        assert report.unchanged == 1
        assert verify(cat).ok == 2
        assert _rows(cat, "SELECT count(*) FROM runs") == [(3,)]


def test_the_cheat_sheet_cache_follows_the_manifest_generation(tmp_path: Path) -> None:
    src = _folder(tmp_path, RUNS[:2])
    cat = tmp_path / "cat"
    register([str(src)], cat)
    first = api.cheatsheet(catalog=str(cat), by="engine", side="sender")
    extra = tmp_path / "more"
    extra.mkdir()
    shutil.copy(RUNS[4], extra / RUNS[4].name)
    register([str(extra)], cat)
    second = api.cheatsheet(catalog=str(cat), by="engine", side="sender")
    assert first.rows != second.rows  # not the cached answer of generation 1


def test_the_workers_start_before_this_process_loads_the_readers(tmp_path: Path) -> None:
    """The import's fork server starts loading the readers before this process loads its own
    copy (a fresh interpreter: the pool is made while ``netfleet.catalog.reader`` is not
    imported), so the two loads run side by side; the files are read by the workers."""
    import subprocess
    import sys

    src = tmp_path / "src"
    src.mkdir()
    body = RUNS[0].read_bytes()
    for n in range(4):  # other bytes each (trailing spaces): 4 runs
        (src / f"f{n}.json").write_bytes(body + b" " * n)
    code = f"""
import sys
import netfleet.workers
from netfleet.catalog import register
made = netfleet.workers.process_pool
def process_pool(*args, **kwargs):
    print("reader loaded" if "netfleet.catalog.reader" in sys.modules else "reader not loaded")
    return made(*args, **kwargs)
netfleet.workers.process_pool = process_pool
register.PARALLEL_MIN = 2
report = register.register([{str(src)!r}], {str(tmp_path / "cat")!r}, workers=2)
print(len(report.registered), report.bad)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == ["reader not loaded", "4 []"]


def test_an_unchanged_catalog_answers_without_the_heavy_libraries(tmp_path: Path) -> None:
    """The no-op import, the cached cheat sheet and verify, each in a fresh interpreter (the
    CLI's own commands): none loads DuckDB, pyarrow, pydantic, the engines or the readers."""
    import subprocess
    import sys

    src = _folder(tmp_path, RUNS[:3])
    cat = tmp_path / "cat"
    register([str(src)], cat)
    api.cheatsheet(catalog=str(cat), by="engine", side="sender")  # asked once: cached
    heavy = ("duckdb", "pyarrow", "pydantic", "netfleet.engines", "msgspec", "isal")
    for argv in (
        ["import", str(src), "--catalog", str(cat)],
        ["cheatsheet", "--catalog", str(cat), "--by", "engine", "--side", "sender"],
        ["verify", "--catalog", str(cat)],
    ):
        code = (
            "import sys\nfrom netfleet.cli.main import main\n"
            f"sys.argv = ['netfleet', *{argv!r}]\n"
            "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
            "print('\\n'.join(sys.modules), file=sys.stderr)"
        )
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-2000:]
        loaded = set(done.stderr.splitlines())
        assert not {m for m in loaded if m.startswith(heavy)}, argv


def test_a_batch_of_sums_is_one_row_group_and_any_other_kind_is_split() -> None:
    """A batch whose interval rows are all sums (an import by reference's) is one row group;
    a stream row among them gets the split's two groups, sums first."""
    import pyarrow as pa

    from netfleet.catalog.schemas import SCHEMAS
    from netfleet.catalog.writer import Batch

    def batch(kinds: list[str | None]) -> Any:
        made = Batch()
        rows = {name: [None] * len(kinds) for name in SCHEMAS["intervals"].names}
        rows.update(run_id=["r"] * len(kinds), kind=kinds, idx=list(range(len(kinds))))
        made.parts["intervals"].append(
            pa.RecordBatch.from_pydict(rows, schema=SCHEMAS["intervals"])
        )
        return made.tables()["intervals"]

    (only,) = batch(["sum", "sum", "sum"])
    assert only.column("idx").to_pylist() == [0, 1, 2]
    sums, streams = batch(["sum", "stream", "sum"])
    assert sums.column("idx").to_pylist() == [0, 2] and streams.column("idx").to_pylist() == [1]
    assert [g.num_rows for g in batch(["sum", None])] == [1, 1]


def test_a_batch_makes_each_text_column_once_per_run_as_a_conversion_per_row_would() -> None:
    """The batch makes a text column from each run's one value and its row count where every
    row of the run holds it (run_id, side …): the same record batch, byte for byte, as Arrow's
    conversion of every row — a run whose rows differ (a bidir run's roles), text beyond
    ASCII, a NULL among the values — and a value that is not text refused as before."""
    import pyarrow as pa

    from netfleet.catalog.build import RunRows
    from netfleet.catalog.schemas import SCHEMAS
    from netfleet.catalog.writer import Batch
    from netfleet.values import Columns

    def run(run_id: str, role: list[Any], side: Any = "client") -> RunRows:
        n = len(role)
        lists = {"run_id": [run_id] * n, "side": [side] * n, "role": role,
                 "kind": ["sum"] * n, "idx": list(range(n)), "bytes": [7] * n}  # fmt: skip
        return RunRows({"run_id": run_id}, Columns(lists))

    cases = [
        [run("a", ["sender"] * 3), run("b", ["sender", "receiver"]), run("ç-ü", ["receiver"])],
        [run("a", ["sender"]), run("b", ["sender", None]), run("c", ["x"], side=None)],
    ]
    for runs in cases:
        made = Batch()
        for rows in runs:
            made.add(rows)
        assert made.convert() == []
        flat = {name: [v for rows in runs for v in rows.intervals.column(name)]
                for name in SCHEMAS["intervals"].names}  # fmt: skip
        expected = pa.RecordBatch.from_pydict(flat, schema=SCHEMAS["intervals"])
        (got,) = made.parts["intervals"]
        assert got.equals(expected)
        assert got.serialize().to_pybytes() == expected.serialize().to_pybytes()
    made = Batch()
    made.add(run("a", ["sender"]))
    made.add(run("b", [3, 3]))  # (a text column's value that is not text)
    ((refused, why),) = made.convert()
    assert refused.run_id == "b" and "does not fit" in why
    assert made.parts["intervals"][-1].column("run_id").to_pylist() == ["a"]


def test_a_retirement_cut_by_a_crash_is_finished_by_the_next_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from netfleet.catalog import retire

    src = _folder(tmp_path, RUNS[:3])
    cat = tmp_path / "cat"
    register([str(src)], cat)
    changed = sorted(src.iterdir())[0]
    old_run = _run_of(cat, changed)
    changed.write_bytes(changed.read_bytes() + b" ")

    def crash(catalog: Path, batch_id: str) -> None:
        raise OSError("power cut")

    monkeypatch.setattr(retire, "delete_batch", crash)
    with pytest.raises(OSError, match="power cut"):
        register([str(src)], cat)  # the new batch committed, the old one still there
    assert (cat / retire.RETIRE_JOURNAL).exists()
    monkeypatch.undo()
    report = register([str(src)], cat)
    assert not (cat / retire.RETIRE_JOURNAL).exists()
    ids = [r for (r,) in _rows(cat, "SELECT run_id FROM runs")]
    assert len(ids) == len(set(ids)) == 3 and old_run not in ids  # no run twice, none lost
    assert report.changed == [str(changed)]


def test_one_file_under_two_names_is_one_run(tmp_path: Path) -> None:
    src = _folder(tmp_path, RUNS[:2])
    shutil.copy(RUNS[0], src / "again.json")  # the same bytes in the same task
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(RUNS[1], other / "copy.json")
    cat = tmp_path / "cat"
    report = register([str(src), str(other)], cat)
    assert len(report.registered) == 2 and len(report.duplicates) == 2
    assert _rows(cat, "SELECT count(*), count(DISTINCT run_id) FROM runs") == [(2, 2)]
    sums = "SELECT count(*) FROM (SELECT DISTINCT * FROM intervals_stored)"
    assert _rows(cat, sums) == _rows(cat, "SELECT count(*) FROM intervals_stored")
    later = register([str(tmp_path / "src" / "again.json")], tmp_path / "cat2")
    assert len(later.registered) == 1
    assert register([str(RUNS[0])], cat).already  # its run is in the catalog already


def test_a_file_rewritten_in_its_timestamp_tick_is_hashed_again(tmp_path: Path) -> None:
    """A file modified just before it was read ("racy", git's word) is hashed again by the
    next import even when its stat is the same: a write right after the read, within the
    file system's timestamp tick, would not show in the stat."""
    src = tmp_path / "src"
    src.mkdir()
    body = RUNS[0].read_bytes()
    path = src / "fresh.json"
    path.write_bytes(body)  # modified now: racy when read now
    cat = tmp_path / "cat"
    register([str(src)], cat)
    st = os.stat(path)
    path.write_bytes(body.replace(b'"version"', b'"versioN"', 1))  # same size ...
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # ... same mtime, same inode
    report = register([str(src)], cat)
    assert report.changed == [str(path)] and report.unchanged == 0
    again = register([str(src)], cat)  # read again (racy still), found as it was
    assert again.unchanged == 1 and again.changed == again.touched == []
    _age(src)  # long since read, not modified: the stat decides again
    register([str(src)], cat)
    assert register([str(src)], cat).unchanged == 1


def test_the_envelope_made_without_the_model_is_the_model_s() -> None:
    """Import by reference reads an iperf3 document's envelope as plain JSON values, without
    validating the model: over every captured and public output (both sides, with labels from
    the path and the file), it is the model's, field by field; a host address that is not text
    goes through the model, which refuses it as the import does."""
    from netfleet.catalog.reader import _direct_envelope, _plain_envelope
    from netfleet.engines.params.base import spec_params
    from netfleet.store.import_base import imported_envelope
    from netfleet.store.import_iperf3 import checked_shape, imported_params, iperf3_fields, typed

    docs = [typed(p.read_bytes(), streams=False) for p in [*RUNS, *PUBLIC]]
    assert sum(d is not None for d in docs) >= len(RUNS)
    for path, doc in zip([*RUNS, *PUBLIC], docs, strict=True):
        if doc is None:  # --json-stream: the import's own reader
            continue
        run_id, fields = iperf3_fields(
            path, b"{}", checked_shape(doc), labels={"cloud": "lab"}, found=["cloud"],
            epoch_label=None, side="auto", mtime=1.5e9, digest="0" * 64, keep_bytes=False,
        )  # fmt: skip
        want = _plain_envelope(imported_envelope(run_id, "camp", **fields))
        assert _direct_envelope(run_id, "camp", fields) == want, path.name
        test = (doc.get("start") or {}).get("test_start") or {}
        kept = {k: test[k] for k in ("protocol", "num_streams", "duration", "omit") if k in test}
        if test.get("target_bitrate"):  # -b: the spec's bitrate
            kept["bitrate"] = f"{test['target_bitrate']}bit"
        assert fields["params"] == spec_params(kept), path.name  # the spec's vocabulary
    for value in (None, 0, 4, "x"):  # null values: dropped where the spec's renaming drops them
        test = {"protocol": value, "num_streams": value, "duration": value, "omit": value}
        assert imported_params(test) == spec_params(test)
    odd = json.loads(RUNS[0].read_bytes())
    odd["start"]["connecting_to"]["host"] = 1234
    _, fields = iperf3_fields(
        RUNS[0], b"{}", checked_shape(odd), labels={}, found=[], epoch_label=None,
        side="auto", mtime=None, digest="0" * 64, keep_bytes=False,
    )  # fmt: skip
    with pytest.raises(ValueError, match="address"):
        _direct_envelope("import-x", "camp", fields)


def test_rows_written_in_several_batches_are_those_of_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rows wait in the importing process a batch at a time (``BATCH_RUNS``): written in
    batches of a task or two, a run repeated across batches is kept once, and every table is
    what one batch writes."""
    from netfleet.catalog import reader
    from netfleet.catalog import register as register_module

    files = [p for p in RUNS if "stream" not in p.name][:7]
    src = _folder(tmp_path, files)
    shutil.copy(files[0], src / "zz-again.json")  # the first file's run, in the last task
    _age(src)
    one = register([str(src)], tmp_path / "one")
    monkeypatch.setattr(reader, "TASK_FILES", 2)
    monkeypatch.setattr(register_module, "BATCH_RUNS", 2)
    many = register([str(src)], tmp_path / "many")
    assert len(many.registered) == len(files) and len(many.duplicates) == 1
    assert (many.registered, many.duplicates) == (one.registered, one.duplicates)
    parts = list((tmp_path / "many" / "runs").glob("part-*.parquet"))
    assert len(parts) >= 3 > len(list((tmp_path / "one" / "runs").glob("part-*.parquet")))
    for sql in (
        "SELECT * FROM runs ORDER BY run_id",
        "SELECT * FROM ends ORDER BY run_id, side",
        "SELECT * FROM intervals_stored ORDER BY run_id, side, idx, role",
    ):
        assert _rows(tmp_path / "many", sql) == _rows(tmp_path / "one", sql), sql


def test_the_rows_an_interrupted_import_committed_are_recovered_not_called_duplicates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An import stopped after a batch was committed but before its manifest was written (Ctrl-C
    here; a killed worker alike) left runs no manifest row holds. The same import again writes
    their manifest rows and reports the files ``recovered`` — one count, not a "duplicate" line
    per file as if another file had brought their runs — and a file whose run another file's
    row holds is still ``already`` in the catalog."""
    from netfleet.catalog import reader
    from netfleet.catalog import register as register_module

    src = _folder(tmp_path, RUNS)
    cat = tmp_path / "cat"
    monkeypatch.setattr(register_module, "BATCH_RUNS", 3)  # a batch committed every 3 runs
    monkeypatch.setattr(reader, "TASK_FILES", 1)  # (settled a file at a time)

    def stop(done: int, total: int) -> None:
        if done == 4:  # the first batch (3 runs) is committed, the fourth file's run is not
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        register([str(src)], cat, progress=stop)
    assert _rows(cat, "SELECT count(*) FROM runs") == [(3,)] and read_manifest(cat).num_rows == 0
    monkeypatch.undo()
    assert cli("import", str(src), "--catalog", str(cat)) == 0
    out = capsys.readouterr().out
    assert f"registered {len(RUNS) - 3} file(s), 3 recovered (committed by" in out, out
    assert "duplicate" not in out, out
    rows = read_manifest(cat).to_pylist()
    assert len(rows) == len(RUNS) and {row["state"] for row in rows} == {"ok"}
    assert _rows(cat, "SELECT count(*), count(DISTINCT run_id) FROM runs") == [(len(RUNS),) * 2]
    again = tmp_path / "again"
    again.mkdir()
    shutil.copy(RUNS[0], again / "copy.json")  # the same bytes under another name
    later = register([str(again)], cat)
    assert [file for file, _ in later.already] == [str(again / "copy.json")]
    assert later.recovered == []
