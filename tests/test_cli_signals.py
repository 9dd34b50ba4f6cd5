"""Ctrl-C and SIGTERM on a real `netfleet run`: exit 130, servers gone, completed results kept."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from netfleet.store import ResultsRoot

SPEC = """\
campaign: sig
hosts:
  a: {kind: local}
  b: {kind: local}
tests:
  - {name: quick, client: a, server: b, params: {duration: 1, bitrate: 50mbit}}
  - {name: long, client: a, server: b, params: {duration: 60, bitrate: 50mbit}}
"""


def children_named(ppid: int, name: str) -> list[int]:
    out = subprocess.run(
        ["ps", "-eo", "pid,ppid,comm"], capture_output=True, text=True, check=True
    ).stdout.splitlines()[1:]
    return [
        int(p)
        for p, pp, comm in (line.split(None, 2) for line in out)
        if int(pp) == ppid and comm.strip() == name
    ]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_stops_run_cleanly(tmp_path: Path, sig: signal.Signals) -> None:
    spec = tmp_path / "s.yaml"
    spec.write_text(textwrap.dedent(SPEC))
    results = tmp_path / "res"
    proc = subprocess.Popen(
        [sys.executable, "-m", "netfleet", "run", str(spec), "--results", str(results)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 90  # a wait bound, not a speed claim
        # first the quick run's result (its own two iperf3 would fool the wait below)
        while time.monotonic() < deadline and not list(results.rglob("*.json.gz")):
            time.sleep(0.1)
        # wait until the long run's client and server are both up
        while time.monotonic() < deadline and len(children_named(proc.pid, "iperf3")) < 2:
            time.sleep(0.1)
        assert len(children_named(proc.pid, "iperf3")) == 2, "long run never started"
        servers = children_named(proc.pid, "iperf3")
        time.sleep(1.5)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pipe in (proc.stdout, proc.stderr):  # left open when communicate timed out
            if pipe is not None:
                pipe.close()
    assert proc.returncode == 130, err
    assert "interrupted: 1 of 2 runs completed" in err
    docs = sorted(
        (ResultsRoot.read(f) for f in ResultsRoot(results).files()), key=lambda d: d["sequence"]
    )
    assert [d["status"] for d in docs] == ["ok", "interrupted"]
    for pid in servers:
        assert (
            not Path(f"/proc/{pid}").exists()
            or "zombie" in Path(f"/proc/{pid}/status").read_text().lower()
        )
