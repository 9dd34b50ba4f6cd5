#!/usr/bin/env python3
"""Capture real interval series through a lab into tests/fixtures/series/ (never hand-written).

Run as root from the repository root (about 6 minutes; name groups to capture only those —
steady, credit, erratic, refill, phases — the other fixtures are kept)::

    UV_PYTHON_DOWNLOADS=never uv run python scripts/capture_series.py [GROUP ...]

It brings up a private lab (``nfser``, subnet 198.18.93.0/24, its own state directory) with a
steady link, a network-credit link (burst then baseline), a link whose tbf rate is changed
several times during the run (erratic) and a credit link for refill probes; runs real iperf3
through ``netfleet.runner.run_campaign`` and copies each stored raw envelope (``json.gz``, as
written by the store) into ``tests/fixtures/series/<name>.json.gz``. ``MANIFEST.json`` records
the shaper truth for each capture (tbf rate/peak/bucket in wire bits, the expected
classification, the erratic schedule, the refill idle times: ``client_gap_s`` is from one
iperf3 client's exit to the next one's start, polled every 10 ms) so tests can compare estimates
with it. Before every credit capture the tbf is replaced, which refills its bucket. The lab is
always taken down; traffic stays inside the lab's namespaces.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from netfleet import lab
from netfleet.lab.models import Shaper
from netfleet.lab.shaping import tbf_args
from netfleet.runner import run_campaign
from netfleet.spec import load_spec
from netfleet.store import ResultsRoot

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "series"
LAB = "nfser"
SUBNET = "198.18.93.0/24"

STEADY = Shaper(rate=300e6)
CREDIT = Shaper(rate=40e6, peak=400e6, bucket=3600e6 / 8)  # 10 s at peak, then 40 Mbit/s
REFILL = Shaper(rate=100e6, peak=400e6, bucket=1500e6 / 8)  # 5 s at peak; refills in 15 s
ERRATIC_START = 200e6
#: (seconds after the client started, new tbf rate in bits/s)
ERRATIC_SCHEDULE = [(4.0, 80e6), (8.0, 250e6), (12.0, 120e6), (16.0, 300e6), (20.0, 150e6)]
#: idle seconds before each refill probe (the bucket is drained before the first)
REFILL_IDLE = [4.0, 8.0, 12.0, 25.0, 40.0]
#: idle seconds of the credit engine's run (its bursts end on a steady baseline)
CREDIT_IDLE = [4.0, 8.0, 25.0]

LAB_YAML = f"""\
name: {LAB}
description: series capture for netfleet.analysis tests
subnet: {SUBNET}
hosts:
  srv: {{labels: {{instance_type: big, role: server}}}}
  steady:
    labels: {{instance_type: lab-steady}}
    out: {{rate: 300mbit}}
  credit:
    labels: {{instance_type: lab-credit}}
    out: {{rate: 40mbit, peak: 400mbit, bucket: 3600mbit}}
    in: {{rate: 40mbit, peak: 400mbit, bucket: 3600mbit}}
  errat:
    labels: {{instance_type: lab-erratic}}
    out: {{rate: 200mbit}}
  refill:
    labels: {{instance_type: lab-refill}}
    out: {{rate: 100mbit, peak: 400mbit, bucket: 1500mbit}}
"""


@dataclass
class Captured:
    name: str
    description: str
    expect: str  # steady | burst-then-baseline | erratic | inconclusive | short-burst
    shaper: dict[str, Any]
    params: dict[str, Any]
    path: Path | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def shaper_truth(s: Shaper) -> dict[str, Any]:
    truth: dict[str, Any] = {"rate_bps": s.rate}
    if s.peak is not None and s.bucket is not None:
        truth |= {
            "peak_bps": s.peak,
            "bucket_bits": s.bucket * 8,
            "seconds_at_peak": s.bucket * 8 / (s.peak - s.rate),
        }
    return truth


def sh(*argv: str) -> None:
    subprocess.run(list(argv), check=True, capture_output=True)


def reset_bucket(host: str, shaper: Shaper, side: str = "out") -> None:
    """Replace the host's tbf: a new tbf starts with a full bucket."""
    h = lab.resolve_host(LAB, host, state_dir=STATE)
    if side == "out":
        sh("ip", "netns", "exec", h.namespace, "tc", "qdisc", "replace", "dev", h.interface,
           "root", *tbf_args(shaper))  # fmt: skip
    else:
        sw = f"nf-{LAB}-sw"
        sh("ip", "netns", "exec", sw, "tc", "qdisc", "replace", "dev", h.port, "root",
           *tbf_args(shaper))  # fmt: skip


