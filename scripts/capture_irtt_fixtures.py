#!/usr/bin/env python3
"""Capture real irtt JSON output between two network namespaces into tests/fixtures/irtt/
(never typed by hand): <name>.json plus MANIFEST.json with the exact argv, exit code and version.

    sudo .venv/bin/python scripts/capture_irtt_fixtures.py

Creates its own namespaces nfcap-irtt-a/-b joined by a veth pair on 198.18.250.0/30 and removes
them (and stops the server by its PID) on the way out, also on failure. About 10 s. Needs root.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "irtt"
NS_A, NS_B = "nfcap-irtt-a", "nfcap-irtt-b"
ADDR_A, ADDR_B = "198.18.250.1", "198.18.250.2"


def sh(*argv: str) -> None:
    subprocess.run(argv, check=True)


def setup() -> None:
    sh("ip", "netns", "add", NS_A)
    sh("ip", "netns", "add", NS_B)
    sh("ip", "link", "add", "nfcapirtta", "netns", NS_A, "type", "veth", "peer", "nfcapirttb",
       "netns", NS_B)  # fmt: skip
    for ns, dev, addr in ((NS_A, "nfcapirtta", ADDR_A), (NS_B, "nfcapirttb", ADDR_B)):
        sh("ip", "-n", ns, "addr", "add", f"{addr}/30", "dev", dev)
        sh("ip", "-n", ns, "link", "set", dev, "up")
        sh("ip", "-n", ns, "link", "set", "lo", "up")


def teardown() -> None:
    for ns in (NS_A, NS_B):
        subprocess.run(["ip", "netns", "del", ns], check=False, capture_output=True)


CASES = {
    # name: client options (after "client"); the address is appended
    "basic": ["-i", "20ms", "-d", "1s", "-l", "172", "--fill=rand"],
    "short_interval": ["-i", "10ms", "-d", "1s", "-l", "64"],
}


def main() -> None:
    ROOT.mkdir(parents=True, exist_ok=True)
    teardown()
    setup()
    server = subprocess.Popen(
        ["ip", "netns", "exec", NS_A, "irtt", "server", "-b", f"{ADDR_A}:2112"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    manifest: dict[str, object] = {}
    try:
        time.sleep(0.5)
        version = subprocess.run(
            ["irtt", "version"], capture_output=True, text=True, check=True
        ).stdout.splitlines()[0]
        for name, opts in CASES.items():
            argv = ["irtt", "client", "-Q", "-o", "-", *opts, f"{ADDR_A}:2112"]
            res = subprocess.run(
                ["ip", "netns", "exec", NS_B, *argv],
                capture_output=True, text=True, timeout=60, check=False,
            )  # fmt: skip
            (ROOT / f"{name}.json").write_text(res.stdout)
            manifest[name] = {
                "argv": argv, "returncode": res.returncode, "stderr": res.stderr,
                "version": version,
            }  # fmt: skip
            print(f"{name}: rc={res.returncode} {len(res.stdout)} bytes")
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.communicate(timeout=3)
        except subprocess.TimeoutExpired:
            server.kill()
            server.communicate(timeout=5)
        teardown()
    (ROOT / "MANIFEST.json").write_text(json.dumps(manifest, indent=2) + "\n")


if __name__ == "__main__":
    main()
