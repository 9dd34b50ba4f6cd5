"""Capture iperf3 client outputs through a per-flow cap, for advice on imported runs (issue 27.6).

A lab of this script's own (``fc<hex>``: a host ``capped`` whose every flow is capped at
300 Mbit/s by the lab's htb-per-flow shaper, and a peer ``peer``) runs this machine's iperf3:
``-P 1`` and ``-P 2``, each twice, 3 s, the capped host sending. Each client's ``-J`` output is
kept byte for byte as ``tests/fixtures/import/flowcap/p<N>-<k>.json``: ``-P1`` reads ~300 Mbit/s,
``-P2`` ~600. The server is stopped by the PID this script started; the lab is taken down on the
way out, also on failure.

    sudo .venv/bin/python scripts/capture_flowcap_fixtures.py

Tests never run this: the fixtures and MANIFEST.json are committed.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from netfleet import lab

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "import" / "flowcap"
LAB = """
name: {name}
subnet: 198.18.34.0/24
hosts:
  peer: {{labels: {{instance_type: lab-peer, cloud: lab}}}}
  capped:
    labels: {{instance_type: lab-flowcap-300m, cloud: lab}}
    flow_cap: 300mbit
"""
STREAMS = (1, 2)
REPEATS = 2
SECONDS = "3"
PORT = "5201"  # the lab's namespaces are private: nothing else listens there


def main() -> None:
    name = "fc" + secrets.token_hex(3)
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "state"
        spec_file = Path(tmp) / "lab.yaml"
        spec_file.write_text(LAB.format(name=name))
        lab.up(lab.load_lab(spec_file), state_dir=state)
        try:
            capture(name, state)
        finally:
            lab.down(name, state_dir=state)


def capture(name: str, state: Path) -> None:
    peer = lab.resolve_host(name, "peer", state_dir=state)
    capped = lab.resolve_host(name, "capped", state_dir=state)
    OUT.mkdir(parents=True, exist_ok=True)
    server = subprocess.Popen(
        ["ip", "netns", "exec", peer.namespace, "iperf3", "-s", "-B", peer.address, "-p", PORT],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    manifest = []
    try:
        time.sleep(0.5)
        for n in STREAMS:
            for k in range(1, REPEATS + 1):
                argv = ["iperf3", "-c", peer.address, "-p", PORT, "-t", SECONDS, "-P", str(n)]
                out = subprocess.run(
                    ["ip", "netns", "exec", capped.namespace, *argv, "-J"],
                    capture_output=True,
                    check=True,
                    timeout=30,
                ).stdout
                path = OUT / f"p{n}-{k}.json"
                path.write_bytes(out)
                bps = json.loads(out)["end"]["sum_received"]["bits_per_second"]
                manifest.append({"file": path.name, "argv": argv, "received_bps": bps})
                print(f"{path.name}: -P {n}: {bps / 1e6:.0f} Mbit/s")
    finally:
        server.terminate()
        server.wait(timeout=10)
    version = subprocess.run(["iperf3", "--version"], capture_output=True, text=True).stdout
    (OUT / "MANIFEST.json").write_text(
        json.dumps(
            {
                "captured_at": datetime.now(UTC).isoformat(timespec="seconds"),
                "iperf3": version.splitlines()[0] if version else "?",
                "shaper": "lab flow_cap 300mbit on the sender (htb class per flow)",
                "runs": manifest,
            },
            indent=2,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
