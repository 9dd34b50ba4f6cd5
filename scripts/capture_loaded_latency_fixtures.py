#!/usr/bin/env python3
"""Capture real ``latency-under-load`` results into tests/fixtures/loaded_latency/ (never typed by
hand): a lab of two hosts whose path up goes through a 20 Mbit/s tbf holding 250 kB (100 ms),
one run with the irtt probe and one with ping, each idle then ``up`` and ``down``.

    sudo .venv/bin/python scripts/capture_loaded_latency_fixtures.py

Each fixture is ``<name>.json.gz``: the run's ``params``, its ``result`` (the probe's raw output
and every load's iperf3 JSON, untouched) and ``queue_delay_s`` (the shaper's queue ÷ rate, what
the tests expect the up phase to add). MANIFEST.json lists the engine versions. The lab has a
random name, lives in its own state directory and is taken down on the way out, also on failure.
About 25 s. Needs root, irtt, iperf3 and ping.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import secrets
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from netfleet import lab  # noqa: E402
from netfleet.lab.models import Shaper  # noqa: E402
from netfleet.lab.shaping import queue_delay  # noqa: E402
from netfleet.runner import run_campaign  # noqa: E402
from netfleet.spec import load_spec  # noqa: E402
from netfleet.store import ResultsRoot  # noqa: E402

OUT = ROOT / "tests" / "fixtures" / "loaded_latency"
SHAPER = {"rate": "20mbit", "queue": "250kb"}
PARAMS = "{idle: 1, duration: 3, gap: 0.5, settle: 0.5, interval: 0.02, parallel: 8, "
PARAMS += "phases: [up, down], probe: %s}"


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    name = "cap" + secrets.token_hex(3)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        state = work / "labstate"
        labfile = work / "lab.yaml"
        labfile.write_text(
            f"name: {name}\nsubnet: 198.18.251.0/24\nhosts:\n  a: {{}}\n"
            f"  b: {{in: {json.dumps(SHAPER)}}}\n"
        )
        spec = work / "spec.yaml"
        tests = "".join(
            f"  - {{name: {probe}_deep, engine: latency-under-load, client: a, server: b, "
            f"params: {PARAMS % probe}}}\n"
            for probe in ("irtt", "ping")
        )
        spec.write_text(
            "campaign: capture\nhosts:\n"
            f"  a: {{kind: netns, lab: {name}, host: a}}\n"
            f"  b: {{kind: netns, lab: {name}, host: b}}\n"
            f"tests:\n{tests}"
        )
        lab.up(lab.load_lab(labfile), state_dir=state)
        try:
            result = asyncio.run(
                run_campaign(load_spec(spec), ResultsRoot(work / "results"), lab_state_dir=state)
            )
        finally:
            lab.down(name, state_dir=state)
        if result.ok != result.total:
            raise SystemExit(f"runs failed: {[(e.test, e.reason) for e in result.failed]}")
        manifest = {}
        for raw in sorted((work / "results").rglob("*.json.gz")):
            doc = json.loads(gzip.decompress(raw.read_bytes()))
            if doc.get("engine", {}).get("name") != "latency-under-load":
                continue
            fixture = {
                "params": doc["params"],
                "result": doc["result"],
                "queue_delay_s": queue_delay(Shaper(**SHAPER)),
            }
            test = doc["test"]
            (OUT / f"{test}.json.gz").write_bytes(
                gzip.compress(json.dumps(fixture).encode(), mtime=0)
            )
            manifest[test] = {"engine": doc["engine"], "shaper": SHAPER}
        (OUT / "MANIFEST.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        print(f"wrote {sorted(manifest)} to {OUT}")


if __name__ == "__main__":
    main()
