"""A Parquet catalog on S3 (moto's server as its own process): ingest uploads the parts (runs
last), sql/cheatsheet read them through DuckDB's httpfs and agree with a local catalog; an
ingest killed in the middle of uploading a batch leaves nothing listed as committed, and the
next ingest sweeps the orphans and commits the runs once."""

from __future__ import annotations

import math
import os
import shutil
import signal
import socket
import socketserver
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from netfleet import aws
from netfleet.catalog import TABLES, connect, ingest, query
from netfleet.catalog.remote import S3Catalog
from netfleet.report.cheatsheet import cheatsheet
from netfleet.store import Envelope, open_root
from netfleet.store.root import ResultsRoot
from tests.goldenkit import CASES, envelope
from tests.motokit import moto_server

URL = "s3://catalogs/team/net"


@pytest.fixture(autouse=True)
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "state"
    monkeypatch.setenv("NETFLEET_S3_STATE", str(d))
    return d


def _root(tmp_path: Path, names: list[str]) -> ResultsRoot:
    root = ResultsRoot(tmp_path / "raw")
    for n, name in enumerate(names):
        root.write(envelope(name, f"r{n:02d}-{name}"))
    return root


def _counts(catalog: Path | str) -> dict[str, object]:
    con = connect(catalog)  # one connection: httpfs and the listing once
    try:
        return {t: con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0] for t in TABLES}
    finally:
        con.close()


def _close(got: list[list[Any]], want: list[list[Any]]) -> bool:
    return len(got) == len(want) and all(
        len(g) == len(w)
        and all(
            math.isclose(a, b, rel_tol=1e-12) if isinstance(a, float) else a == b
            for a, b in zip(g, w, strict=True)
        )
        for g, w in zip(got, want, strict=True)
    )


