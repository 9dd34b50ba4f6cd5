"""The host lifecycle: every acquired host is released exactly once — normal end, an exception,
SIGTERM, a failure half-way through acquiring — and after kill -9 a later --resume releases
what the dead controller acquired. The provider (tests/leasekit.py) owns real directories."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from netfleet.errors import HostError
from netfleet.hosts.provider import HostPool, HostRequest, MemoryLeaseLog
from netfleet.runner.journal import journal_path, read_records
from netfleet.spec.models import LocalHostSpec
from tests.killkit import killed_mid_run, run_processes
from tests.leasekit import ENV_DIR, ENV_FAIL, TmpdirProvider, owned, released

REPO = Path(__file__).resolve().parents[1]


def requests(*names: str) -> list[HostRequest]:
    return [HostRequest(n, LocalHostSpec(kind="local")) for n in names]


def test_pool_releases_each_host_once_when_the_body_raises(tmp_path: Path) -> None:
    provider = TmpdirProvider(tmp_path, batch_size=2)
    log = MemoryLeaseLog()

    async def go() -> None:
        pool = HostPool(requests("a", "b", "c", "d", "e"), log, lambda _kind: provider)
        with pytest.raises(RuntimeError):
            async with pool as hosts:
                assert sorted(hosts) == ["a", "b", "c", "d", "e"]
                assert len(owned(tmp_path)) == 5
                raise RuntimeError("a run blew up")
        await pool.release()  # a second release is a no-op

    asyncio.run(go())
    assert sorted(len(c) for c in provider.calls) == [1, 2, 2]  # batches of 2
    assert owned(tmp_path) == []
    assert Counter(released(tmp_path)) == Counter(list(log.leases))  # each lease once
    assert all(o == ["released"] for o in log.outcomes.values())


def test_pool_releases_what_a_failed_acquire_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_FAIL, "b")
    provider = TmpdirProvider(tmp_path)
    log = MemoryLeaseLog()

    async def go() -> None:
        async with HostPool(requests("a", "b", "c"), log, lambda _kind: provider):
            pytest.fail("acquire should have failed")

    with pytest.raises(HostError, match="on purpose"):
        asyncio.run(go())
    assert len(log.leases) == 2  # a, then b which failed after creating its directory
    assert owned(tmp_path) == []
    assert sorted(released(tmp_path)) == sorted(log.leases)


SPEC = """\
campaign: lease
hosts:
  a: {kind: local}
  b: {kind: local}
tests:
  - {name: quick, client: a, server: b, params: {duration: 1, bitrate: 50mbit}}
  - {name: long, client: a, server: b, params: {duration: LONG, bitrate: 50mbit}}
