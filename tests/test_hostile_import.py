"""An import folder is hostile input (issue 23): a malformed file is refused with its reason
while every other file is imported; what import accepts, ingest can read, within one size
limit and bounded memory; links and special files are refused; labels and campaign names are
checked as the spec loader checks them; one file under two names is one run, a run under two
campaigns is two. Parsing only, no network."""

from __future__ import annotations

import copy
import gzip
import json
import os
import re
import subprocess
import sys
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from netfleet.catalog.ingestion import ingest
from netfleet.catalog.register import register
from netfleet.cli.boundary import guarded
from netfleet.cli.main import app
from netfleet.errors import ExitStatus, InputError
from netfleet.store import ResultsRoot
from netfleet.store.imports import import_files
from tests.fskit import resume_offered_beyond_run, small_tmpfs

FIX = Path(__file__).parent / "fixtures" / "import"
GOOD = FIX / "v3_12_tcp.client.json"


def _doc() -> dict[str, Any]:
    return dict(json.loads(GOOD.read_text()))


def _with(change: Callable[[dict[str, Any]], None]) -> str:
    doc = copy.deepcopy(_doc())
    change(doc)
    return json.dumps(doc)  # NaN / Infinity written as JSON's usual extensions


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node = doc
        for p in parents:
            node = node[int(p)] if p.isdigit() else node[p]
        node[last] = value

    return change


def _no_end_duration_abc(doc: dict[str, Any]) -> None:
    del doc["end"]
    doc["start"]["test_start"]["duration"] = "abc"


DEEP = 100_000
#: name → (file text, a word the reason must hold)
HOSTILE: dict[str, tuple[str, str]] = {
    "timesecs_nan": (_with(_set("start.timestamp.timesecs", float("nan"))), "timesecs"),
    "timesecs_inf": (_with(_set("start.timestamp.timesecs", float("inf"))), "timesecs"),
    "timesecs_huge": (_with(_set("start.timestamp.timesecs", 1e308)), "timesecs"),
    "timesecs_negative": (_with(_set("start.timestamp.timesecs", -1e12)), "timesecs"),
    "end_huge": (_with(_set("end.sum_received.end", 1e308)), "end"),
    "end_nan": (_with(_set("end.sum_received.end", float("nan"))), "end"),
    "deep_array": ('{"start": {}, "x": ' + "[" * DEEP + "]" * DEEP + "}", "nested"),
    "deep_object": ('{"start": ' + '{"a":' * DEEP + "1" + "}" * DEEP + "}", "nested"),
    "start_list": (_with(_set("start", [1, 2])), "start"),
    "timestamp_text": (_with(_set("start.timestamp", "yesterday")), "timestamp"),
    "end_list": (_with(_set("end", [1])), "end"),
    "test_start_number": (_with(_set("start.test_start", 7)), "test_start"),
    "intervals_number": (_with(_set("intervals", 5)), "intervals"),
    "duration_abc": (_with(_no_end_duration_abc), "duration"),
    "lone_surrogate": (GOOD.read_text().replace('"TCP"', '"\\ud800"', 1), "surrogate"),
    "rate_huge": (_with(_set("end.sum_received.bits_per_second", 1e308)), "link can carry"),
    "rate_negative": (_with(_set("end.sum_received.bits_per_second", -1e9)), "link can carry"),
    "rate_nan": (_with(_set("end.sum_received.bits_per_second", float("nan"))), "link can carry"),
    "bytes_huge": (_with(_set("intervals.1.sum.bytes", 10**400)), "intervals[1].sum.bytes is an"),
    "start_huge": (_with(_set("intervals.1.sum.start", -(10**400))), "intervals[1].sum.start"),
}


def cli(*args: str) -> int:
    return guarded(lambda: app(list(args), standalone_mode=False, prog_name="netfleet"))


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """Three good files beside the hostile ones."""
    src = tmp_path / "in"
    src.mkdir()
    for name, (text, _) in HOSTILE.items():
        (src / f"{name}.json").write_text(text, errors="surrogatepass")
    # three files of three tests (a client and its server file would be one run)
    for name in ("v3_18_tcp.server.json", "v3_12_tcp_omit.client.json", GOOD.name):
        (src / name).write_bytes((FIX / name).read_bytes())
    return src


def test_each_malformed_file_is_refused_with_its_reason_and_the_rest_imported(
    folder: Path, tmp_path: Path
) -> None:
    root = ResultsRoot(tmp_path / "r")
    report = import_files([str(folder)], root)
    assert len(report.imported) == 3
    reasons = {Path(p).stem: why for p, why in report.bad}
    assert sorted(reasons) == sorted(HOSTILE)
    for name, (_, word) in HOSTILE.items():
        assert word in reasons[name], (name, reasons[name])
    # everything written reads back
    assert ingest(root, tmp_path / "cat").bad == []


