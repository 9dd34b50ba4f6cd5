"""Processes the suite starts dozens of times, forked from one that has imported what they
import: the kill -9 walks' netfleet controllers (each fresh ``python -c …`` spent ~1.5 CPU-s
importing netfleet and boto3 and parsing botocore's service models) and moto's servers (~2-3.5
CPU-s importing moto and its backends).

A fork server (:func:`serve`, its own process, one per pytest process and pool, started on first
use) pre-loads its pool: "netfleet" imports the cloud sub-app and boto3 and loads the service
models of every AWS service netfleet calls into ``netfleet.aws``'s shared loader (what one
netfleet process does for its second client); "moto" imports moto's server and backends, under
the variables moto reads when imported (a server per set of their values). Each :func:`start`
forks it: the child takes the caller's environment, working directory, arguments
(``sys.argv``) and stdout/stderr, runs the ``python -c`` code it is given, and ends as that
process would (``SystemExit``'s code, 1 for an exception, -9 when it SIGKILLs itself at a kill
point). It is a real separate process: :class:`Forked` has its pid (the test may SIGKILL it)
and its exit status, as ``subprocess.Popen`` has.

Only for code whose behaviour does not depend on the environment at import time (the cloud
sub-app, the Fargate controller, moto with the variables above): the server imported those
modules under its own environment. A server exits when the pytest process that started it does
(the pipe it watches closes), SIGKILLing any child still running.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Any

#: what the server imports before forking (the cloud sub-app and the Fargate controller's code)
PRELOAD = [
    "netfleet.cli.boundary",
    "netfleet.cli.cmd_cloud",
    "netfleet.cloud.aws.acquire.fargate",
    "netfleet.cloud.aws.acquire.provision",
    "netfleet.cloud.aws.measure",
    "netfleet.cloud.aws.plan.permissions",
    "netfleet.cloud.aws.provider",
    "netfleet.cloud.aws.release.teardown",
    "netfleet.cloud.lifecycle",
    "netfleet.hosts.ssh",
    "netfleet.hosts.netns",
    "rich.table",
    "boto3",
]
#: the services whose models the server parses once (every ``aws.client(...)`` netfleet makes)
SERVICES = ["ec2", "ecs", "sts", "iam", "logs", "pricing", "ssm", "cloudwatch", "s3",
            "service-quotas"]  # fmt: skip
#: moto's backends the suite calls (its server imports a service's on that service's first call)
MOTO_BACKENDS = ["ec2", "s3", "iam", "sts", "ecs", "logs", "ssm", "cloudwatch"]
#: the variables moto reads when imported (moto.settings' constants, MOTO_AMIS_PATH): a moto
#: server is forked from a pre-loaded one imported under the same values
MOTO_IMPORT_ENV = ("MOTO_", "TEST_", "TESTS_", "INITIAL_NO_AUTH_ACTION_COUNT",
                   "DEFAULT_CONTAINER_REGISTRY", "S3_")  # fmt: skip
ROOT = Path(__file__).resolve().parent.parent
#: the running servers: (pool, the environment it was imported under) → (process, socket)
_servers: dict[tuple[str, tuple[tuple[str, str], ...]], tuple[subprocess.Popen[bytes], str]] = {}
_lock = threading.Lock()


class Forked:
    """A forked process, as much of ``subprocess.Popen`` as the tests use (text mode)."""

    def __init__(self, args: list[str], conn: socket.socket, out: Any, err: Any) -> None:
        self.args = args
        self._conn, self._out, self._err = conn, out, err
        self._buf = b""
        self.pid: int = int(self._message(None)["pid"])
        self.returncode: int | None = None
        self._texts: tuple[str, str] | None = None

    def _message(self, timeout: float | None) -> dict[str, Any]:
        self._conn.settimeout(timeout)
        while b"\n" not in self._buf:
            chunk = self._conn.recv(4096)
            if not chunk:
                raise RuntimeError("the fork server went away")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return dict(json.loads(line))

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                self.returncode = int(self._message(0)["status"])
            except (BlockingIOError, TimeoutError):
                return None
            self._conn.close()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            try:
                self.returncode = int(self._message(timeout)["status"])
            except TimeoutError:
                raise subprocess.TimeoutExpired(self.args, timeout or 0) from None
            self._conn.close()
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        """Wait for the end (``timeout``: ``subprocess.TimeoutExpired``, the process left as it
        is, as ``Popen.communicate`` does) and return what it wrote to stdout and stderr."""
        self.wait(timeout)
        if self._texts is None:
            if self._out.closed:  # not captured
                return "", ""
            texts = []
            for f in (self._out, self._err):
                f.seek(0)
                texts.append(f.read().decode("utf-8", errors="replace"))
                f.close()
            self._texts = (texts[0], texts[1])
        return self._texts


def start(
    code: str,
    args: list[str],
    env: dict[str, str],
    cwd: Path | None = None,
    *,
    pool: str = "netfleet",
    capture: bool = True,
) -> Forked:
    """``python -c code *args`` with ``env`` (the whole environment) in ``cwd``, forked from the
    pre-loaded server of ``pool`` ("netfleet"; "moto": moto's server, its backends imported);
    stdout and stderr kept for ``communicate`` (else to /dev/null: ``capture=False``)."""
    address = _address(pool, env)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(address)
    if capture:
        out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()  # noqa: SIM115 (Forked's)
    else:
        out = err = open(os.devnull, "r+b")  # noqa: SIM115 (closed once sent)
    request = {"code": code, "argv": ["-c", *args], "env": env, "cwd": str(cwd or Path.cwd())}
    socket.send_fds(conn, [json.dumps(request).encode() + b"\n"], [out.fileno(), err.fileno()])
    if not capture:
        out.close()
    return Forked(["python", "-c", code, *args], conn, out, err)


def run(
    code: str, args: list[str], env: dict[str, str], timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """As ``subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True,
    text=True, timeout=timeout)``; the process is SIGKILLed when ``timeout`` passes."""
    proc = start(code, args, env)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
        raise
    return subprocess.CompletedProcess(proc.args, proc.wait(), out, err)


def _address(pool: str, child_env: dict[str, str]) -> str:
    """The socket of ``pool``'s server for a child of ``child_env``, the server started first
    if this process has none yet (a moto server: none imported under the same values)."""
    if pool == "moto":
        env = dict(child_env)
        key = tuple(sorted((k, v) for k, v in env.items() if k.startswith(MOTO_IMPORT_ENV)))
    else:  # netfleet reads its variables when it runs, not when imported; no plugin loaded
        env = {k: v for k, v in os.environ.items() if not k.startswith("NETFLEET_")}
        key = ()
    with _lock:
        running = _servers.get((pool, key))
        if running is not None and running[0].poll() is None:
            return running[1]
        address = os.path.join(tempfile.mkdtemp(prefix="nf-forkkit-"), "s")
        alive_r, alive_w = os.pipe()  # the server reads EOF here when this process ends
        proc = subprocess.Popen(
            [sys.executable, "-c", "from tests.forkkit import serve; serve()", address, pool],
            stdin=alive_r,
            stdout=subprocess.DEVNULL,
            cwd=ROOT,
            env=env,
            pass_fds=(),
        )
        os.close(alive_r)
        os.set_inheritable(alive_w, False)
        deadline = time.monotonic() + 60
        while not os.path.exists(address):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the fork server did not start ({proc.returncode})")
            time.sleep(0.02)
        _servers[(pool, key)] = (proc, address)
        atexit.register(_stop, proc, alive_w)
        return address


def _stop(proc: subprocess.Popen[bytes], alive_w: int) -> None:
    os.close(alive_w)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


# -- the server ---------------------------------------------------------------------------------
def serve() -> None:
    """The fork server's main: pre-load, then fork a child per request until stdin closes."""
    address, pool = sys.argv[1:3]
    (_preload_moto if pool == "moto" else _preload)()
    sig_r, sig_w = os.pipe()
    os.set_blocking(sig_r, False)
    os.set_blocking(sig_w, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(sig_w)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(address + ".tmp")
    listener.listen(16)
    os.rename(address + ".tmp", address)  # the client waits for this name
    children: dict[int, socket.socket] = {}
    with selectors.DefaultSelector() as sel:
        sel.register(listener, selectors.EVENT_READ)
        sel.register(0, selectors.EVENT_READ)
        sel.register(sig_r, selectors.EVENT_READ)
        while True:
            ready = {key.fileobj for key, _ in sel.select()}
            if 0 in ready and not os.read(0, 1):
                break
            if sig_r in ready:
                with contextlib.suppress(BlockingIOError):
                    os.read(sig_r, 512)  # the SIGCHLD wake-ups: the reaping below follows
            if listener in ready:
                conn, _ = listener.accept()
                pid = _fork_one(conn, listener, sig_r, sig_w)
                if pid:
                    children[pid] = conn
            _reap(children)
    for pid in children:  # the pytest process ended first: nothing of ours outlives it
        os.kill(pid, signal.SIGKILL)
    os.unlink(address)
    os.rmdir(os.path.dirname(address))


def _reap(children: dict[int, socket.socket]) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = children.pop(pid, None)
        if conn is not None:
            with contextlib.suppress(OSError):  # OSError: the test went away
                conn.sendall(json.dumps({"status": os.waitstatus_to_exitcode(status)}).encode()
                             + b"\n")  # fmt: skip
            conn.close()


def _preload() -> None:
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    from netfleet import aws

    for service in SERVICES:  # the models land in aws's shared loader (no request is sent)
        aws.client(service, "us-east-1", endpoint_url="http://127.0.0.1:9",
                   aws_access_key_id="x", aws_secret_access_key="x")  # fmt: skip


def _preload_moto() -> None:
    from moto.backends import get_backend

    from tests import motoserve

    motoserve.patch()
    for name in MOTO_BACKENDS:
        get_backend(name)  # type: ignore[call-overload]


def _fork_one(conn: socket.socket, listener: socket.socket, sig_r: int, sig_w: int) -> int:
    """Fork the child for the request on ``conn``; its pid (0 when the request was bad)."""
    data, fds, _, _ = socket.recv_fds(conn, 1 << 20, 2)
    request = json.loads(data)
    pid = os.fork()
    if pid:
        for fd in fds:
            os.close(fd)
        conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
        return pid
    # the child: from here on it is the netfleet process the test asked for
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for f in (listener, conn):
            f.close()
        os.close(sig_r)
        os.close(sig_w)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        os.dup2(fds[0], 1)
        os.dup2(fds[1], 2)
        for fd in fds:
            os.close(fd)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        enc = request["env"].get("PYTHONIOENCODING", "utf-8").split(":")[0] or "utf-8"
        sys.stdin = open(0, closefd=False)  # noqa: SIM115 (the process's own, never closed)
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding=enc)
        sys.stderr = io.TextIOWrapper(
            io.FileIO(2, "w", closefd=False), encoding=enc, errors="backslashreplace",
            line_buffering=True,
        )  # fmt: skip
        sys.argv = list(request["argv"])
        code = _run(request["code"])
    finally:
        os._exit(code)


def _run(source: str) -> int:
    """Run ``source`` as ``python -c`` would and end as it would (threads joined, atexit run,
    streams flushed); the exit code."""
    code = 0
    try:
        exec(compile(source, "<string>", "exec"), {"__name__": "__main__"})
    except SystemExit as exc:
        if exc.code is None:
            code = 0
        elif isinstance(exc.code, int):
            code = exc.code
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    threading._shutdown()  # type: ignore[attr-defined]  # as the interpreter's exit does
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError):
            stream.flush()
    return code
