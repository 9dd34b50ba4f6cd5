"""A catalog directory (and a results root, a lab's chroot base) is writable by others: a link
placed in it never makes netfleet write or delete outside it (issue 23, docs/security.md). Each
link is refused with an error naming it, exit 4; what it points at is untouched."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

from netfleet import aws
from netfleet.catalog import ingest
from netfleet.catalog.layout import TABLES
from netfleet.cli.boundary import guarded
from netfleet.cli.main import app
from netfleet.durable import checked_dir, open_in
from netfleet.errors import LinkRefused, StoreUnreachable
from netfleet.store import S3Root, open_root
from netfleet.store.limits import too_large
from netfleet.store.rawfile import encode
from netfleet.store.root import ResultsRoot
from netfleet.store.s3 import SPOOL_DIR
from tests.fskit import resume_offered_beyond_run, small_tmpfs
from tests.motokit import moto_server
from tests.test_catalog import make_envelope, populate


def cli(*args: str) -> int:
    return guarded(lambda: app(list(args), standalone_mode=False, prog_name="netfleet"))


@pytest.fixture
def root(tmp_path: Path) -> ResultsRoot:
    results = ResultsRoot(tmp_path / "raw")
    populate(results, ["tcp_1stream"])
    return results


def test_a_linked_lock_file_is_never_truncated(
    root: ResultsRoot, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious")
    catalog = tmp_path / "cat"
    catalog.mkdir()
    (catalog / ".lock").symlink_to(victim)
    rc = cli("ingest", "-r", str(root.path), "--catalog", str(catalog))
    err = capsys.readouterr().err
    assert rc == 4
    assert victim.read_text() == "precious"
    assert f"{catalog}/.lock" in err and "symbolic link" in err


def test_a_linked_table_directory_is_never_swept(root: ResultsRoot, tmp_path: Path) -> None:
    catalog = tmp_path / "cat"
    ingest(root, catalog)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / ".tmp-keep").write_text("not netfleet's")
    (elsewhere / "part-x.parquet").write_text("not netfleet's")
    for table in ("runs", "_run_ids"):
        moved = tmp_path / f"moved-{table}"
        (catalog / table).rename(moved)
        (catalog / table).symlink_to(elsewhere)
        with pytest.raises(LinkRefused, match=f"{catalog}/{table}: a symbolic link"):
            ingest(root, catalog)
        assert sorted(p.name for p in elsewhere.iterdir()) == [".tmp-keep", "part-x.parquet"]
        (catalog / table).unlink()
        moved.rename(catalog / table)


def test_a_linked_format_file_is_never_written(root: ResultsRoot, tmp_path: Path) -> None:
    catalog = tmp_path / "cat"
    catalog.mkdir()
    target = tmp_path / "created-through-the-link"
    (catalog / "netfleet-catalog.json").symlink_to(target)  # dangling: write_text would create
    with pytest.raises(LinkRefused):
        ingest(root, catalog)
    assert not target.exists()


def test_durable_helpers_refuse_links_below_the_top_only(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    top = tmp_path / "top"
    top.symlink_to(real)  # the top is the user's choice: a link there is followed
    assert checked_dir(top, "a", "b") == top / "a" / "b" and (real / "a" / "b").is_dir()
    (real / "a" / "c").symlink_to(tmp_path)
    with pytest.raises(LinkRefused, match="a/c: a symbolic link"):
        checked_dir(top, "a", "c", "d")
    assert not (tmp_path / "d").exists()
    (real / "f").symlink_to(tmp_path / "victim")
    with pytest.raises(LinkRefused, match="top/f: a symbolic link"):
        open_in(top, "f", os.O_WRONLY | os.O_CREAT)
    assert not (tmp_path / "victim").exists()
    (real / "plain").write_text("x")
    with pytest.raises(LinkRefused, match="not a directory"):
        checked_dir(top, "plain", "x")


def test_a_full_disk_during_ingest_names_the_catalog_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = ResultsRoot(tmp_path / "raw")
    populate(results, ["tcp_1stream", "udp_50m", "tcp_1stream", "udp_50m"] * 4)
    with small_tmpfs(tmp_path / "small", "48k") as mnt:
        rc = cli("ingest", "-r", str(results.path), "--catalog", str(mnt / "cat"))
        err = capsys.readouterr().err
        assert rc == 4, err
        assert f"{mnt}/cat/" in err and "a file netfleet was writing" not in err, err
        assert not resume_offered_beyond_run(err), err
        assert not list((mnt / "cat").rglob(".tmp-*"))


# -- an S3 root whose endpoint goes away ------------------------------------------------------


@pytest.fixture
def s3_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("NETFLEET_S3_STATE", str(tmp_path / "state"))
    return tmp_path / "state"


def _s3_root_with_runs(count: int) -> S3Root:
    aws.client("s3", region="us-east-1").create_bucket(Bucket="results")
    root = open_root("s3://results/p")
    assert isinstance(root, S3Root)
    for n in range(count):
        root.write(make_envelope("tcp_1stream", f"run-{n}"))
    return root


def test_an_endpoint_down_during_ingest_stops_it_exit_4(s3_state: Path, tmp_path: Path) -> None:
    with moto_server() as server:
        root = _s3_root_with_runs(3)

        def endpoint_goes_down(done: int, total: int) -> None:
            server.stop()  # after the listing, before the first file is read

        with pytest.raises(StoreUnreachable) as caught:
            ingest(root, tmp_path / "cat", progress=endpoint_goes_down)
    assert caught.value.exit_status == 4
    assert "AWS_ENDPOINT_URL" in (caught.value.hint or "")


def test_ingest_uploads_what_a_failed_upload_left_spooled(s3_state: Path, tmp_path: Path) -> None:
    with moto_server():
        root = _s3_root_with_runs(1)
        rel, data = encode(make_envelope("tcp_1stream", "spooled"))
        spooled = root.state_dir / SPOOL_DIR / rel  # as a failed upload leaves it
        spooled.parent.mkdir(parents=True, exist_ok=True)
        spooled.write_bytes(data)
        report = ingest(root, tmp_path / "cat")
        assert report.uploaded == [rel] and report.ingested == 2
        assert "1 waiting in the local upload spool uploaded first" in report.summary()
        assert root.pending() == []


def test_ingest_applies_the_json_values_limit(
    root: ResultsRoot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A raw file under the byte limit but over the JSON-values limit is skipped by ingest,
    with the limit's reason (issue 23.4)."""
    key, data = encode(make_envelope("tcp_1stream", "run-big-values"))
    raw = json.loads(gzip.decompress(data))
    raw["x"] = [0] * 300_000  # 600 kB of text, 300,000 values
    text = json.dumps(raw, separators=(",", ":")).encode()
    monkeypatch.setenv("NETFLEET_MAX_RAW_BYTES", "2000000")
    assert len(text) < 2_000_000 and too_large(text) is not None
    path = root.path / key
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(text))
    report = ingest(root, tmp_path / "cat")
    assert report.ingested == 1 and len(report.bad) == 1, report
    assert "values" in report.bad[0].reason, report.bad


