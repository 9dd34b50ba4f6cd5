#!/usr/bin/env python3
"""Capture real iperf2, sockperf and ping output on loopback into tests/fixtures/ (never typed
by hand): tests/fixtures/{iperf2,sockperf,ping}/<name>.txt plus a MANIFEST.json per tool with the
exact argv, exit code, stderr and tool version.

    UV_PYTHON_DOWNLOADS=never uv run python scripts/capture_fixtures_text.py

Traffic goes to 127.0.0.1 only; servers are started with Popen and stopped by their PID
(SIGTERM, then SIGKILL: a 2.1.8 UDP server may ignore the first SIGTERM). About 20 s.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import time
from pathlib import Path

HOST = "127.0.0.1"
ROOT = Path(__file__).resolve().parent.parent / "tests" / "fixtures"


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def stop(proc: subprocess.Popen[str]) -> tuple[str, str]:
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.communicate(timeout=2)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.communicate(timeout=5)


def version(argv: list[str]) -> str:
    p = subprocess.run(argv, capture_output=True, text=True, check=False)
    return (p.stdout + p.stderr).strip().splitlines()[0]


def capture(
    tool: str,
    name: str,
    client: list[str],
    server: list[str] | None,
    manifest: dict[str, object],
    udp: bool = False,
) -> None:
    out = ROOT / tool
    out.mkdir(parents=True, exist_ok=True)
    proc = None
    if server is not None:
        proc = subprocess.Popen(server, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(0.5)
    try:
        res = subprocess.run(client, capture_output=True, text=True, timeout=60, check=False)
        time.sleep(0.5 if udp or server is not None else 0)
    finally:
        s_out, s_err = stop(proc) if proc is not None else ("", "")
    (out / f"{name}.txt").write_text(res.stdout)
    if server is not None:
        (out / f"{name}.server.txt").write_text(s_out)
    manifest[name] = {
        "client_argv": client,
        "server_argv": server,
        "exit_code": res.returncode,
        "stderr": res.stderr[-2000:],
        "server_stderr": s_err[-2000:],
    }


def main() -> None:
    m2: dict[str, object] = {"version": version(["iperf", "--version"])}
    p = free_port()
    srv = ["iperf", "-s", "-p", str(p), "-B", HOST, "-y", "C", "-i", "1"]
    cli = ["iperf", "-c", HOST, "-p", str(p), "-y", "C", "-i", "1", "-t", "2"]
    capture("iperf2", "tcp_p2", [*cli, "-P", "2"], srv, m2)
    capture("iperf2", "tcp_reverse", [*cli, "-R"], srv, m2)
    capture("iperf2", "udp_50m", [*cli, "-u", "-b", "50000000"], [*srv, "-u"], m2, udp=True)
    capture("iperf2", "refused", [*cli[:5], str(free_port()), *cli[6:]], None, m2)
    bb = ["iperf", "-c", HOST, "-p", str(p), "--bounceback", "--bounceback-period", "0"]
    bb += ["--len", "90", "--time", "2", "--interval", "1", "--enhanced"]
    capture("iperf2", "bounceback", bb, ["iperf", "-s", "-p", str(p), "-B", HOST], m2)
    (ROOT / "iperf2" / "MANIFEST.json").write_text(json.dumps(m2, indent=2) + "\n")

    ms: dict[str, object] = {"version": version(["sockperf", "--version"])}
    p = free_port()
    srv = ["sockperf", "server", "--ip", HOST, "--port", str(p), "--tcp"]
    cli = ["sockperf", "ping-pong", "--ip", HOST, "--port", str(p), "--tcp", "--msg-size", "90"]
    cli += ["--time", "2", "--mps", "500", "--full-log", "/dev/stdout"]
    capture("sockperf", "pingpong_full_rtt", [*cli, "--full-rtt"], srv, ms)
    capture("sockperf", "pingpong_half", cli, srv, ms)
    (ROOT / "sockperf" / "MANIFEST.json").write_text(json.dumps(ms, indent=2) + "\n")

    mp: dict[str, object] = {"version": version(["ping", "-V"])}
    capture("ping", "loopback_1400", ["ping", "-n", "-c", "20", "-s", "1400", "-i", "0.05",
                                      "-w", "10", HOST], None, mp)  # fmt: skip
    (ROOT / "ping" / "MANIFEST.json").write_text(json.dumps(mp, indent=2) + "\n")


if __name__ == "__main__":
    main()
