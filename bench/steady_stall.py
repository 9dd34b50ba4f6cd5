#!/usr/bin/env python3
"""A steady shaper's burst against a busy machine: what a host's "out" goodput keeps when its
sender or the kernel's timers run late.

One lab (random name, 198.18.97.0/24): ``a`` with a steady ``out`` shaper (``--rate``, default
300 Mbit/s) and ``b`` unshaped. Each round sets the tbf's burst to each value in turn (``tc
qdisc change``, the rest of the shaper as the lab made it) and runs one 4 s iperf3 TCP flow
a → b; it prints measured / expected goodput (rate × 1448/1514) per burst: min, median, max.
The default bursts are the rule before (max(128 KiB, 1 ms at rate)) and the lab's own
(``netfleet.lab.shaping.steady_burst``).

``--load ARGV`` runs a command beside the measurement at nice 0 (the lab's iperf3 runs at -10, as
in the suite; no shell: split as a shell would, started again whenever it ends, stopped with
SIGTERM at the end) — e.g. the suite's Chromium test, which
with a JVM (the Spark test) beside it made a 1 ms burst lose up to 4 %:

    .venv/bin/python bench/steady_stall.py --rounds 10 \\
      --load ".venv/bin/pytest -q -p no:cacheprovider tests/test_report_html.py -k chromium" \\
      --load ".venv/bin/pytest -q -p no:cacheprovider tests/test_export.py -k spark"

Needs root; about 10 s a round per burst. The lab and the loads are removed, also on Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import secrets
import shlex
import signal
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from netfleet.lab import down, load_lab, resolve_host, up
from netfleet.lab.models import STEADY_MIN_BURST
from netfleet.lab.shaping import queue_limit, steady_burst
from netfleet.units import goodput_ratio, parse_rate

PORT = 5297
SECONDS = 4


def old_burst(rate: float) -> int:
    """The rule before: room for a GSO super-packet, or 1 ms at rate."""
    return max(STEADY_MIN_BURST, math.ceil(rate / 8 * 0.001))


def netns(ns: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["ip", "netns", "exec", ns, *argv], capture_output=True, text=True, timeout=60, check=True
    )


def measure(src_ns: str, dst_ns: str, address: str) -> float:
    """One 4 s iperf3 flow's received bits/s."""
    server = subprocess.Popen(
        ["ip", "netns", "exec", dst_ns, "iperf3", "-s", "-1", "-p", str(PORT)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(0.4)
        client = ["iperf3", "-c", address, "-p", str(PORT), "-t", str(SECONDS), "--json"]
        doc = json.loads(netns(src_ns, *client).stdout)
    finally:
        try:
            server.wait(timeout=30)  # (-1: it ends with the client's test)
        except subprocess.TimeoutExpired:  # the client never reached it
            server.kill()
            server.wait()
    return float(doc["end"]["sum_received"]["bits_per_second"])


class Loads:
    """The ``--load`` commands, each kept running (started again when it ends) until stopped."""

    def __init__(self, commands: list[str]) -> None:
        self.argvs = [shlex.split(c) for c in commands]
        self.procs: list[subprocess.Popen[bytes] | None] = [None] * len(self.argvs)

    def keep(self) -> None:
        for i, argv in enumerate(self.argvs):
            proc = self.procs[i]
            if proc is None or proc.poll() is not None:
                self.procs[i] = subprocess.Popen(
                    argv,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    preexec_fn=lambda: os.setpriority(os.PRIO_PROCESS, 0, 0),  # not the lab's
                )

    def stop(self) -> None:
        for proc in self.procs:
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)  # pytest cleans up its fixtures on SIGTERM
        for proc in self.procs:
            if proc is not None:
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", default="300mbit", help="the steady out shaper (default 300mbit)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--burst", type=int, action="append", help="bytes (repeatable)")
    parser.add_argument("--load", action="append", default=[], help="a command run beside")
    args = parser.parse_args()
    rate = parse_rate(args.rate)
    bursts = args.burst or [old_burst(rate), steady_burst(rate)]
    expected = rate * goodput_ratio(1500)
    name = f"stall{secrets.token_hex(3)}"
    hosts = f"  a: {{out: {{rate: {args.rate}}}}}\n  b: {{}}\n"
    spec_text = f"name: {name}\nsubnet: 198.18.97.0/24\nhosts:\n{hosts}"
    loads = Loads(args.load)
    with tempfile.TemporaryDirectory() as tmp:
        lab_file = Path(tmp) / "lab.yaml"
        lab_file.write_text(spec_text)
        state = Path(tmp) / "labs"
        spec = load_lab(lab_file)
        up(spec, state)
        ratios: dict[int, list[float]] = {b: [] for b in bursts}
        try:
            src, dst = resolve_host(name, "a", state), resolve_host(name, "b", state)
            assert src.out is not None
            limit = queue_limit(src.out)
            for r in range(args.rounds):
                for burst in bursts:
                    loads.keep()
                    tbf = ["tbf", "rate", f"{round(rate)}bit", "burst", str(burst), *limit]
                    netns(src.namespace, "tc", "qdisc", "change", "dev", "eth0", "root", *tbf)
                    got = measure(src.namespace, dst.namespace, str(dst.address))
                    ratios[burst].append(got / expected)
                line = "  ".join(f"{x}: {ratios[x][-1]:.4f}" for x in bursts)
                print(f"round {r + 1}/{args.rounds}  {line}", flush=True)
        finally:
            loads.stop()
            down(name, state)
    print(
        f"\nmeasured / expected goodput at {rate / 1e6:g} Mbit/s (expected = rate × 1448/1514),"
        f" {args.rounds} × {SECONDS} s, loads: {len(args.load)}"
    )
    for burst, got in ratios.items():
        ms = burst * 8 / rate * 1e3
        print(
            f"  burst {burst:>9} B ({ms:5.1f} ms at rate): min {min(got):.4f}  "
            f"median {statistics.median(got):.4f}  max {max(got):.4f}"
        )


if __name__ == "__main__":
    os.setpriority(os.PRIO_PROCESS, 0, -10)  # as the suite's lab tests run (tests/conftest.py)
    main()
