"""Hostile journals — the run journal in a results root, the cloud intent journal in the state
directory — never hang or crash netfleet: read as regular files only, bounded in size and
nesting, a bad record skipped and reported, never fatal to the others (issue 23 item 8;
docs/security.md)."""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from netfleet import aws
from netfleet.cloud.aws.acquire.provision import Provisioner
from netfleet.cloud.aws.campaign import CloudSpec
from netfleet.cloud.aws.journal import Journal as CloudJournal
from netfleet.cloud.aws.release import teardown
from netfleet.runner.journal import journal_path, read_history
from tests.motokit import MotoServer, moto  # noqa: F401 — the module's moto server fixture
from tests.test_hostile_processes import CAMPAIGN

DEEP = b"[" * 100_000 + b"]" * 100_000
DEEP_OBJECT = b'{"a":' * 100_000 + b"1" + b"}" * 100_000


def netfleet_run(tmp_path: Path, results: Path) -> subprocess.CompletedProcess[str]:
    spec = tmp_path / "c.yaml"
    spec.write_text(textwrap.dedent(CAMPAIGN))
    return subprocess.run(
        [sys.executable, "-m", "netfleet", "run", str(spec), "--results", str(results)],
        capture_output=True,
        text=True,
        timeout=60,  # a journal that hangs netfleet fails here
    )


def test_a_fifo_journal_is_refused_not_waited_on(tmp_path: Path) -> None:
    results = tmp_path / "r"
    path = journal_path(results, "c")
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    res = netfleet_run(tmp_path, results)
    assert res.returncode == 4, res.stdout + res.stderr
    assert "is not a regular file" in res.stderr and "c.jsonl" in res.stderr


def test_a_deeply_nested_record_is_skipped_and_reported(tmp_path: Path) -> None:
    results = tmp_path / "r"
    path = journal_path(results, "c")
    path.parent.mkdir(parents=True)
    path.write_bytes(DEEP + b"\n" + DEEP_OBJECT + b"\n")
    res = netfleet_run(tmp_path, results)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "skipped 2 unreadable record(s)" in res.stdout, res.stdout
    assert "nested more than" in res.stdout


def test_bad_records_never_stop_the_good_ones(tmp_path: Path) -> None:
    path = journal_path(tmp_path, "c")
    path.parent.mkdir(parents=True)
    good = [
        {"event": "session", "mode": "fresh"},
        {"event": "run_started", "run_key": "k1"},
        {"event": "run_finished", "run_key": "k1", "status": "ok", "stopped": 5},  # forged type
        {"event": "run_started", "run_key": "k2"},
        {"event": "run_finished", "run_key": "k2", "status": "ok"},
        {"event": "process", "host": "a", "pid": 1e400, "argv": [], "role": "x"},  # inf PID
    ]
    lines = [json.dumps(r).encode() for r in good]
    escapes = b'"' + b'\\"' * 100_000  # an unterminated string of escaped quotes
    lines[1:1] = [DEEP, b"x" * (2 * 1024 * 1024), b"[1, 2]", b"{not json", escapes]
    path.write_bytes(b"\n".join(lines) + b"\n")
    history = read_history(path)
    assert history.outcomes == {"k2": "ok"} and history.attempts["k1"] == 1
    assert history.skipped is not None and "skipped 7" in history.skipped
    assert "longer than" in history.skipped and "nested more than" in history.skipped


# ------------------------------------------------------------------------- cloud journals
SPEC = {
    "campaign": "nf-old",
    "region": "us-east-1",
    "fleets": [{"instance_type": "t3.micro", "count": 1, "role": "server"}],
    "duration_minutes": 5,
    "expires_after_minutes": 60,
}


@pytest.mark.slow
def test_one_bad_cloud_journal_never_blocks_reap_or_destroy(
    moto: MotoServer,  # noqa: F811
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A journal nested 100,000 deep and one that is a FIFO sit beside an expired campaign's:
    `cloud reap --delete` still reaps it, `cloud destroy` of the bad ones does not crash, and
    each bad journal is reported."""
    moto.reset()
    past = dt.datetime.now(dt.UTC) - dt.timedelta(hours=5)
    Provisioner(CloudSpec(**SPEC), tmp_path, now=past).acquire()
    deep = CloudJournal(tmp_path, "nf-deep")
    deep.intent("vpc", "us-east-1", "main")
    with deep.path.open("ab") as fh:
        fh.write(DEEP + b"\n")
    fifo = CloudJournal(tmp_path, "nf-fifo")
    fifo.dir.mkdir(mode=0o700)
    os.mkfifo(fifo.path)
    caplog.set_level(logging.WARNING, logger="netfleet.cloud.journal")
    now = dt.datetime.now(dt.UTC)
    found = teardown.reap(tmp_path, [], now, delete=True, poll_s=0.05)
    assert [e.campaign for e in found] == ["nf-old"]
    assert not any(teardown.remaining(aws.client("ec2", "us-east-1"), "nf-old").values())
    said = caplog.text
    assert "nf-deep" in said and "skipped 1 record" in said
    assert "nf-fifo" in said and "not a regular file" in said
    assert teardown.destroy(tmp_path, "nf-deep", poll_s=0.05)["instances"] == 0
    with pytest.raises(Exception, match="no intent journal"):
        teardown.destroy(tmp_path, "nf-fifo", poll_s=0.05)


def test_the_neutral_journal_keeps_any_clouds_records_and_aws_narrows_them(
    tmp_path: Path,
) -> None:
    """The intent journal names no cloud's formats (issue 35): a second cloud's records (its
    own kinds, places and ids) replay; a record no cloud writes (control characters, a space, a
    path up) is skipped. AWS's journal keeps only AWS's kinds, region names and ids."""
    from netfleet.cloud.journal import Journal

    neutral = Journal(tmp_path / "ns", "nf-two")
    neutral.intent("namespace", "lab-1", "main")
    neutral.created("namespace", "lab-1", "main", "nscloud/nf-two-0")
    neutral.intent("veth", "lab-1", "main")
    neutral.created("veth", "lab-1", "main", "bad id\x1b[2J")
    neutral.intent("veth", "../etc", "x")
    state = neutral.read()
    assert [(r.kind, r.region, r.id) for r in state.resources] == [
        ("namespace", "lab-1", "nscloud/nf-two-0"),
        ("veth", "lab-1", None),
    ]
    assert state.bad_lines == 2
    aws_journal = CloudJournal(tmp_path / "ns", "nf-two")  # the same file, AWS's rules
    assert aws_journal.read().resources == [] and aws_journal.read().bad_lines == 5
    mine = CloudJournal(tmp_path / "aws", "nf-two")
    mine.intent("vpc", "us-east-1", "main")
    mine.created("vpc", "us-east-1", "main", "vpc-0abc")
    mine.created("vpc", "us-east-1", "main", "nscloud/nf-two-0")
    assert [r.id for r in mine.read().resources] == ["vpc-0abc"]


def test_forged_lease_records_of_the_wrong_shape_are_skipped() -> None:
    """Host leases live in the same journal: a record whose resource is not a mapping (or whose
    outcome is unhashable) is skipped, the others still count."""
    from netfleet.runner.leases import open_leases

    recs: list[dict[str, object]] = [
        {"event": "host_intent", "lease": "bad", "provider": "p", "host": "h", "resource": 5},
        {"event": "host_intent", "lease": "ok", "provider": "p", "host": "h", "resource": {}},
        {"event": "host_released", "lease": "ok", "outcome": ["released"]},
    ]
    assert list(open_leases(recs)) == ["ok"]
