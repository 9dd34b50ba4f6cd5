"""A campaign journal in a shared results root cannot make root signal a process netfleet did
not start (issue 23 item 1; docs/security.md "Stopping processes").

Every process here is started by the test and stopped by the test, by its PID, in a finally.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from netfleet.hosts.base import LAUNCH_TOKEN_ENV
from netfleet.hosts.local import LocalHost
from netfleet.runner.journal import Journal, journal_path, launch_proof, read_records
from netfleet.runner.strays import local_identity, sweep
from tests.killkit import wait_exec
from tests.test_resume import alive

NOBODY = 65534


@pytest.fixture
def victims() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Processes netfleet never started (``setsid sleep 7777`` and the like), stopped by PID."""
    started: list[subprocess.Popen[bytes]] = []
    try:
        yield started
    finally:
        for proc in started:
            if proc.poll() is None:
                proc.kill()
            proc.wait()


def victim(
    victims: list[subprocess.Popen[bytes]], *argv: str, **kw: object
) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(["setsid", *argv], **kw)  # type: ignore[call-overload]
    victims.append(proc)
    wait_exec(proc.pid, argv[0])  # setsid execs the victim's own argv
    return proc


def forge(path: Path, pid: int, argv: list[str], **extra: object) -> None:
    """Append what an attacker who can write the results root and read /proc would write: the
    victim's world-readable identity (start time, boot id, network namespace)."""
    ident = local_identity(pid)
    assert ident is not None
    rec = {"event": "process", "host": "a", "pid": pid, "argv": argv, "role": "server"}
    rec |= {"run_key": "x", "identity": ident, **extra}
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fh.write(json.dumps(rec) + "\n")


def sweep_once(path: Path) -> tuple[dict[str, int], list[str]]:
    said: list[str] = []
    with Journal(path) as j:
        counts = asyncio.run(sweep(j, {"a": LocalHost("a", "127.0.0.1")}, said.append))
    return counts, said


def test_forged_records_never_make_root_signal_a_process_it_did_not_start(
    tmp_path: Path, victims: list[subprocess.Popen[bytes]]
) -> None:
    """The issue's repro (argv suffix ["7777"]) and every stronger forgery an attacker can write:
    the full argv, a proof made with a token of the attacker's choosing, a token planted in the
    environment of a process the attacker owns (which then runs as another uid)."""
    path = journal_path(tmp_path / "r", "c")
    sleeper = victim(victims, "sleep", "7777")
    forge(path, sleeper.pid, ["7777"])  # the repro: argv matching only the end
    assert sweep_once(path)[0] == {"replaced": 1}
    forge(path, sleeper.pid, ["sleep", "7777"])  # the whole argv, without any proof
    counts, said = sweep_once(path)
    assert counts == {"unverified": 1}
    assert any("no proof" in m and "by hand" in m for m in said), said
    mine = secrets.token_hex(16)  # a proof made with a token the victim does not carry
    forge(path, sleeper.pid, ["sleep", "7777"], proof=launch_proof(mine, path, "a", sleeper.pid))
    counts, said = sweep_once(path)
    assert counts == {"unverified": 1}
    assert any("launch token" in m for m in said), said
    assert alive(sleeper.pid), "a process netfleet did not start must survive"

    # the attacker's own process, with the token of their choosing in its environment
    token = secrets.token_hex(16)
    env = {**os.environ, LAUNCH_TOKEN_ENV: token}
    theirs = victim(victims, "sleep", "7778", env=env, user=NOBODY, group=NOBODY)
    forge(path, theirs.pid, ["sleep", "7778"], proof=launch_proof(token, path, "a", theirs.pid))
    counts, said = sweep_once(path)
    assert counts == {"unverified": 1}
    assert any("does not run as netfleet's user" in m for m in said), said
    assert alive(theirs.pid) and alive(sleeper.pid)