"""


def launch(tmp_path: Path, *args: str, long: int = 1, **env: str) -> subprocess.Popen[str]:
    spec = tmp_path / "s.yaml"
    spec.write_text(textwrap.dedent(SPEC).replace("LONG", str(long)))
    base = tmp_path / "owned"
    base.mkdir(exist_ok=True)
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.leasekit",
            "run",
            str(spec),
            "--results",
            str(tmp_path / "res"),
            *args,
        ],
        cwd=REPO,
        env={**os.environ, ENV_DIR: str(base), **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def lease_records(tmp_path: Path) -> dict[str, list[str]]:
    recs = read_records(journal_path(tmp_path / "res", "lease"))
    out: dict[str, list[str]] = {}
    for r in recs:
        if r["event"].startswith("host_"):
            out.setdefault(r["lease"], []).append(r["event"] + ":" + str(r.get("outcome", "")))
    return out


def assert_all_released_once(tmp_path: Path) -> dict[str, list[str]]:
    base = tmp_path / "owned"
    leases = lease_records(tmp_path)
    assert owned(base) == []
    assert Counter(released(base)) == Counter(list(leases))
    for events in leases.values():
        assert events == ["host_intent:", "host_acquired:", "host_released:released"]
    return leases


def test_normal_end_releases_every_host_once(tmp_path: Path) -> None:
    proc = launch(tmp_path)
    out, err = proc.communicate(timeout=90)
    assert proc.returncode == 0, out + err
    assert len(assert_all_released_once(tmp_path)) == 2


def test_failed_acquire_releases_and_exits_4(tmp_path: Path) -> None:
    proc = launch(tmp_path, **{ENV_FAIL: "b"})
    out, err = proc.communicate(timeout=90)
    assert proc.returncode == 4, out + err
    assert "on purpose" in err
    assert len(assert_all_released_once(tmp_path)) == 2
    assert not list((tmp_path / "res").rglob("*.json.gz"))  # no run started


def long_run(record: dict[str, Any]) -> bool:
    """The long run of the campaign :func:`launch` runs (its second): true for its start."""
    return bool(record["sequence"] == 1)


def test_sigterm_releases_every_host_once(tmp_path: Path) -> None:
    proc = launch(tmp_path, long=60)
    try:
        run_processes(journal_path(tmp_path / "res", "lease"), proc, long_run)
        assert len(owned(tmp_path / "owned")) == 2
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, out + err
    assert len(assert_all_released_once(tmp_path)) == 2


@pytest.mark.slow
def test_after_kill_9_resume_releases_what_the_dead_controller_acquired(tmp_path: Path) -> None:
    proc = launch(tmp_path, long=4)
    journal = journal_path(tmp_path / "res", "lease")
    base = tmp_path / "owned"
    with killed_mid_run(proc, journal, long_run):
        left = owned(base)
        assert len(left) == 2 and released(base) == []  # nothing released by the dead one
        before = set(lease_records(tmp_path))
        res = launch(tmp_path, "--resume", long=4)
        out, err = res.communicate(timeout=90)
        assert res.returncode == 0, out + err
        assert "released 2 of 2 hosts an earlier session left acquired" in out
        leases = assert_all_released_once(tmp_path)  # the dead session's and the new one's
        assert len(leases) == 4 and before < set(leases)
        # the dead session's leases were released before the new session acquired its own
        recs = read_records(journal)
        old_released = [
            i for i, r in enumerate(recs) if r["event"] == "host_released" and r["lease"] in before
        ]
        new_intents = [
            i
            for i, r in enumerate(recs)
            if r["event"] == "host_intent" and r["lease"] not in before
        ]
        assert len(old_released) == 2 and max(old_released) < min(new_intents)


EARLY = """\
campaign: early
hosts:
  a: {kind: local}
  b: {kind: local}
  c: {kind: local}
tests:
  - {name: quick, client: a, server: b, params: {duration: 1, bitrate: 50mbit}}
  - {name: long, client: c, server: b, params: {duration: 3, bitrate: 50mbit}}
"""


def test_an_owned_host_is_released_when_its_last_run_ends(tmp_path: Path) -> None:
    """Issue 25.1: a (only in the first run) is released while the second run still goes on;
    b and c (in the last run) at its end; each exactly once."""
    spec = tmp_path / "early.yaml"
    spec.write_text(EARLY)
    base = tmp_path / "owned"
    base.mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "tests.leasekit", "run", str(spec), "--results",
         str(tmp_path / "res"), "--concurrency", "1"],
        cwd=REPO, env={**os.environ, ENV_DIR: str(base)}, capture_output=True, text=True,
        timeout=90,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    recs = read_records(journal_path(tmp_path / "res", "early"))
    events = [(r["event"], r.get("host") or r.get("run_key")) for r in recs]
    finished = [i for i, (e, _) in enumerate(events) if e == "run_finished"]
    released_at = {h: i for i, (e, h) in enumerate(events) if e == "host_released"}
    assert len(finished) == 2 and set(released_at) == {"a", "b", "c"}
    assert finished[0] < released_at["a"] < finished[1]  # during the long run
    assert released_at["b"] > finished[1] and released_at["c"] > finished[1]
    assert owned(base) == [] and len(released(base)) == 3
