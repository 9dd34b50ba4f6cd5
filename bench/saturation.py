#!/usr/bin/env python3
"""Saturating a fast link: netfleet ``throughput`` (tool auto) against the usual commands.

On an unshaped veth pair between two fresh namespaces (198.18.99.1 ↔ .2, MTU 1500), one
campaign runs, side by side and repeated in shuffled order:

* ``netfleet auto``  — engine ``throughput``, tool auto (what netfleet picks on this machine);
* ``iperf3``         — one iperf3 process, one stream;
* ``iperf3 -P 4``    — one iperf3 process, four streams (one thread before 3.16);
* ``iperf2 -P 2``    — iperf 2, two streams (one thread each).

All go through netfleet's runner (same server start, same store); the figure is the receiver's
total per run. Target: netfleet auto ≥ the best of the others. Needs root; about
``4 × repeats × (duration + 1.5)`` seconds (default 3 × 5 s: ~80 s). Everything it creates is
removed, also on failure or Ctrl-C.

    sudo uv run python bench/saturation.py [--repeats 3] [--duration 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import subprocess
import sys
import tempfile
import textwrap
from collections import defaultdict
from pathlib import Path
from statistics import fmean

from netfleet.advice.evidence import receiver_bps
from netfleet.runner import run_campaign
from netfleet.spec import load_spec
from netfleet.store import ResultsRoot

LABELS = {
    "auto": "netfleet auto",
    "iperf3-p1": "iperf3",
    "iperf3-p4": "iperf3 -P 4",
    "iperf2-p2": "iperf2 -P 2",
}


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


def spec_text(a: str, b: str, repeats: int, duration: float) -> str:
    return textwrap.dedent(f"""\
        campaign: saturation
        hosts:
          a: {{kind: netns, namespace: {a}, address: 198.18.99.1}}
          b: {{kind: netns, namespace: {b}, address: 198.18.99.2}}
        tests:
          - {{name: auto, engine: throughput, client: a, server: b,
              params: {{duration: {duration}}}}}
          - {{name: iperf3-p1, engine: iperf3, client: a, server: b,
              params: {{duration: {duration}, parallel: 1}}}}
          - {{name: iperf3-p4, engine: iperf3, client: a, server: b,
              params: {{duration: {duration}, parallel: 4}}}}
          - {{name: iperf2-p2, engine: iperf2, client: a, server: b,
              params: {{duration: {duration}, parallel: 2}}}}
        repeats: {repeats}
        order: shuffled
        seed: 7
        cooldown: 0.5
        """)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--duration", type=float, default=5)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root: it creates two network namespaces")
    suffix = secrets.token_hex(3)
    a, b = f"nf-sat-a-{suffix}", f"nf-sat-b-{suffix}"
    try:
        ip("netns", "add", a)
        ip("netns", "add", b)
        ip("link", "add", "v0", "netns", a, "type", "veth", "peer", "name", "v1", "netns", b)
        for ns, dev, addr in ((a, "v0", "198.18.99.1/30"), (b, "v1", "198.18.99.2/30")):
            ip("-n", ns, "addr", "add", addr, "dev", dev)
            ip("-n", ns, "link", "set", dev, "up")
            ip("-n", ns, "link", "set", "lo", "up")
        with tempfile.TemporaryDirectory() as tmp:
            spec_path = Path(tmp) / "saturation.yaml"
            spec_path.write_text(spec_text(a, b, args.repeats, args.duration))
            result = asyncio.run(run_campaign(load_spec(spec_path), ResultsRoot(Path(tmp) / "r")))
    finally:
        for ns in (a, b):
            subprocess.run(["ip", "netns", "delete", ns], capture_output=True)
    by_test: dict[str, list[float]] = defaultdict(list)
    chosen = set()
    for env in result.envelopes:
        doc = env.model_dump()
        bps = receiver_bps(doc) if env.status == "ok" else None
        if bps:
            by_test[env.test].append(bps / 1e9)
        if env.test == "auto" and env.result:
            chosen.add(f"{env.result.get('chosen')} P{env.result.get('parallel')}"
                       f" ×{env.result.get('processes')}")  # fmt: skip
    failed = [e for e in result.envelopes if e.status != "ok"]
    print(f"unshaped veth, MTU 1500, {args.duration:g} s runs, {args.repeats} repeats, "
          f"shuffled; auto chose: {', '.join(sorted(chosen)) or '?'}")  # fmt: skip
    print(f"| {'tool':<14} | runs | mean Gbit/s | min    | max    |")
    print(f"|{'-' * 16}|------|-------------|--------|--------|")
    for test, label in LABELS.items():
        vals = by_test.get(test, [])
        if vals:
            print(f"| {label:<14} | {len(vals):>4} | {fmean(vals):>11.2f} | {min(vals):>6.2f} "
                  f"| {max(vals):>6.2f} |")  # fmt: skip
        else:
            print(f"| {label:<14} |    0 |             |        |        |")
    others = [fmean(v) for t, v in by_test.items() if t != "auto" and v]
    auto = fmean(by_test["auto"]) if by_test.get("auto") else 0.0
    best = max(others, default=0.0)
    verdict = "MET" if auto >= best else "NOT met"
    print(f"target netfleet auto ≥ best other ({best:.2f}): {verdict} ({auto:.2f})")
    for e in failed:
        print(f"failed: {e.run_id}: {e.reason}")
    return 0 if auto >= best and not failed else 1


if __name__ == "__main__":
    sys.exit(main())
