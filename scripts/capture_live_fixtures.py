"""Capture real iperf3 *live* outputs for the parser tests (never hand-written).

- 3.12 (this host): a text server with ``--forceflush --format k`` — the live series before
  3.17 — for 1 and 2 streams, with ``-O 1``, and in reverse;
- 3.18 (optional, a Debian 13 root given with --trixie DIR): the client's ``--json-stream``,
  normal and interrupted with SIGINT.

All traffic is on loopback; every process is stopped by its PID.

    uv run python scripts/capture_live_fixtures.py [--trixie /var/cache/netfleet/trixie]
"""

from __future__ import annotations

import argparse
import json
import signal
import socket
import subprocess
import time
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "iperf3_live"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_listening(port: int) -> None:
    for _ in range(100):
        out = subprocess.run(["ss", "-Hltn", f"sport = :{port}"], capture_output=True, text=True)
        if out.stdout.strip():
            return
        time.sleep(0.05)
    raise RuntimeError(f"server on {port} never listened")


def run_pair(
    prefix: list[str],
    server_args: list[str],
    client_args: list[str],
    interrupt_after: float | None = None,
) -> tuple[str, str, int]:
    port = free_port()
    server = subprocess.Popen(
        [*prefix, "iperf3", "-s", "-1", "-p", str(port), *server_args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_listening(port)
        client = subprocess.Popen(
            [*prefix, "iperf3", "-c", "127.0.0.1", "-p", str(port), *client_args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            if interrupt_after is not None:
                time.sleep(interrupt_after)
                client.send_signal(signal.SIGINT)
            cout, _ = client.communicate(timeout=30)
        finally:
            if client.poll() is None:
                client.kill()
                client.wait()
        sout, _ = server.communicate(timeout=10)
        return sout, cout, client.returncode
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--trixie", type=Path, help="a Debian 13 root with iperf3 3.18")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, dict[str, object]] = {}
    text_server = ["--forceflush", "--format", "k", "-i", "1"]
    cases = {
        "text_server_p1": ["-t", "3", "-b", "100M", "--json", "--get-server-output"],
        "text_server_p2": ["-t", "3", "-b", "50M", "-P", "2", "--json", "--get-server-output"],
        "text_server_omit": ["-t", "3", "-O", "1", "-b", "100M", "--json"],
        "text_server_reverse": ["-t", "3", "-R", "-b", "100M", "--json"],
    }
    version = subprocess.run(["iperf3", "--version"], capture_output=True, text=True).stdout
    for name, client_args in cases.items():
        sout, cout, rc = run_pair([], text_server, client_args)
        (OUT / f"{name}.txt").write_text(sout)
        (OUT / f"{name}.client.json").write_text(cout)
        manifest[name] = {
            "iperf3": version.splitlines()[0],
            "server": text_server,
            "client": client_args,
            "client_rc": rc,
        }
    if args.trixie:
        prefix = ["chroot", str(args.trixie)]
        v18 = subprocess.run(
            [*prefix, "iperf3", "--version"], capture_output=True, text=True
        ).stdout.splitlines()[0]
        stream = ["-t", "3", "-b", "100M", "--json-stream", "--get-server-output"]
        for name, after in (("json_stream", None), ("json_stream_sigint", 1.6)):
            _, cout, rc = run_pair(prefix, ["-J"], stream, interrupt_after=after)
            (OUT / f"{name}.jsonl").write_text(cout)
            manifest[name] = {
                "iperf3": v18,
                "server": ["-J"],
                "client": stream,
                "client_rc": rc,
                "sigint_after_s": after,
            }
    (OUT / "MANIFEST.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"wrote {len(manifest)} fixtures to {OUT}")


if __name__ == "__main__":
    main()
