"""Issue 36.1: an adaptive run must not take two one-interval spikes inside a burst for the end
of the burst.

Real iperf3 in a lab namespace whose shaper the test drives (``tc qdisc change`` on the host's
own veth, in the lab this test made): 100 Mbit/s (the burst) with 1 s spikes to 200 Mbit/s at
~5 s and ~10 s, then 50 Mbit/s (the baseline) from ~18 s. The host carries r4-like catalogue
labels scaled like the r4 lab (baseline 1 Gbit/s × 0.05 = 50 Mbit/s). 001d0e3 compared the
last intervals with the second-best single interval: after the second spike the flat burst was
a "20 % drop", and the run stopped at ~12 s inside the burst, called steady at 95 Mbit/s.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from netfleet.lab import resolve_host
from netfleet.lab.models import Shaper
from netfleet.lab.shaping import tbf_args
from tests.labkit import lab_campaign, lab_up, run, write_spec

pytestmark = [
    pytest.mark.netns,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces"),
]

LAB = """\
    subnet: 198.18.36.0/24
    hosts:
      srv: {}
      sp:
        labels:
          {instance_type: r4.spiky, burstable: true, baseline_gbps: 1, peak_gbps: 2,
           lab_scale: 0.05}
        out: {rate: 100mbit}
    """
#: (seconds after the campaign starts, Mbit/s): the burst with two spikes, then the baseline
SCRIPT = [(5.0, 200), (6.0, 100), (10.0, 200), (11.0, 100), (18.0, 50)]


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    with lab_up(tmp_path, LAB, prefix="sp") as made:
        yield made


def drive(namespace: str, stop: threading.Event) -> None:
    t0 = time.monotonic()
    for at, mbit in SCRIPT:
        if stop.wait(max(0.0, t0 + at - time.monotonic())):
            return
        args = tbf_args(Shaper(rate=mbit * 1e6))
        cmd = ["ip", "netns", "exec", namespace, "tc", "qdisc", "change", "dev", "eth0", "root"]
        subprocess.run([*cmd, *args], check=True, capture_output=True)


def test_spikes_inside_a_burst_do_not_end_it(lab: tuple[str, Path], tmp_path: Path) -> None:
    name, state = lab
    tests = "tests: [{name: a, client: sp, server: srv, params: {duration: 40, until_steady: 3}}]"
    spec = write_spec(tmp_path, lab_campaign(name, "spikes", {"srv": "srv", "sp": "sp"}, tests))
    stop = threading.Event()
    shaper = threading.Thread(
        target=drive, args=(resolve_host(name, "sp", state_dir=state).namespace, stop)
    )
    shaper.start()
    try:
        [env] = run(spec, tmp_path / "r", state).envelopes
    finally:
        stop.set()
        shaper.join()
    adaptive = env.notes["adaptive"]
    assert env.status == "ok", env.reason
    assert adaptive["stop"] == "steady" and adaptive["verdict"] == "steady"
    assert adaptive["drop_seen_at_s"] >= 15  # the real drop, not a spike (~12 s on 001d0e3)
    assert adaptive["stopped_at_s"] >= adaptive["drop_seen_at_s"] + 3
    assert 40e6 <= adaptive["level_bps"] <= 55e6  # the baseline, not the burst's 95 Mbit/s