def test_ingest_to_s3_and_query_through_httpfs(tmp_path: Path) -> None:
    root = _root(tmp_path, CASES)
    local = ingest(root, tmp_path / "local")
    with moto_server():
        aws.client("s3").create_bucket(Bucket="catalogs")
        report = ingest(root, URL, batch_runs=5)
        assert (report.ingested, report.bad, report.catalog_dir) == (len(CASES), [], URL)
        assert report.rows == local.rows and report.batches == -(-len(CASES) // 5)
        keys = S3Catalog.parse(URL).keys("")
        assert "netfleet-catalog.json" in keys
        assert sum(k.startswith("runs/part-") for k in keys) == report.batches
        assert _counts(URL) == _counts(tmp_path / "local")
        # the same numbers (float sums may differ in the last bit: other parts, other order)
        assert _close(cheatsheet(URL).rows, cheatsheet(tmp_path / "local").rows)
        again = ingest(root, URL)
        assert (again.ingested, again.skipped, again.batches) == (0, len(CASES), 0)
        # the CLI takes the URL as --catalog (a Path would fold its //)
        out = subprocess.run(
            [sys.executable, "-m", "netfleet", "sql", "SELECT count(*) FROM runs", "-c", URL,
             "-f", "csv"],
            capture_output=True, text=True, timeout=120, env=os.environ.copy(),
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        assert out.stdout.split() == ["count_star()", str(len(CASES))]


def _rows(catalog: Path, table: str) -> Counter[tuple[Any, ...]]:
    text = (
        f"SELECT * EXCLUDE (source) FROM {table}" if table == "runs" else f"SELECT * FROM {table}"
    )
    return Counter(tuple(row) for row in query(catalog, text).rows)


def test_raw_results_on_s3_give_the_rows_of_the_same_results_on_disk(tmp_path: Path) -> None:
    """An S3 results root is read by the same reader as a local one: the same rows."""
    local = _root(tmp_path, CASES)
    with moto_server():
        aws.client("s3").create_bucket(Bucket="raw")
        remote = open_root("s3://raw/fleet")
        for path in local.files():
            remote.write(Envelope.model_validate(local.read(path)))
        from_s3 = ingest(remote, tmp_path / "from-s3")
    on_disk = ingest(local, tmp_path / "reference")
    assert (from_s3.ingested, from_s3.bad, from_s3.rows) == (on_disk.ingested, [], on_disk.rows)
    for table in ("runs", "intervals", "ends"):
        assert _rows(tmp_path / "from-s3", table) == _rows(tmp_path / "reference", table), table


class KillOnCommit:
    """A loopback proxy in front of moto that passes requests through until the ``nth`` PUT of a
    runs part (a batch's commit marker) starts, then SIGKILLs the ingest process (by the PID the
    test started) and drops the connection: an ingest dying mid-upload; the server lives on."""

    def __init__(self, target_port: int, nth: int) -> None:
        proxy = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                proxy._pipe(self.request)

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.target, self.nth = target_port, nth
        self.pid = 0
        self.commits = 0
        self.killed = False
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def _pipe(self, conn: socket.socket) -> None:
        try:
            up = socket.create_connection(("127.0.0.1", self.target), timeout=10)
        except OSError:
            conn.close()
            return
        threading.Thread(target=self._copy, args=(up, conn), daemon=True).start()
        while (data := self._recv(conn)) and self.passes(data, conn):
            up.sendall(data)
        conn.close()
        up.close()

    def passes(self, data: bytes, conn: socket.socket) -> bool:
        """Whether a request's bytes go on to moto (False: the connection is dropped)."""
        if b"PUT /catalogs/team/net/runs/part-" in data:
            self.commits += 1
            if self.commits == self.nth and self.pid:
                os.kill(self.pid, signal.SIGKILL)
                self.killed = True
                return False
        return True

    @staticmethod
    def _recv(conn: socket.socket) -> bytes:
        try:
            return conn.recv(65536)
        except OSError:
            return b""

    def _copy(self, src: socket.socket, dst: socket.socket) -> None:
        while data := self._recv(src):
            try:
                dst.sendall(data)
            except OSError:
                return

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_ingest_killed_mid_upload_commits_nothing_half_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _root(tmp_path, CASES[:9])
    ingest(root, tmp_path / "local")
    code = (
        "import sys\nfrom netfleet.catalog import ingest\n"
        "ingest(sys.argv[1], sys.argv[2], batch_runs=3)\n"
    )
    with moto_server() as server:
        aws.client("s3").create_bucket(Bucket="catalogs")
        proxy = KillOnCommit(int(server.url.rsplit(":", 1)[1]), nth=2)
        env = {**os.environ, "AWS_ENDPOINT_URL": proxy.url}
        proc = subprocess.Popen([sys.executable, "-c", code, str(root.path), URL], env=env)
        proxy.pid = proc.pid
        try:
            assert proc.wait(timeout=120) == -signal.SIGKILL
        finally:
            proxy.close()
        assert proxy.killed
        catalog = S3Catalog.parse(URL)
        keys = catalog.keys("")
        # the second batch's other parts are there, its runs part is not: not committed
        assert len(catalog.committed_batches()) == 1
        assert sum(k.startswith("intervals/part-") for k in keys) == 2
        assert _counts(URL)["runs"] == 3
        assert query(URL, "SELECT count(*) FROM intervals WHERE run_id NOT IN "
                     "(SELECT run_id FROM runs)").rows == [[0]]  # fmt: skip
        report = ingest(root, URL, batch_runs=3)  # straight to moto: sweeps, then commits
        assert (report.ingested, report.skipped) == (6, 3)
        assert len(catalog.committed_batches()) == 3
        assert sum(k.startswith("intervals/part-") for k in catalog.keys("")) == 3
        assert _counts(URL) == _counts(tmp_path / "local")


def test_an_s3_root_ingested_twice_opens_no_envelope_the_second_time(
    tmp_path: Path, state_dir: Path
) -> None:
    """Issue 34 item 2 on S3: each envelope of an S3 root gets a manifest row (source its URL,
    its listing's size and ETag), and the S3 catalog holds its manifest as an object — so a
    second ingest, from a machine with none of the first's local state, decides "already in"
    by the manifest alone: no envelope opened (the report's count, and every row as it was:
    not read again), and one new envelope is the only one read."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from netfleet.catalog.manifest import INGESTED, MANIFEST

    local = _root(tmp_path, CASES[:5])
    with moto_server():
        s3 = aws.client("s3")
        for bucket in ("raw", "catalogs"):
            s3.create_bucket(Bucket=bucket)
        remote = open_root("s3://raw/fleet")
        first_four, last = sorted(local.files())[:4], sorted(local.files())[4]
        for path in first_four:
            remote.write(Envelope.model_validate(local.read(path)))
        catalog = S3Catalog.parse(URL)

        def manifest() -> list[dict[str, Any]]:
            data = catalog.get(MANIFEST)
            assert data is not None, "the S3 catalog holds its manifest"
            return pq.read_table(pa.BufferReader(data)).to_pylist()

        first = ingest(remote, URL)
        assert (first.ingested, first.unchanged, first.bad) == (4, 0, [])
        rows = manifest()
        listed = {o["Key"]: o for o in s3.list_objects_v2(Bucket="raw")["Contents"]}
        assert sorted(r["source"] for r in rows) == sorted(f"s3://raw/{k}" for k in listed)
        for row in rows:
            obj = listed[row["source"].removeprefix("s3://raw/")]
            assert (row["etag"], row["size"]) == (obj["ETag"].strip('"'), obj["Size"])
            assert (row["state"], row["asked"]) == ("ok", INGESTED)
        shutil.rmtree(state_dir)  # another machine: the manifest comes from the catalog
        again = ingest(remote, URL)
        assert (again.seen, again.ingested, again.skipped, again.unchanged) == (4, 0, 4, 4)
        assert "(4 not opened)" in again.summary()
        assert manifest() == rows  # not one row read again (checked_ns), nothing written
        remote.write(Envelope.model_validate(local.read(last)))
        third = ingest(remote, URL)
        assert (third.ingested, third.skipped, third.unchanged) == (1, 4, 4)
        assert len(manifest()) == 5 and _counts(URL)["runs"] == 5


class DenyReads(KillOnCommit):
    """A loopback proxy in front of moto that passes everything through (the listing too) but
    answers a read of a raw result (``GET /raw/fleet/d=…``) with S3's AccessDenied: the store
    refusing us, no one object's fault."""

    DENIED = (
        b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code>'
        b"<Message>Access Denied</Message></Error>"
    )

    def passes(self, data: bytes, conn: socket.socket) -> bool:
        if not data.startswith((b"GET /raw/fleet/d=", b"GET /raw/fleet/d%3D")):
            return True
        head = "HTTP/1.1 403 Forbidden\r\nContent-Type: application/xml\r\n"
        head += f"Content-Length: {len(self.DENIED)}\r\nConnection: close\r\n\r\n"
        conn.sendall(head.encode() + self.DENIED)
        return False


def test_an_s3_root_that_refuses_its_reads_stops_the_ingest_and_marks_nothing_bad(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store that refuses the reads (not one object: the credentials) stops the ingest (exit
    4), no envelope recorded as refused: the next ingest, the store back, reads them all."""
    from netfleet.errors import StoreUnreachable

    local = _root(tmp_path, CASES[:3])
    with moto_server() as server:
        aws.client("s3").create_bucket(Bucket="raw")
        for path in local.files():
            open_root("s3://raw/fleet").write(Envelope.model_validate(local.read(path)))
        proxy = DenyReads(int(server.url.rsplit(":", 1)[1]), nth=0)
        try:
            with monkeypatch.context() as env:
                env.setenv("AWS_ENDPOINT_URL", proxy.url)
                with pytest.raises(StoreUnreachable, match="AccessDenied"):
                    ingest(open_root("s3://raw/fleet"), tmp_path / "cat")
        finally:
            proxy.close()
        again = ingest(open_root("s3://raw/fleet"), tmp_path / "cat")
        assert (again.ingested, again.bad) == (3, [])


def test_verify_of_an_s3_catalog_says_what_it_verifies() -> None:
    """An S3 catalog holds a manifest now, but verify reads a local one's: it says so, instead
    of "no manifest (nothing was ingested …)"."""
    from netfleet import api
    from netfleet.errors import InputError

    with pytest.raises(InputError, match="verify hashes the files of a local catalog") as got:
        api.verify(catalog=URL)
    assert got.value.hint is not None and "manifest.parquet" in got.value.hint