def test_import_by_reference_refuses_each_malformed_file_with_the_same_reason(
    folder: Path, tmp_path: Path
) -> None:
    report = register([str(folder)], tmp_path / "cat")
    assert len(report.registered) == 3
    reasons = {Path(p).stem: why for p, why in report.bad}
    assert sorted(reasons) == sorted(HOSTILE)
    for name, (_, word) in HOSTILE.items():
        assert word in reasons[name], (name, reasons[name])


def test_an_end_total_beyond_a_float_s_range_is_a_null_not_a_crash(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    (src / "huge.json").write_text(_with(_set("end.sum_received.seconds", 10**400)))
    assert register([str(src)], tmp_path / "cat").bad == []
    root = ResultsRoot(tmp_path / "r")
    assert len(import_files([str(src)], root).imported) == 1
    assert ingest(root, tmp_path / "cat2").bad == []


def test_the_exit_status_says_some_files_were_refused(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc = cli("import", str(folder), "-r", str(tmp_path / "r"))
    out, err = capsys.readouterr()
    assert rc == ExitStatus.RUNS_FAILED == 3
    assert "imported 3 file(s)" in out and "Traceback" not in out + err
    assert f"{len(HOSTILE)} file(s) could not be imported" in err


def test_a_folder_of_many_files_with_one_bad_one_imports_all_the_others(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    doc = _doc()
    for n in range(80):  # enough for worker processes (PARALLEL_MIN)
        doc["start"]["timestamp"]["timesecs"] = 1795463482 + n
        (src / f"ok-{n:03}.json").write_text(json.dumps(doc))
    (src / "ok-040-bad.json").write_text(HOSTILE["timesecs_nan"][0])
    report = import_files([str(src)], ResultsRoot(tmp_path / "r"), workers=2)
    assert len(report.imported) == 80 and len(report.bad) == 1


# -- one limit for import and ingest, memory bounded -----------------------------------------


def _intervals_doc(count: int) -> bytes:
    doc = _doc()
    one = doc["intervals"][0]
    doc["intervals"] = [one] * count
    return json.dumps(doc, indent="\t").encode()  # as iperf3 writes it


def test_import_refuses_what_ingest_would_refuse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    limit = 2_000_000
    monkeypatch.setenv("NETFLEET_MAX_RAW_BYTES", str(limit))
    src = tmp_path / "in"
    src.mkdir()
    plain = _intervals_doc(2800)  # ≈ 1.65 MB: under the limit, its envelope (text + doc) not
    assert len(plain) < limit
    (src / "big.json").write_bytes(plain)
    (src / "big-gz.json.gz").write_bytes(gzip.compress(_intervals_doc(6000)))  # ≈ 3.5 MB inflated
    (src / "small.json").write_bytes(GOOD.read_bytes())
    root = ResultsRoot(tmp_path / "r")
    report = import_files([str(src)], root)
    refused = {Path(p).name: why for p, why in report.bad}
    assert sorted(refused) == ["big-gz.json.gz", "big.json"], refused
    for why in refused.values():
        assert f"{limit:,}" in why and "NETFLEET_MAX_RAW_BYTES" in why
    after = ingest(root, tmp_path / "cat")
    assert after.ingested == len(report.imported) == 1 and after.bad == []


def test_a_file_of_countless_small_values_is_refused_before_it_is_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NETFLEET_MAX_RAW_BYTES", "2000000")
    doc = _doc()
    doc["x"] = [0] * 300_000  # 600 kB of text, 300,000 values
    (tmp_path / "many.json").write_text(json.dumps(doc, separators=(",", ":")))
    report = import_files([str(tmp_path / "many.json")], ResultsRoot(tmp_path / "r"))
    assert len(report.bad) == 1 and "values" in report.bad[0][1], report.bad


def test_a_gzip_bomb_is_refused_within_bounded_memory(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.json.gz"
    head = json.dumps(_doc())[:-1] + ', "x": ['
    chunk = b"0," * (512 * 1024)  # 1 MB of "0," per write: 300 MB once inflated
    comp = zlib.compressobj(1, zlib.DEFLATED, 31)
    with bomb.open("wb") as fh:
        fh.write(comp.compress(head.encode()))
        for _ in range(300):
            fh.write(comp.compress(chunk))
        fh.write(comp.compress(b"0]}") + comp.flush())
    assert bomb.stat().st_size < 2_000_000
    code = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
        "from netfleet.store import ResultsRoot\n"
        "from netfleet.store.imports import import_files\n"
        "r = import_files([sys.argv[1]], ResultsRoot(sys.argv[2]))\n"
        "print(len(r.imported), r.bad[0][1] if r.bad else '')\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "NETFLEET_MAX_RAW_BYTES"}
    out = subprocess.run(
        [sys.executable, "-c", code, str(bomb), str(tmp_path / "r")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("0 ") and "268,435,456" in out.stdout


# -- identity and duplicates -----------------------------------------------------------------


def test_one_file_in_two_campaigns_is_two_runs(tmp_path: Path) -> None:
    root = ResultsRoot(tmp_path / "r")
    import_files([str(GOOD)], root)
    import_files([str(GOOD)], root, campaign="other")
    report = ingest(root, tmp_path / "cat")
    assert report.ingested == 2 and report.skipped == 0
    import_files([str(GOOD)], root, campaign="other", labels=["site=b"])
    assert ingest(root, tmp_path / "cat").ingested == 1
    # the same file, campaign and labels again: the same run (a no-op)
    import_files([str(GOOD)], root)
    assert ingest(root, tmp_path / "cat").ingested == 0


def test_two_names_for_one_file_are_reported_as_a_duplicate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy_ = tmp_path / "copy.json"
    copy_.write_bytes(GOOD.read_bytes())
    root = ResultsRoot(tmp_path / "r")
    report = import_files([str(GOOD), str(copy_)], root)
    assert len(report.imported) == 1 and len(list(root.files())) == 1
    assert report.duplicates == [(str(copy_), str(GOOD))]
    assert cli("import", str(GOOD), str(copy_), "-r", str(tmp_path / "r2")) == 0
    out = capsys.readouterr().out
    assert "imported 1 file(s)" in out and "1 duplicate" in out and str(GOOD) in out


def test_a_file_an_earlier_import_wrote_is_reported_as_already_imported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = ResultsRoot(tmp_path / "r")
    first = import_files([str(GOOD)], root, labels=["site=a"])
    (written,) = first.imported
    run_id = Path(written).name.removesuffix(".json.gz")
    mtime = os.stat(written).st_mtime_ns
    again = import_files([str(GOOD)], root, labels=["site=a"])
    assert again.imported == [] and again.already == [(str(GOOD), run_id)], again
    assert os.stat(written).st_mtime_ns == mtime  # not written again
    # another campaign is another run, not a duplicate
    other = import_files([str(GOOD)], root, campaign="other", labels=["site=a"])
    assert len(other.imported) == 1 and other.already == []
    assert cli("import", str(GOOD), "-r", str(tmp_path / "r"), "--label", "site=a") == 0
    out = capsys.readouterr().out
    assert "imported 0 file(s), 1 already imported" in out
    assert f"already imported as {run_id}" in out and str(GOOD) in out


IPERF2 = FIX / "iperf2"


@pytest.mark.parametrize("bps", ["nan", "inf", "-104857600", "99999999999999999", "1e300"])
def test_iperf2_csv_with_an_impossible_rate_is_refused_at_the_door(
    tmp_path: Path, bps: str
) -> None:
    lines = (IPERF2 / "tcp_csv.client.txt").read_text().splitlines()
    fields = lines[1].split(",")
    fields[8] = bps
    lines[1] = ",".join(fields)
    bad = tmp_path / "bad.client.txt"
    bad.write_text("\n".join(lines) + "\n")
    report = import_files(
        [str(bad), str(IPERF2 / "tcp_csv.client.txt")], ResultsRoot(tmp_path / "r")
    )
    assert len(report.imported) == 1, report
    assert [p for p, _ in report.bad] == [str(bad)]
    assert "CSV line 2" in report.bad[0][1] and "not a rate a link can carry" in report.bad[0][1]


def test_iperf2_text_with_an_impossible_rate_is_refused_at_the_door(tmp_path: Path) -> None:
    text = (IPERF2 / "tcp_p2_e.client.txt").read_text()
    hostile = re.sub(r"\d+(\.\d+)? ([MG])bits/sec", "99999 Tbits/sec", text, count=1)
    assert hostile != text
    bad = tmp_path / "bad.client.txt"
    bad.write_text(hostile)
    report = import_files([str(bad)], ResultsRoot(tmp_path / "r"))
    assert report.imported == [] and "not a rate a link can carry" in report.bad[0][1], report


# -- links and special files -----------------------------------------------------------------


def test_links_and_special_files_are_refused_unless_asked(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    secret = tmp_path / "shadow"
    secret.write_text(GOOD.read_text())  # parses: only the link rule may refuse it
    (src / "shadow.json").symlink_to(secret)
    os.mkfifo(src / "pipe.json")
    (src / "ok.json").write_bytes((FIX / "v3_12_tcp.server.json").read_bytes())
    root = ResultsRoot(tmp_path / "r")
    report = import_files([str(src)], root)
    reasons = {Path(p).name: why for p, why in report.bad}
    assert len(report.imported) == 1
    assert "symbolic link" in reasons["shadow.json"] and "--follow-links" in reasons["shadow.json"]
    assert "not a regular file" in reasons["pipe.json"]
    again = import_files([str(src / "shadow.json")], root, follow_links=True)
    assert len(again.imported) == 1 and again.bad == []


# -- labels and campaign names ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--label", "password=hunter2"),
        ("--label", "aws_secret_access_key=AKIAXXXX"),
        ("--label", "bad key=1"),
        ("--campaign", ".."),
        ("--campaign", "a/b"),
    ],
)
def test_labels_and_campaigns_are_checked_as_in_a_spec(
    tmp_path: Path, option: str, value: str
) -> None:
    with pytest.raises(InputError) as caught:
        if option == "--label":
            import_files([str(GOOD)], ResultsRoot(tmp_path / "r"), labels=[value])
        else:
            import_files([str(GOOD)], ResultsRoot(tmp_path / "r"), campaign=value)
    assert option in caught.value.message
    assert "hunter2" not in str(caught.value) and "AKIA" not in str(caught.value)
    assert not (tmp_path / "r").exists()


# -- what reaches the terminal ---------------------------------------------------------------


def test_hostile_file_names_never_reach_the_terminal_raw(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "in"
    src.mkdir()
    (src / "x\x1b]0;PWNED\x07\nFAKE: imported 99.json").write_text("not json")
    (src / "ok.json").write_bytes(GOOD.read_bytes())
    rc = cli("import", str(src), "-r", str(tmp_path / "r"))
    out, err = capsys.readouterr()
    assert rc == 3
    assert "\x1b" not in out + err and "\x07" not in out + err
    assert not any(line.startswith("FAKE") for line in (out + err).splitlines())
    assert "\\x1b]0;PWNED" in out


# -- a full disk ---------------------------------------------------------------------------


@pytest.fixture
def small_fs(tmp_path: Path) -> Any:
    with small_tmpfs(tmp_path / "small") as mnt:
        yield mnt


def test_a_full_disk_names_the_file_and_offers_no_resume_import_lacks(
    small_fs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = [str(p) for p in sorted(FIX.glob("*.json")) if p.name != "MANIFEST.json"]
    rc = cli("import", *runs, "-r", str(small_fs / "r"))
    err = capsys.readouterr().err
    assert rc == ExitStatus.ENVIRONMENT
    assert f"{small_fs}/r/d=" in err and "a file netfleet was writing" not in err, err
    assert not resume_offered_beyond_run(err), err
    assert not [p for p in (small_fs / "r").rglob(".tmp-*")]  # nothing partial


def test_a_failed_upload_says_how_many_files_were_imported_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from netfleet import aws
    from netfleet.errors import StoreUnreachable
    from netfleet.store import imports as imports_module
    from netfleet.store import open_root
    from tests.motokit import moto_server

    monkeypatch.setenv("NETFLEET_S3_STATE", str(tmp_path / "state"))
    monkeypatch.setattr(imports_module, "GROUP_FILES", 2)  # written two by two
    runs = [str(p) for p in sorted(FIX.glob("*.json")) if p.name != "MANIFEST.json"][:8]
    with moto_server() as server:
        aws.client("s3", region="us-east-1").create_bucket(Bucket="results")

        def endpoint_goes_down(done: int, total: int) -> None:
            if done == 5:  # two groups (4 files) uploaded, the third is on its way
                server.stop()

        with pytest.raises(StoreUnreachable) as caught:
            import_files(runs, open_root("s3://results/p"), progress=endpoint_goes_down, pair=False)
    assert f"4 of {len(runs)} file(s) were imported before it" in caught.value.message


def test_an_s3_root_reports_runs_an_earlier_import_uploaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from netfleet import aws
    from netfleet.store import open_root
    from tests.motokit import moto_server

    monkeypatch.setenv("NETFLEET_S3_STATE", str(tmp_path / "state"))
    with moto_server():
        aws.client("s3", region="us-east-1").create_bucket(Bucket="results")
        first = import_files([str(GOOD)], open_root("s3://results/p"))
        again = import_files([str(GOOD)], open_root("s3://results/p"))
    assert len(first.imported) == 1 and first.already == []
    assert again.imported == [] and [f for f, _ in again.already] == [str(GOOD)]
    assert first.imported[0].endswith(f"/{again.already[0][1]}.json.gz")
