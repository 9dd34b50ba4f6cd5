"""The S3 results root against moto's server as its own process: write, list, read, ingest,
a run to S3, and a server that dies mid-upload (nothing half-written listed; the result is
spooled locally and uploaded again by the next run/--resume)."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import threading
from pathlib import Path

import pytest

from netfleet import aws
from netfleet.catalog.ingestion import ingest
from netfleet.catalog.query import query
from netfleet.errors import StoreError
from netfleet.runner import run_campaign
from netfleet.spec import load_spec
from netfleet.store import ResultsRoot, S3Root, open_root
from tests.motokit import moto_server
from tests.test_runner_local import SPEC, spec_file
from tests.test_store import envelope


@pytest.fixture(autouse=True)
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "state"
    monkeypatch.setenv("NETFLEET_S3_STATE", str(d))
    return d


def make_bucket(name: str = "results") -> None:
    aws.client("s3", region="us-east-1").create_bucket(Bucket=name)


def test_write_list_read_round_trip_and_ingest_same_as_local(tmp_path: Path) -> None:
    with moto_server():
        make_bucket()
        root = open_root("s3://results/fleet/x")
        assert isinstance(root, S3Root)
        local = ResultsRoot(tmp_path / "local")
        envs = [
            envelope(run_id=f"t-abc-r{i}-20260101T00000000000{i}Z", run_key=f"t-abc-r{i}")
            for i in range(3)
        ]
        urls = [root.write(e) for e in envs]
        for e in envs:
            local.write(e)
        assert urls[0] == (
            "s3://results/fleet/x/d=2026-01-01/campaign=c/t-abc-r0-20260101T000000000000Z.json.gz"
        )
        listed = list(root.files())
        assert [str(r) for r in listed] == sorted(urls)
        assert [r.name for r in listed] == [p.name for p in local.files()]
        assert [root.read(r) for r in listed] == [local.read(p) for p in local.files()]
        assert root.pending() == []  # the spool is emptied after each successful PUT
        # a stray object outside the layout is not listed
        s3 = aws.client("s3", region="us-east-1")
        s3.put_object(Bucket="results", Key="fleet/x/d=2026-01-01/notes.txt", Body=b"x")
        assert len(list(root.files())) == 3
        rep = ingest(root, tmp_path / "cat")
        assert (rep.seen, rep.ingested, rep.bad) == (3, 3, [])
        again = ingest(root, tmp_path / "cat")
        assert (again.ingested, again.skipped) == (0, 3)
        rows = query(tmp_path / "cat", "SELECT run_id, source FROM runs ORDER BY run_id").rows
        assert [r[1] for r in rows] == sorted(urls)


def test_errors_name_the_root_and_the_fix() -> None:
    with moto_server():
        root = open_root("s3://no-such-bucket/p")
        with pytest.raises(StoreError, match=r"s3://no-such-bucket/p/: listing failed") as exc:
            list(root.files())
        assert "AWS_ENDPOINT_URL" in (exc.value.hint or "")


def test_loopback_guard_refuses_a_real_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NETFLEET_AWS_LOOPBACK_ONLY", "1")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "https://s3.amazonaws.com")
    with pytest.raises(Exception, match="loopback"):
        list(open_root("s3://b/p").files())


class CutProxy:
    """A loopback TCP proxy in front of moto that forwards the first ``cut`` bytes of the upload,
    then kills the server (by the PID the test started) and drops the connection: a server
    dying in the middle of a PUT body."""

    def __init__(self, target_port: int, pid: int, cut: int) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.target, self.pid, self.cut = target_port, pid, cut
        self.forwarded = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                try:
                    up = socket.create_connection(("127.0.0.1", self.target), timeout=5)
                except OSError:
                    continue  # the server is gone: the client sees the connection drop
                with up:
                    while self.forwarded < self.cut:
                        data = conn.recv(65536)
                        if not data:
                            break
                        up.sendall(data)
                        self.forwarded += len(data)
                    os.kill(self.pid, signal.SIGKILL)

    def close(self) -> None:
        self.sock.close()


def test_server_dies_mid_upload_result_spooled_and_reuploaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    big = envelope(result={"intervals": [], "end": {}, "blob": os.urandom(3_000_000).hex()})
    with moto_server() as first:
        make_bucket()
        port = int(first.url.rsplit(":", 1)[1])
        proxy = CutProxy(port, first.proc.pid, cut=1_000_000)
        monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
        root = open_root("s3://results/p")
        assert isinstance(root, S3Root)
        try:
            with pytest.raises(StoreError, match="upload of d=2026-01-01/campaign=c/") as exc:
                root.write(big)
        finally:
            proxy.close()
        first.proc.wait(10)
        assert proxy.forwarded >= 1_000_000  # the body was on its way when the server died
        assert "spooled" in (exc.value.hint or "")
        assert len(root.pending()) == 1  # the completed result is kept locally
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with moto_server():
        make_bucket()
        root = open_root("s3://results/p")
        assert isinstance(root, S3Root)
        assert list(root.files()) == []  # nothing half-written is listed
        assert len(root.flush_pending()) == 1
        (ref,) = root.files()
        assert root.read(ref)["result"]["blob"] == big.result["blob"]
        assert root.pending() == []


def test_campaign_writes_to_s3_journal_stays_local(tmp_path: Path, state_dir: Path) -> None:
    with moto_server():
        make_bucket()
        root = open_root("s3://results/runs")
        spec = load_spec(spec_file(tmp_path, SPEC))
        result = asyncio.run(run_campaign(spec, root))
        assert result.ok == 2, [e.reason for e in result.envelopes]
        assert all(str(p).startswith("s3://results/runs/d=") for p in result.paths)
        assert len(list(root.files())) == 2
        assert list(state_dir.glob("s3/results/runs/.netfleet/journal/*.jsonl"))
        again = asyncio.run(run_campaign(spec, root, resume=True))
        assert (again.done_before, again.total) == (2, 0)  # all done: nothing re-run


def test_duckdb_reads_raw_results_on_s3_through_httpfs_by_path(tmp_path: Path) -> None:
    import duckdb

    from netfleet.catalog.httpfs import enable_s3

    with moto_server():
        make_bucket()
        root = open_root("s3://results/raw")
        envs = [
            envelope(run_id=f"t-abc-r{i}-20260101T00000000000{i}Z", run_key=f"t-abc-r{i}")
            for i in range(3)
        ]
        for e in envs:
            root.write(e)
        con = duckdb.connect()
        enable_s3(con)
        rows = con.execute(
            "SELECT d, campaign, count(*) FROM read_json("
            "'s3://results/raw/d=*/campaign=*/*.json.gz', hive_partitioning=true) GROUP BY ALL"
        ).fetchall()
        assert [tuple(map(str, r)) for r in rows] == [("2026-01-01", "c", "3")]
