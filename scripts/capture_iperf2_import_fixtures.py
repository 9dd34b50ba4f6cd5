"""Capture iperf 2 outputs for `netfleet import` tests: enhanced text (`-e`) from both ends (TCP
with two streams, TCP `-R`, UDP) and `-y C` CSV from both ends, on loopback, 2 s runs limited
to 100 Mbit/s. Each side's stdout is saved byte for byte; the server is stopped by the PID this
script started.

    .venv/bin/python scripts/capture_iperf2_import_fixtures.py
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "import" / "iperf2"

CASES = {
    "tcp_p2_e": (["-e"], ["-e", "-P", "2", "-b", "50M"]),
    "tcp_reverse_e": (["-e"], ["-e", "-R", "-b", "50M"]),
    "udp_e": (["-e", "-u"], ["-e", "-u", "-b", "10M"]),
    "tcp_csv": (["-y", "C"], ["-y", "C", "-b", "100M"]),
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def capture(name: str, server_extra: list[str], client_extra: list[str]) -> dict[str, object]:
    port = str(free_port())
    server_argv = ["iperf", "-s", "-B", "127.0.0.1", "-p", port, "-i", "1", *server_extra]
    client_argv = ["iperf", "-c", "127.0.0.1", "-p", port, "-i", "1", "-t", "2", *client_extra]
    server = subprocess.Popen(server_argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        time.sleep(0.5)
        client = subprocess.run(client_argv, capture_output=True, timeout=30, check=False)
        time.sleep(1.5)  # the server prints its final lines after the client has gone
    finally:
        server.terminate()  # iperf 2 servers never exit on their own
        try:
            server_out, _ = server.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            server.kill()
            server_out, _ = server.communicate()
    (OUT / f"{name}.client.txt").write_bytes(client.stdout)
    (OUT / f"{name}.server.txt").write_bytes(server_out)
    return {"client_argv": client_argv, "server_argv": server_argv}


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    version = subprocess.run(["iperf", "-v"], capture_output=True, text=True, check=False)
    fixtures = {name: capture(name, s, c) for name, (s, c) in CASES.items()}
    doc = {
        "captured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "version": (version.stdout or version.stderr).strip(),
        "note": "both sides' stdout byte for byte; scripts/capture_iperf2_import_fixtures.py",
        "fixtures": fixtures,
    }
    (OUT / "MANIFEST.json").write_text(json.dumps(doc, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