def test_a_table_directory_swapped_for_a_link_during_ingest_is_never_written_through(
    root: ResultsRoot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 23 item 2's remaining race: ingest checks the catalog's directories, then writes
    into them. Here each one is swapped for a link to a victim directory just before the
    first part is published: nothing lands in the victim (the held descriptors are used)."""
    from netfleet.catalog import writer as ingestion

    catalog = tmp_path / "cat"
    victim = tmp_path / "victim"
    victim.mkdir()
    real_publish = ingestion._publish
    swapped: list[str] = []

    def swap_then_publish(temp: Path, final: Path, *dfd: int) -> None:
        if not swapped:
            for name in ("_run_ids", *TABLES):
                (catalog / name).rename(catalog / f"{name}.moved")
                (catalog / name).symlink_to(victim, target_is_directory=True)
                swapped.append(name)
        real_publish(temp, final, *dfd)

    monkeypatch.setattr(ingestion, "_publish", swap_then_publish)
    report = ingest(root, catalog)
    assert swapped and report.ingested == 1
    assert list(victim.iterdir()) == []
    assert list((catalog / "runs.moved").glob("part-*.parquet"))
    assert list((catalog / "_run_ids.moved").iterdir())


def test_a_linked_upload_spool_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NETFLEET_S3_STATE", str(tmp_path / "state"))
    root = S3Root("results", "p/")
    root.state_dir.mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root.state_dir / SPOOL_DIR).symlink_to(elsewhere)
    rel, data = encode(make_envelope("tcp_1stream", "spool"))
    with pytest.raises(LinkRefused, match=f"{SPOOL_DIR}: a symbolic link"):
        root.write_encoded(rel, data)  # refused before any upload: no endpoint needed
    assert list(elsewhere.iterdir()) == []