def spec_file(host: str, params: dict[str, Any], engine: str = "iperf3") -> Path:
    text = textwrap.dedent(f"""\
        campaign: series
        labels: {{cloud: lab}}
        hosts:
          srv: {{kind: netns, lab: {LAB}, host: srv}}
          {host}: {{kind: netns, lab: {LAB}, host: {host}}}
        tests:
          - name: {host}
            engine: {engine}
            client: {host}
            server: srv
            params: {json.dumps(params)}
        """)
    path = WORK / f"spec-{host}-{time.monotonic_ns()}.yaml"
    path.write_text(text)
    return path


async def run_one(host: str, params: dict[str, Any], engine: str = "iperf3") -> Path:
    spec = load_spec(spec_file(host, params, engine))
    result = await run_campaign(spec, ROOT, lab_state_dir=STATE)
    env = result.envelopes[0]
    if env.status != "ok":
        raise SystemExit(f"capture run on {host} failed: {env.reason}")
    return result.paths[0]


def iperf3_clients(namespace: str) -> set[int]:
    """PIDs of the iperf3 clients running in ``namespace`` right now."""
    out = subprocess.run(
        ["ip", "netns", "pids", namespace], capture_output=True, text=True, check=False
    ).stdout.split()
    found: set[int] = set()
    for pid in out:
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if cmd and cmd[0].endswith(b"iperf3") and b"--client" in cmd:
            found.add(int(pid))
    return found


async def client_started(namespace: str, timeout: float = 30.0) -> float:
    """Wait until an iperf3 client runs in ``namespace``; return the monotonic time seen."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if iperf3_clients(namespace):
            return time.monotonic()
        await asyncio.sleep(0.02)
    raise SystemExit(f"no iperf3 client appeared in {namespace}")


class ClientWatch:
    """Records when iperf3 clients appear in and leave a namespace (polled every 10 ms): the
    idle time between two runs is from one client's exit to the next one's start."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.lives: dict[int, list[float]] = {}
        self.task: asyncio.Task[None] | None = None

    async def _poll(self) -> None:
        while True:
            now = time.monotonic()
            alive = await asyncio.to_thread(iperf3_clients, self.namespace)
            for pid in alive:
                self.lives.setdefault(pid, [now, now])[1] = now
            await asyncio.sleep(0.01)

    def __enter__(self) -> ClientWatch:
        self.task = asyncio.get_running_loop().create_task(self._poll())
        return self

    def __exit__(self, *exc: object) -> None:
        if self.task is not None:
            self.task.cancel()

    def spans(self) -> list[tuple[float, float]]:
        return sorted((a, b) for a, b in self.lives.values())


async def change_rates(namespace: str, interface: str) -> list[tuple[float, float]]:
    t0 = await client_started(namespace)
    done: list[tuple[float, float]] = []
    for at, rate in ERRATIC_SCHEDULE:
        await asyncio.sleep(max(0.0, t0 + at - time.monotonic()))
        proc = await asyncio.create_subprocess_exec(
            "ip", "netns", "exec", namespace, "tc", "qdisc", "change", "dev", interface, "root",
            *tbf_args(Shaper(rate=rate)),
        )  # fmt: skip
        if await proc.wait() != 0:
            raise SystemExit("tc qdisc change failed")
        done.append((round(time.monotonic() - t0, 3), rate))
    return done


