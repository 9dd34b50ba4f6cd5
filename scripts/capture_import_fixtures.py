"""Capture iperf3 outputs for `netfleet import` tests: the host's iperf3 (3.12) and Debian 13's
(3.18, via the lab chroot), client and server side, with and without --get-server-output, and
3.18's --json-stream. Loopback only, 2 s runs shaped to 100 Mbit/s.

    .venv/bin/python scripts/capture_import_fixtures.py   # as root (chroot)
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from netfleet.lab.chroot import ensure_root

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "import"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def capture(prefix: list[str], name: str, extra: list[str], manifest: dict[str, object]) -> None:
    port = str(free_port())
    server_argv = [*prefix, "iperf3", "-s", "-1", "-J", "-p", port]
    client_argv = [*prefix, "iperf3", "-c", "127.0.0.1", "-p", port, "-t", "2", "-i", "1"]
    client_argv += ["-b", "100M", *extra]
    server = subprocess.Popen(server_argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        client = subprocess.run(client_argv, capture_output=True, timeout=30, check=False)
        server_out, _ = server.communicate(timeout=30)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    (OUT / f"{name}.client.json").write_bytes(client.stdout)
    (OUT / f"{name}.server.json").write_bytes(server_out)
    manifest[name] = {"client_argv": client_argv, "server_argv": server_argv}


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    chroot = ["chroot", str(ensure_root())]
    manifest: dict[str, object] = {}
    for tag, prefix in (("v3_12", []), ("v3_18", chroot)):
        version = subprocess.run(
            [*prefix, "iperf3", "--version"], capture_output=True, text=True, check=True
        ).stdout.splitlines()[0]
        capture(prefix, f"{tag}_tcp", ["-J"], manifest)
        capture(prefix, f"{tag}_tcp_gso", ["-J", "--get-server-output"], manifest)
        capture(prefix, f"{tag}_udp_reverse", ["-J", "-u", "-R"], manifest)
        if tag == "v3_18":
            capture(prefix, f"{tag}_stream", ["--json-stream"], manifest)
        manifest[f"{tag}_version"] = version
    doc = {
        "captured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "note": "stdout of both sides saved byte for byte; scripts/capture_import_fixtures.py",
        "fixtures": manifest,
    }
    (OUT / "MANIFEST.json").write_text(json.dumps(doc, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
