#!/usr/bin/env python3
"""Capture real iperf3 output on loopback into tests/fixtures/iperf3/ (never hand-written).

Run from the repository root::

    UV_PYTHON_DOWNLOADS=never uv run python scripts/capture_fixtures.py

Every fixture is the client's stdout, byte for byte, of ``iperf3 ... --json --get-server-output``
against a server started here with ``-J`` (or without it for the text-output shape). Traffic goes
to 127.0.0.1 only. Servers are started with Popen and stopped by their PID in ``finally``.
``MANIFEST.json`` records the iperf3 version, each exact argv, the exit code, stderr and what the
tests may expect of each shape (status, direction, resolved params). Takes about 30 s.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from netfleet.engines.params import Iperf3Params

HOST = "127.0.0.1"
OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "iperf3"
CLIENT_TIMEOUT = 30.0


@dataclass
class Capture:
    name: str
    description: str
    client_argv: list[str]
    server_argv: list[str] | None
    exit_code: int
    stdout: str
    stderr: str
    status: str  # what a runner would store: ok | failed | interrupted
    direction: str  # relative to the client as subject: out | in | bidir
    params: dict[str, Any] = field(default_factory=dict)


def iperf3() -> str:
    path = shutil.which("iperf3")
    if path is None:
        sys.exit("iperf3 is not installed (apt-get install iperf3)")
    return path


def free_port() -> int:
    """A TCP and UDP port free on 127.0.0.1 right now."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp:
            tcp.bind((HOST, 0))
            port = int(tcp.getsockname()[1])
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
            try:
                udp.bind((HOST, port))
            except OSError:
                continue
        return port


def listening(port: int) -> bool:
    """Whether something listens on 127.0.0.1:port, read from /proc (no probe connection: a
    one-off iperf3 server would take a probe for its one client)."""
    want = f"0100007F:{port:04X}"
    try:
        lines = Path("/proc/net/tcp").read_text().splitlines()[1:]
    except OSError:
        return False
    return any(ln.split()[1] == want and ln.split()[3] == "0A" for ln in lines)


class Server:
    """An iperf3 server on 127.0.0.1:port, stopped by PID."""

    def __init__(self, port: int, json_output: bool = True) -> None:
        self.argv = [iperf3(), "-s", "-1", "-B", HOST, "-p", str(port)]
        if json_output:
            self.argv.insert(2, "-J")
        self.port = port
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Server:
        self.proc = subprocess.Popen(
            self.argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 5
        while not listening(self.port):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"iperf3 server did not start: {self.argv}")
            time.sleep(0.02)
        return self

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, sig)

    def __exit__(self, *exc: object) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            # a one-off server exits after its client; give it a moment, then stop it by PID
            try:
                self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGTERM)
                try:
                    self.proc.wait(timeout=3)
                except subprocess.TimeoutExpired:
                    os.kill(self.proc.pid, signal.SIGKILL)
                    self.proc.wait()


def client_argv(port: int, *extra: str, duration: int = 3) -> list[str]:
    return [
        iperf3(),
        "-c",
        HOST,
        "-p",
        str(port),
        "-t",
        str(duration),
        "-i",
        "1",
        "--json",
        "--get-server-output",
        *extra,
    ]


def params(
    duration: int = 3,
    *,
    reverse: bool = False,
    bidir: bool = False,
    udp: bool = False,
    **fields: Any,
) -> dict[str, Any]:
    """The params netfleet stores for this run: the real :class:`Iperf3Params` model, dumped as
    the runner does (``direction`` relative to the client as subject, ``protocol``), so the
    fixtures cannot drift from what a real run writes. ``reverse``/``bidir``/``udp`` are the
    iperf3 flags the capture passes."""
    direction = "bidir" if bidir else "in" if reverse else "out"
    model = Iperf3Params.model_validate(
        {
            "duration": duration,
            "direction": direction,
            "protocol": "udp" if udp else "tcp",
            **fields,
        }
    )
    return model.model_dump()


def run_client(argv: list[str]) -> tuple[int, str, str]:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=CLIENT_TIMEOUT, check=False)
    return done.returncode, done.stdout, done.stderr