async def erratic(params: dict[str, Any]) -> tuple[Path, list[tuple[float, float]]]:
    h = lab.resolve_host(LAB, "errat", state_dir=STATE)
    changer = asyncio.create_task(change_rates(h.namespace, h.interface))
    path = await run_one("errat", params)
    return path, await changer


#: capture groups, in the order they run (the names the command line accepts)
GROUPS = ("steady", "credit", "erratic", "refill", "phases")


async def capture_all(only: set[str]) -> list[Captured]:
    caps: list[Captured] = []

    def add(cap: Captured, path: Path) -> None:
        cap.path = path
        caps.append(cap)
        print(f"  {cap.name}: {path.name}", flush=True)

    if "steady" in only:
        await steady(add)
    if "credit" in only:
        await credit(add)
    if "erratic" in only:
        p: dict[str, Any] = {"duration": 24, "interval": 1}
        path, schedule = await erratic(p)
        add(Captured("erratic_out", "tbf rate changed 5 times during a 24 s run", "erratic",
                     {"rate_bps": ERRATIC_START}, p,
                     extra={"schedule_s_bps": schedule}), path)  # fmt: skip
    if "refill" in only:
        await refill(add)
    if "phases" in only:
        await phases(add)
    return caps


Add = Callable[[Captured, Path], None]


async def steady(add: Add) -> None:
    p: dict[str, Any] = {"duration": 20, "interval": 1}
    add(Captured("steady_out", "steady 300mbit tbf, out, 20 s", "steady",
                 shaper_truth(STEADY), p), await run_one("steady", p))  # fmt: skip

    p = {"duration": 2, "interval": 1}
    add(Captured("short_2s", "steady link, a 2 s run: too little data", "inconclusive",
                 shaper_truth(STEADY), p), await run_one("steady", p))  # fmt: skip


async def credit(add: Add) -> None:
    reset_bucket("credit", CREDIT)
    p = {"duration": 30, "interval": 1}
    add(Captured("credit_out", "credit tbf (out): 10 s at 400mbit, then 40mbit; 30 s",
                 "burst-then-baseline", shaper_truth(CREDIT), p),
        await run_one("credit", p))  # fmt: skip

    reset_bucket("credit", CREDIT, side="in")
    p = {"duration": 30, "interval": 1, "direction": "in", "parallel": 2}
    add(Captured("credit_in_p2", "credit tbf on the switch port (in), -R, 2 streams, 30 s",
                 "burst-then-baseline", shaper_truth(CREDIT), p),
        await run_one("credit", p))  # fmt: skip

    reset_bucket("credit", CREDIT)
    p = {"duration": 26, "omit": 2, "interval": 1}
    add(Captured("credit_omit2", "credit tbf (out), -O 2 then 26 s: the omitted 2 s drain too",
                 "burst-then-baseline", shaper_truth(CREDIT), p),
        await run_one("credit", p))  # fmt: skip

    reset_bucket("credit", CREDIT)
    p = {"duration": 6, "interval": 1}
    add(Captured("credit_unfinished", "credit tbf (out), 6 s: the burst has not ended",
                 "steady", shaper_truth(CREDIT), p),
        await run_one("credit", p))  # fmt: skip


async def refill(add: Add) -> None:
    reset_bucket("refill", REFILL)
    p = {"duration": 10, "interval": 1}
    with ClientWatch(lab.resolve_host(LAB, "refill", state_dir=STATE).namespace) as watch:
        drain = await run_one("refill", p)
        add(Captured("refill_drain", "refill host: drain a full bucket (5 s at peak) over 10 s",
                     "burst-then-baseline", shaper_truth(REFILL), p), drain)  # fmt: skip
        previous = drain
        for n, idle in enumerate(REFILL_IDLE):
            await asyncio.sleep(idle)
            p = {"duration": 8, "interval": 1}
            path = await run_one("refill", p)
            await asyncio.sleep(0.1)
            spans = watch.spans()
            client_gap = spans[n + 1][0] - spans[n][1]
            add(Captured(f"refill_idle{idle:g}", f"refill probe after {idle:g} s idle",
                         "burst-then-baseline" if idle >= 12 else "short-burst",
                         shaper_truth(REFILL), p,
                         extra={"idle_s": idle, "gap_s": _gap_seconds(previous, path),
                                "client_gap_s": round(client_gap, 3)}), path)  # fmt: skip
            previous = path


