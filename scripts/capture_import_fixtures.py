"""Capture iperf3 outputs for `netfleet import` tests, both sides byte for byte, from every iperf3
this machine can run: the host's (Debian 12: 3.12) and the Debian roots the lab builds with
``netfleet.lab.chroot.ensure_root`` (bullseye: 3.9, trixie: 3.18, sid: the newest). Each version
runs the same cases (TCP, TCP --get-server-output, UDP -R with and without it, -O, and UDP -R -O
with server output, the shape of the public 3.17.1 file; --json-stream from 3.17) and the files
are named after the version found (``v3_9_tcp.client.json``, ...).

Every run goes between two namespaces of this script's own (``nfcap<pid>s`` / ``nfcap<pid>c``,
a veth on 198.18.251.0/30), 2–3 s at ``-b 100M``; the server is stopped by the PID this script
started and both namespaces are deleted on the way out, also on failure.

    .venv/bin/python scripts/capture_import_fixtures.py              # every suite (as root)
    .venv/bin/python scripts/capture_import_fixtures.py bullseye sid # only these; others kept

Needs root, and debootstrap plus the Debian mirror the first time a root is built (cached in
/var/cache/netfleet). Tests never run this: the fixtures and MANIFEST.json are committed.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from netfleet.lab.chroot import ensure_root

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "import"
SUITES = ("host", "bullseye", "trixie", "sid")  # host = this machine's own iperf3
SERVER_ADDR, CLIENT_ADDR = "198.18.251.1", "198.18.251.2"
PORT = "5201"  # the namespaces are private: nothing else listens there
CASES: dict[str, list[str]] = {
    "tcp": ["-J"],
    "tcp_gso": ["-J", "--get-server-output"],
    "udp_reverse": ["-J", "-u", "-R"],
    "udp_reverse_gso": ["-J", "-u", "-R", "--get-server-output"],
    "tcp_omit": ["-J", "-O", "1", "-t", "3"],
    "udp_reverse_omit_gso": ["-J", "-u", "-R", "-O", "1", "-t", "3", "--get-server-output"],
    "stream": ["--json-stream"],  # 3.17+
}


def sh(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True, timeout=30)


@contextlib.contextmanager
def namespaces() -> Iterator[tuple[str, str]]:
    """Two fresh namespaces joined by a veth; deleted afterwards (only the ones made here)."""
    tag = f"nfcap{os.getpid()}"
    server_ns, client_ns = f"{tag}s", f"{tag}c"
    made: list[str] = []
    try:
        for ns in (server_ns, client_ns):
            sh("ip", "netns", "add", ns)
            made.append(ns)
        sh("ip", "link", "add", "nfcapsrv", "netns", server_ns, "type", "veth",
           "peer", "nfcapcli", "netns", client_ns)  # fmt: skip
        ends = ((server_ns, "nfcapsrv", SERVER_ADDR), (client_ns, "nfcapcli", CLIENT_ADDR))
        for ns, dev, addr in ends:
            sh("ip", "-n", ns, "addr", "add", f"{addr}/30", "dev", dev)
            sh("ip", "-n", ns, "link", "set", dev, "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        yield server_ns, client_ns
    finally:
        for ns in reversed(made):
            subprocess.run(["ip", "netns", "del", ns], check=False, capture_output=True)


def capture(
    nss: tuple[str, str], prefix: list[str], name: str, extra: list[str]
) -> dict[str, object]:
    server_ns, client_ns = nss
    server_argv = [*prefix, "iperf3", "-s", "-1", "-J", "-B", SERVER_ADDR, "-p", PORT]
    client_argv = [*prefix, "iperf3", "-c", SERVER_ADDR, "-p", PORT, "-t", "2", "-i", "1"]
    client_argv += ["-b", "100M", *extra]  # a later -t in extra wins
    server = subprocess.Popen(
        ["ip", "netns", "exec", server_ns, *server_argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(0.5)
        client = subprocess.run(
            ["ip", "netns", "exec", client_ns, *client_argv],
            capture_output=True,
            timeout=30,
            check=False,
        )
        server_out, _ = server.communicate(timeout=30)
    finally:
        if server.poll() is None:  # stopped by the PID started here, never by name
            server.kill()
            server.wait()
    (OUT / f"{name}.client.json").write_bytes(client.stdout)
    (OUT / f"{name}.server.json").write_bytes(server_out)
    return {
        "client_argv": client_argv,
        "server_argv": server_argv,
        "client_exit": client.returncode,
        "server_exit": server.returncode,
    }


def version_of(prefix: list[str]) -> tuple[str, str]:
    """('iperf 3.9 (cJSON 1.7.13)', 'v3_9') for the iperf3 behind ``prefix``."""
    line = subprocess.run(
        [*prefix, "iperf3", "--version"], capture_output=True, text=True, check=True
    ).stdout.splitlines()[0]
    number = line.split()[1]
    return line, "v" + number.replace(".", "_")


def main(argv: list[str]) -> int:
    suites = argv or list(SUITES)
    unknown = sorted(set(suites) - set(SUITES))
    if unknown:
        print(f"unknown suite(s) {unknown}; choose from {list(SUITES)}", file=sys.stderr)
        return 2
    OUT.mkdir(parents=True, exist_ok=True)
    manifest_path = OUT / "MANIFEST.json"
    old = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    # a partial run keeps the other suites' entries; a full run starts afresh
    fixtures: dict[str, object] = dict(old.get("fixtures", {})) if argv else {}
    prefixes = {s: [] if s == "host" else ["chroot", str(ensure_root(suite=s))] for s in suites}
    with namespaces() as nss:
        for suite, prefix in prefixes.items():
            line, tag = version_of(prefix)
            major_minor = tuple(int(x) for x in tag[1:].split("_")[:2])
            for case, extra in CASES.items():
                if case == "stream" and major_minor < (3, 17):
                    continue
                name = f"{tag}_{case}"
                entry = capture(nss, prefix, name, extra)
                entry |= {
                    "version": line,
                    "suite": suite,
                    "captured_at": datetime.now(UTC).isoformat(timespec="seconds"),
                }
                fixtures[name] = entry
                print(f"{name}: client exit {entry['client_exit']}", flush=True)
    doc = {
        "note": "stdout of both sides saved byte for byte, client and server in two private "
        "network namespaces (198.18.251.0/30); scripts/capture_import_fixtures.py",
        "fixtures": dict(sorted(fixtures.items())),
    }
    manifest_path.write_text(json.dumps(doc, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
