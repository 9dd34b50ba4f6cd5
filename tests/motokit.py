"""moto's server as its own process on loopback: the AWS emulator the S3 and cloud tests use.

``moto_server()`` starts moto's server (``tests/motoserve.py``: ``python -m moto.server`` with
DescribeInstanceTypes paginated as AWS does; a process forked from a pre-loaded one,
tests/forkkit.py) on a free 127.0.0.1 port, waits until it answers,
points ``AWS_ENDPOINT_URL`` at it (with dummy credentials and the loopback-only guard), and
stops the process by the PID it started — also when the test fails.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests import forkkit

ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "NETFLEET_AWS_LOOPBACK_ONLY": "1",
    # the emulation in front of moto (netfleet_sim.awsfaults): AWS's DryRun answers always;
    # the fault profiles only where a test names them (NETFLEET_AWS_FAULTS)
    "NETFLEET_PLUGINS": "netfleet_sim.awsfaults",
}


#: the netfleet processes the cloud tests start (dozens: kill -9 walks, fault profiles) and
#: moto's server keep their compiled bytecode in the virtualenv (ours, not the tree, not a
#: shared /tmp), so that each does not compile its ~550 modules afresh where
#: ``PYTHONDONTWRITEBYTECODE`` is set (about 1 CPU-second per process)
PYCACHE = {"PYTHONPYCACHEPREFIX": str(Path(sys.prefix) / "netfleet-test-pycache")}
NO_PYC = "PYTHONDONTWRITEBYTECODE"


def bytecode_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` with the bytecode cache above (see :data:`PYCACHE`)."""
    return {**{k: v for k, v in env.items() if k != NO_PYC}, **PYCACHE}


#: the environment that loads the kill points (``NETFLEET_FAULT_AT``) into a netfleet process
KILL_POINTS = {"NETFLEET_PLUGINS": "netfleet_sim.awsfaults,netfleet_sim.faults"}


#: moto's server with DescribeInstanceTypes paginated as AWS does (tests/motoserve.py), forked
#: from a process that has imported moto and its backends (tests/forkkit.py: ~2-3.5 CPU-seconds
#: a server, and the suite starts dozens)
SERVE = "from tests.motoserve import serve; serve()"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class MotoServer:
    def __init__(self, proc: forkkit.Forked, url: str) -> None:
        self.proc = proc
        self.url = url

    def reset(self) -> None:
        """Forget every resource (moto's own reset endpoint)."""
        req = urllib.request.Request(self.url + "/moto-api/reset", method="POST")
        urllib.request.urlopen(req, timeout=10).read()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def start_moto_server(timeout: float = 30.0, env: dict[str, str] | None = None) -> MotoServer:
    """``env``: added to the server's environment (e.g. ``MOTO_AMIS_PATH``)."""
    port = free_port()
    proc = forkkit.start(
        SERVE,
        ["-H", "127.0.0.1", "-p", str(port)],
        bytecode_env({**os.environ, **(env or {})}),
        pool="moto",
        capture=False,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(url + "/moto-api/data.json", timeout=2).read()
            return MotoServer(proc, url)
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                raise RuntimeError(f"moto server did not start on {url}") from None
            time.sleep(0.1)


@contextmanager
def moto_server(
    monkeypatch: pytest.MonkeyPatch | None = None, env: dict[str, str] | None = None
) -> Iterator[MotoServer]:
    """A running moto server with the AWS environment pointed at it (restored afterwards)."""
    server = start_moto_server(env=env)
    saved = {k: os.environ.get(k) for k in [*ENV, *PYCACHE, "AWS_ENDPOINT_URL", NO_PYC]}
    os.environ.update({**ENV, **PYCACHE})
    os.environ.pop(NO_PYC, None)
    os.environ["AWS_ENDPOINT_URL"] = server.url
    try:
        yield server
    finally:
        server.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(scope="module")
def moto() -> Iterator[MotoServer]:
    """One moto server per test module (import this fixture into the module)."""
    with moto_server() as srv:
        yield srv


@pytest.fixture
def fresh(moto: MotoServer) -> MotoServer:
    """The module's moto server with its state reset for this test."""
    moto.reset()
    return moto