async def phases(add: Add) -> None:
    """The ``credit`` engine's own run: drain, then idle T and burst, as one stored run."""
    reset_bucket("refill", REFILL)
    p: dict[str, Any] = {"duration": 30, "idle": CREDIT_IDLE, "until_steady": 3,
                         "burst_max": 20, "parallel": 1, "interval": 1}  # fmt: skip
    add(Captured("credit_phases", "credit engine on the refill host: drain, idle T, burst",
                 "burst-then-baseline", shaper_truth(REFILL), p),
        await run_one("refill", p, engine="credit"))  # fmt: skip


def _gap_seconds(before: Path, after: Path) -> float:
    """Time between the end of one stored run and the start of the next (netfleet's clock)."""
    a, b = ResultsRoot.read(before), ResultsRoot.read(after)
    end = datetime.fromisoformat(a["ended_at"].replace("Z", "+00:00"))
    start = datetime.fromisoformat(b["started_at"].replace("Z", "+00:00"))
    return round((start - end).total_seconds(), 3)


def main(argv: list[str]) -> None:
    if os.geteuid() != 0:
        sys.exit("run as root: the lab needs network namespaces")
    only = set(argv) or set(GROUPS)
    if only - set(GROUPS):
        sys.exit(f"unknown capture group(s) {sorted(only - set(GROUPS))}: choose from {GROUPS}")
    global WORK, STATE, ROOT
    WORK = Path(tempfile.mkdtemp(prefix="nf-series-"))
    STATE = WORK / "labstate"
    ROOT = ResultsRoot(WORK / "results")
    lab_file = WORK / "lab.yaml"
    lab_file.write_text(LAB_YAML)
    started = time.monotonic()
    lab.up(lab.load_lab(lab_file), state_dir=STATE)
    try:
        caps = asyncio.run(capture_all(only))
    finally:
        lab.down(LAB, state_dir=STATE)
    OUT.mkdir(parents=True, exist_ok=True)
    manifest_path = OUT / "MANIFEST.json"
    kept: dict[str, Any] = {}
    if only == set(GROUPS):
        for stale in OUT.glob("*.json.gz"):
            stale.unlink()
    elif manifest_path.exists():  # a partial capture replaces only its own fixtures
        kept = json.loads(manifest_path.read_text())["fixtures"]
    manifest: dict[str, Any] = {
        "captured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "kernel": platform.release(),
        "iperf3_version": subprocess.run(
            ["iperf3", "--version"], capture_output=True, text=True, check=False
        ).stdout.splitlines()[0],
        "note": "raw envelopes as stored by netfleet's runner; written by "
        "scripts/capture_series.py. Shaper numbers are tbf wire (L2) rates and bits.",
        "lab": LAB_YAML,
        "refill_shaper": shaper_truth(REFILL),
        "fixtures": kept,
    }
    for cap in caps:
        assert cap.path is not None
        shutil.copyfile(cap.path, OUT / f"{cap.name}.json.gz")
        manifest["fixtures"][cap.name] = {
            "file": f"{cap.name}.json.gz",
            "description": cap.description,
            "expect": cap.expect,
            "shaper": cap.shaper,
            "params": cap.params,
            **cap.extra,
        }
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")
    shutil.rmtree(WORK, ignore_errors=True)
    print(f"{len(caps)} series in {OUT} ({time.monotonic() - started:.0f} s)")


WORK: Path
STATE: Path
ROOT: ResultsRoot

if __name__ == "__main__":
    main(sys.argv[1:])
