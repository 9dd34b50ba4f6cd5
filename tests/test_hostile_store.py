"""What is read back from a shared results directory cannot make netfleet read outside it, eat
its memory, or file a result under another campaign (issue 10; docs/security.md)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from netfleet.catalog import ingest
from netfleet.store.root import ResultsRoot
from tests.test_catalog import make_envelope, populate

DAY = "d=2026-11-22"


def _raw(env_json: dict[str, object]) -> bytes:
    return gzip.compress(json.dumps(env_json).encode())


def test_ingest_never_follows_a_symlink_out_of_the_root(tmp_path: Path) -> None:
    root = ResultsRoot(tmp_path / "raw")
    populate(root, ["tcp_1stream"])
    folder = root.path / DAY / "campaign=camp"
    secret = tmp_path / "secret"
    secret.write_bytes(b"root:$6$hash")  # stands in for /etc/shadow
    (folder / "shadow.json.gz").symlink_to(secret)
    elsewhere = ResultsRoot(tmp_path / "elsewhere")
    populate(elsewhere, ["udp_50m"])
    outside = next(elsewhere.files())
    (folder / "stolen.json.gz").symlink_to(outside)
    # a whole partition directory that links out
    (root.path / DAY / "campaign=linked").symlink_to(outside.parent)
    report = ingest(root, tmp_path / "cat")
    assert report.ingested == 1
    reasons = dict(report.bad)
    assert len(reasons) == 3, reasons
    assert all("symbolic link" in why for why in reasons.values())
    assert not any("root:" in why or "$6" in why or "b'" in why for why in reasons.values())


def test_an_oversized_raw_file_is_skipped_and_the_rest_ingested(tmp_path: Path) -> None:
    root = ResultsRoot(tmp_path / "raw")
    populate(root, ["tcp_1stream", "udp_50m"])
    bomb = root.path / DAY / "campaign=camp" / "bomb.json.gz"
    with gzip.open(bomb, "wb") as fh:  # ≈ 64 MB of zeros: a few dozen kB on disk
        fh.write(b'{"a": "' + b"0" * (64 * 1024 * 1024) + b'"}')
    assert bomb.stat().st_size < 1_000_000
    code = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
        "from netfleet.catalog import ingest\n"
        # the reader under a 1 GB address-space cap
        "r = ingest(sys.argv[1], sys.argv[2])\n"
        "print(r.ingested, len(r.bad), r.bad[0][1] if r.bad else '')\n"
    )
    env = {**os.environ, "NETFLEET_MAX_RAW_BYTES": str(16 * 1024 * 1024)}

    def run(code: str, catalog: str, path: str) -> str:
        out = subprocess.run(
            [sys.executable, "-c", code, str(root.path), str(tmp_path / catalog), path],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert out.returncode == 0, out.stderr
        return out.stdout

    ingested, bad, why = run(code, "cat", "python").strip().split(" ", 2)
    assert (ingested, bad) == ("2", "1")
    assert "inflates to more than 16,777,216 bytes" in why


def test_an_envelope_that_disagrees_with_its_directory_is_refused(tmp_path: Path) -> None:
    root = ResultsRoot(tmp_path / "raw")
    populate(root, ["tcp_1stream"])
    folder = root.path / DAY / "campaign=rbgood"
    folder.mkdir(parents=True)
    doc = json.loads(make_envelope("udp_50m", "evil").model_dump_json())
    (folder / "evil.json.gz").write_bytes(_raw({**doc, "campaign": "../../../etc"}))
    other = json.loads(make_envelope("udp_50m", "late", campaign="rbgood").model_dump_json())
    other["started_at"] = "2020-01-01T00:00:00+00:00"
    (folder / "late.json.gz").write_bytes(_raw(other))
    report = ingest(root, tmp_path / "cat")
    assert report.ingested == 1
    reasons = {Path(p).name: why for p, why in report.bad}
    assert "campaign=rbgood" in reasons["evil.json.gz"] and "refused" in reasons["evil.json.gz"]
    assert "d=2026-11-22" in reasons["late.json.gz"]


def test_a_regular_file_inside_the_root_is_still_read(tmp_path: Path) -> None:
    root = ResultsRoot(tmp_path / "raw")
    envs = populate(root, ["tcp_1stream"])
    path = next(root.files())
    assert ResultsRoot.read(path)["run_id"] in envs


def test_a_journal_that_is_a_symlink_is_never_written_or_read(tmp_path: Path) -> None:
    from netfleet.errors import StoreError
    from netfleet.runner.journal import Journal, journal_path, read_history

    victim = tmp_path / "passwd"
    victim.write_text("root:x:0:0\n")
    path = journal_path(tmp_path / "raw", "c")
    path.parent.mkdir(parents=True)
    path.symlink_to(victim)
    with pytest.raises(StoreError), Journal(path) as j:
        j.session("fresh", 1, 1)
    with pytest.raises(StoreError):
        read_history(path)
    assert victim.read_text() == "root:x:0:0\n"


def test_a_symlinked_journal_directory_is_refused(tmp_path: Path) -> None:
    from netfleet.errors import StoreError
    from netfleet.runner.journal import Journal, journal_path

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "raw" / ".netfleet").mkdir(parents=True)
    (tmp_path / "raw" / ".netfleet" / "journal").symlink_to(elsewhere)
    journal = Journal(journal_path(tmp_path / "raw", "c"))
    with pytest.raises(StoreError, match="symbolic link"), journal as j:
        j.session("fresh", 1, 1)
    assert not list(elsewhere.iterdir())


def test_malformed_journal_records_are_skipped(tmp_path: Path) -> None:
    from netfleet.runner.journal import journal_path, read_history

    path = journal_path(tmp_path, "c")
    path.parent.mkdir(parents=True)
    path.write_text('{"event": "process"}\n{"event": "process", "host": "a", "pid": "x"}\n[1]\n')
    assert not read_history(path).open_processes


def test_results_are_never_written_through_a_symlinked_partition(tmp_path: Path) -> None:
    from netfleet.errors import StoreError

    elsewhere = tmp_path / "etc"
    elsewhere.mkdir()
    root = ResultsRoot(tmp_path / "raw")
    (root.path / DAY).mkdir(parents=True)
    (root.path / DAY / "campaign=camp").symlink_to(elsewhere)
    with pytest.raises(StoreError, match="symbolic link"):
        root.write(make_envelope("tcp_1stream", "r1"))
    assert not list(elsewhere.iterdir())