def normal(
    name: str,
    description: str,
    extra: list[str],
    direction: str,
    json_server: bool = True,
    duration: int = 3,
    **param: Any,
) -> Capture:
    port = free_port()
    argv = client_argv(port, *extra, duration=duration)
    with Server(port, json_output=json_server) as server:
        code, out, err = run_client(argv)
    return Capture(
        name,
        description,
        argv,
        server.argv,
        code,
        out,
        err,
        "ok",
        direction,
        params(duration, **param),
    )


def refused() -> Capture:
    port = free_port()  # nothing listens there
    argv = client_argv(port)
    code, out, err = run_client(argv)
    return Capture(
        "err_refused",
        "no server: connection refused",
        argv,
        None,
        code,
        out,
        err,
        "failed",
        "out",
        params(),
    )


def busy() -> Capture:
    port = free_port()
    first = client_argv(port)
    second = client_argv(port, duration=1)
    with Server(port) as server:
        runner = subprocess.Popen(first, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(0.7)
            code, out, err = run_client(second)
        finally:
            try:
                runner.wait(timeout=CLIENT_TIMEOUT)
            except subprocess.TimeoutExpired:
                os.kill(runner.pid, signal.SIGKILL)
                runner.wait()
    return Capture(
        "err_busy",
        "a second client while the one-off server runs a test",
        second,
        server.argv,
        code,
        out,
        err,
        "failed",
        "out",
        params(1),
    )


def mid_test(
    name: str, description: str, act: Callable[[Server, subprocess.Popen[str]], None], status: str
) -> Capture:
    port = free_port()
    argv = client_argv(port)
    with Server(port) as server:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            time.sleep(1.5)
            act(server, proc)
            out, err = proc.communicate(timeout=CLIENT_TIMEOUT)
        finally:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
    return Capture(
        name, description, argv, server.argv, proc.returncode, out, err, status, "out", params()
    )


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    version = subprocess.run(
        [iperf3(), "--version"], capture_output=True, text=True, check=True
    ).stdout.splitlines()[0]
    started = time.monotonic()
    captures = [
        normal("tcp_1stream", "TCP, one stream, 3 s", [], "out"),
        normal("tcp_p2", "TCP, two parallel streams (-P 2)", ["-P", "2"], "out", parallel=2),
        normal("tcp_reverse", "TCP reverse (-R): the server sends", ["-R"], "in", reverse=True),
        normal("tcp_bidir", "TCP both ways at once (--bidir)", ["--bidir"], "bidir", bidir=True),
        normal(
            "udp_50m",
            "UDP at 50 Mbit/s (-u -b 50M)",
            ["-u", "-b", "50M"],
            "out",
            udp=True,
            bitrate="50M",
        ),
        normal("tcp_omit1", "TCP with the first second omitted (-O 1)", ["-O", "1"], "out", omit=1),
        normal(
            "tcp_server_text",
            "server without -J: server_output_text instead of _json",
            [],
            "out",
            json_server=False,
            duration=2,
        ),
        refused(),
        busy(),
        mid_test(
            "err_server_killed",
            "server killed (SIGKILL by PID) after ~1.5 s",
            lambda server, _proc: server.kill(signal.SIGKILL),
            "failed",
        ),
        mid_test(
            "err_client_sigint",
            "client interrupted with SIGINT after ~1.5 s",
            lambda _server, proc: proc.send_signal(signal.SIGINT),
            "interrupted",
        ),
    ]
    manifest: dict[str, Any] = {
        "iperf3_version": version,
        "captured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "kernel": platform.release(),
        "note": "client stdout saved byte for byte; written by scripts/capture_fixtures.py",
        "fixtures": {},
    }
    for cap in captures:
        json.loads(cap.stdout)  # every shape, errors included, must be valid JSON
        (OUT / f"{cap.name}.json").write_text(cap.stdout)
        manifest["fixtures"][cap.name] = {
            "description": cap.description,
            "client_argv": cap.client_argv,
            "server_argv": cap.server_argv,
            "exit_code": cap.exit_code,
            "stderr": cap.stderr,
            "status": cap.status,
            "direction": cap.direction,
            "params": cap.params,
        }
        print(f"{cap.name:20s} exit {cap.exit_code}  {len(cap.stdout):7d} bytes")
    (OUT / "MANIFEST.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"{len(captures)} fixtures in {OUT} ({time.monotonic() - started:.1f} s)")


if __name__ == "__main__":
    main()