def test_a_record_copied_from_another_journal_does_not_verify(tmp_path: Path) -> None:
    """netfleet's own process, journaled by campaign a: a copy of its record in campaign b's
    journal proves nothing; campaign a stops it."""
    host = LocalHost("a", "127.0.0.1")
    mine = journal_path(tmp_path / "r", "a")
    other = journal_path(tmp_path / "r", "b")

    async def scenario() -> None:
        proc = await host.start(["sleep", "7779"])
        try:
            assert proc.launch_token
            ident = local_identity(proc.pid)
            with Journal(mine) as j:
                j.process("k", "a", proc.pid, ["sleep", "7779"], "server", ident, proc.launch_token)
            assert proc.launch_token not in mine.read_text(), "the token is never written"
            (line,) = [r for r in read_records(mine) if r["event"] == "process"]
            other.write_text(json.dumps(line) + "\n")
            with Journal(other) as j:
                assert await sweep(j, {"a": host}) == {"unverified": 1}
            assert proc.returncode is None
            with Journal(mine) as j:
                assert await sweep(j, {"a": host}) == {"killed": 1}
            assert await proc.wait(5) == -signal.SIGTERM
        finally:
            await proc.stop(grace=1, first=signal.SIGKILL)

    asyncio.run(scenario())


CAMPAIGN = """\
campaign: c
hosts:
  a: {kind: local}
  b: {kind: local}
tests:
  - {name: quick, client: a, server: b, params: {duration: 1, bitrate: 10mbit}}
"""


def test_netfleet_run_leaves_a_forged_stray_alone(
    tmp_path: Path, victims: list[subprocess.Popen[bytes]]
) -> None:
    """The issue's repro end to end: `netfleet run --results RESULTS` with a forged record for
    `setsid sleep 7777` must not say "stopped a stray", and the process must live."""
    spec = tmp_path / "c.yaml"
    spec.write_text(textwrap.dedent(CAMPAIGN))
    results = tmp_path / "r"
    sleeper = victim(victims, "sleep", "7777")
    path = journal_path(results, "c")
    forge(path, sleeper.pid, ["7777"])
    forge(path, sleeper.pid, ["sleep", "7777"])
    res = subprocess.run(
        [sys.executable, "-m", "netfleet", "run", str(spec), "--results", str(results)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert "stopped a stray" not in res.stdout
    assert "left sleep" in res.stdout
    assert alive(sleeper.pid)


SSH_CAMPAIGN = """\
campaign: k
hosts:
  far: {{kind: ssh, address: 127.0.0.1, port: 9, key: {key}, known_hosts: {known}}}
  a: {{kind: local}}
tests:
  - {{name: quick, client: a, server: far, params: {{duration: 1}}}}
"""


def _encrypted_key() -> bytes:
    import asyncssh

    key = asyncssh.generate_private_key("ecdsa-sha2-nistp256")
    return bytes(key.export_private_key("pkcs8-pem", passphrase="pw"))


@pytest.mark.parametrize(
    "content",
    [
        b"not a key at all\n",
        b"-----BEGIN OPENSSH PRIVATE KEY-----\n",
        b"not a key at all\n" * 5000,  # over 64 KiB: not read whole
        _encrypted_key(),
    ],
    ids=["text", "truncated", "oversized", "encrypted"],
)
def test_a_key_file_that_is_not_a_key_is_an_input_error(tmp_path: Path, content: bytes) -> None:
    """issue 23 item 12: exit 2 naming the file and the spec field, no KeyImportError traceback
    (and nothing of the file's content echoed)."""
    key = tmp_path / "notakey"
    key.write_bytes(content)
    known = tmp_path / "known_hosts"
    known.write_text("")
    spec = tmp_path / "k.yaml"
    spec.write_text(SSH_CAMPAIGN.format(key=key, known=known))
    res = subprocess.run(
        [sys.executable, "-m", "netfleet", "run", str(spec), "--results", str(tmp_path / "r")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 2, res.stdout + res.stderr
    assert str(key) in res.stderr and "hosts.far.key" in res.stderr
    assert "Traceback" not in res.stderr and "not a key at all" not in res.stdout + res.stderr
