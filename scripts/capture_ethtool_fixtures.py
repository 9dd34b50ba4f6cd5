#!/usr/bin/env python3
"""Capture real ``ethtool -S`` output into tests/fixtures/ethtool/ (never hand-written).

Run as root from the repository root::

    .venv/bin/python scripts/capture_ethtool_fixtures.py

A veth pair is made in a namespace of its own (unique name), ``ethtool -S`` and ``ethtool -i``
are read on one end, then the namespace is deleted (``finally``). This machine has no ENA NIC:
what a veth gives is what netfleet meets in the lab (no ``ena_srd_*`` or allowance line at all).
``MANIFEST.json`` records the ethtool version, each argv, the exit code and the kernel.
"""

from __future__ import annotations

import json
import platform
import secrets
import subprocess
from datetime import UTC, datetime
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "ethtool"


def sh(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=30)


def main() -> None:
    ns = "cap-eth-" + secrets.token_hex(3)
    OUT.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, object] = {
        "captured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "kernel": platform.release(),
        "ethtool_version": sh("ethtool", "--version").stdout.strip(),
        "files": {},
    }
    try:
        sh("ip", "netns", "add", ns).check_returncode()
        sh("ip", "-n", ns, "link", "add", "v0", "type", "veth", "peer", "name", "v1")
        sh("ip", "-n", ns, "link", "set", "v0", "up").check_returncode()
        sh("ip", "-n", ns, "link", "set", "v1", "up").check_returncode()
        for name, argv in (
            ("veth_stats.txt", ["ethtool", "-S", "v0"]),
            ("veth_driver.txt", ["ethtool", "-i", "v0"]),
        ):
            res = sh("ip", "netns", "exec", ns, *argv)
            (OUT / name).write_text(res.stdout)
            manifest["files"][name] = {"argv": argv, "exit_code": res.returncode}  # type: ignore[index]
    finally:
        sh("ip", "netns", "del", ns)
    (OUT / "MANIFEST.json").write_text(json.dumps(manifest, indent=2) + "\n")


if __name__ == "__main__":
    main()
