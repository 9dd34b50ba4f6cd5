"""The raw store: Hive-style paths, atomic writes, version checks."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from netfleet.errors import FormatError, StoreError
from netfleet.store import Envelope, HostRecord, ResultsRoot, open_root
from netfleet.store.envelope import EngineRecord


def envelope(**over: object) -> Envelope:
    base: dict[str, object] = dict(
        netfleet_version="0",
        run_id="t-abc-r0-20260101T000000000000Z",
        run_key="t-abc-r0",
        campaign="c",
        test="t",
        repeat=0,
        sequence=0,
        status="ok",
        direction="out",
        subject="client",
        params={"duration": 1},
        labels={"instance_type": "x"},
        client=HostRecord(name="a", kind="local", address="127.0.0.1"),
        server=HostRecord(name="b", kind="local", address="127.0.0.1"),
        engine=EngineRecord(name="iperf3", version="3.12", argv=["iperf3"]),
        started_at="2026-01-01T00:00:00.000000Z",
        ended_at="2026-01-01T00:00:01.000000Z",
        duration_s=1.0,
        result={"intervals": [], "end": {}},
    )
    base.update(over)
    return Envelope.model_validate(base)


def test_write_read_round_trip(tmp_path: Path) -> None:
    root = ResultsRoot(tmp_path)
    path = root.write(envelope())
    assert (
        path.relative_to(tmp_path).as_posix()
        == "d=2026-01-01/campaign=c/t-abc-r0-20260101T000000000000Z.json.gz"
    )
    doc = root.read(path)
    assert doc["result"] == {"intervals": [], "end": {}}
    assert doc["netfleet_format"] == 1
    assert list(root.files()) == [path]


def test_unsafe_names_never_become_paths(tmp_path: Path) -> None:
    with pytest.raises(StoreError):
        ResultsRoot(tmp_path).write(envelope(campaign="../../etc"))


def test_newer_format_is_refused_with_a_fix(tmp_path: Path) -> None:
    p = tmp_path / "d=2026-01-01" / "campaign=c" / "x.json.gz"
    p.parent.mkdir(parents=True)
    p.write_bytes(gzip.compress(json.dumps({"netfleet_format": 99}).encode()))
    with pytest.raises(FormatError, match="newer"):
        ResultsRoot.read(p)


def test_s3_url_opens_an_s3_root_and_bad_prefixes_are_explained() -> None:
    root = open_root("s3://bucket/a/b/")
    assert root.url == "s3://bucket/a/b/"
    with pytest.raises(StoreError, match=r"'\.\.'"):
        open_root("s3://bucket/a/../b")
    with pytest.raises(StoreError, match="no bucket"):
        open_root("s3:///x")


WRITER = """
import os, sys, time
from pathlib import Path
sys.path.insert(0, {src!r})
from netfleet.store import ResultsRoot
from tests.test_store import envelope
real_replace = os.replace
def slow_replace(a, b):
    Path({flag!r}).write_text("x")
    time.sleep(60)
os.replace = slow_replace
ResultsRoot(Path({root!r})).write(envelope(result={{"blob": "x" * 5_000_000}}))
"""


def test_killed_writer_leaves_no_result_file(tmp_path: Path) -> None:
    """A writer killed -9 after writing but before the rename leaves only a hidden temp file,
    which the store never lists as a result."""
    flag = tmp_path / "flag"
    root = tmp_path / "root"
    code = WRITER.format(src=str(Path(__file__).parents[1] / "src"), flag=str(flag), root=str(root))
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=Path(__file__).parents[1])
    try:
        deadline = time.monotonic() + 30
        while not flag.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert flag.exists(), "writer never reached the rename"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert list(ResultsRoot(root).files()) == []
    assert not list(root.rglob("*.json.gz"))
    leftovers = list(root.rglob(".tmp-*"))
    assert leftovers, "the temp file should be the only trace"
