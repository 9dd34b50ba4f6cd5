"""Issue 36.6: netfleet reads the CPU of the engine processes it started from their own
/proc/PID/stat (engines that report none: iperf2, sockperf, irtt, ping), and judges host
limits by it as by iperf3's own figure."""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass

from netfleet.advice.rules import cpu_bound


@dataclass
class _Host:
    name: str
    kind: str = "local"


@dataclass
class _Proc:
    pid: int


@dataclass
class _Started:
    role: str
    host: _Host
    process: _Proc


def test_a_busy_engine_process_reads_near_one_cpu_and_an_idle_one_near_none() -> None:
    from netfleet.runner.hostcpu import EngineCpu, process_cpu

    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    idle = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        cpu = EngineCpu()
        started = [_Started("client", _Host("a"), _Proc(busy.pid)),
                   _Started("server", _Host("b"), _Proc(idle.pid)),
                   _Started("server", _Host("far", "ssh"), _Proc(busy.pid))]  # fmt: skip
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            cpu.sample(started)
            time.sleep(0.2)
        note = cpu.note()
    finally:
        for p in (busy, idle):
            p.kill()
            p.wait()
    assert note is not None and note["source"].startswith("/proc/PID/stat")
    # one busy loop: most of a CPU on a quiet machine (a share of one on a loaded one)
    assert note["client"] > 10 and note["client"] > 3 * note["server"]
    assert note["server"] < 5  # the sleeper; the ssh host's "PID" is never read here
    assert process_cpu(busy.pid) is None  # reaped: gone


def test_advice_judges_an_iperf2_run_by_its_own_processes() -> None:
    """An iperf2 run on a machine 95 % busy: its engine at 97 % of a CPU is cpu-bound (said
    with where the figure comes from); at 3 % it is not. 001d0e3 said "the host: … the
    engine's own CPU not reported" for both."""

    def env(client: float) -> dict[str, object]:
        return {
            "run_id": "r",
            "status": "ok",
            "engine": {"name": "iperf2"},
            "client": {"name": "c"},
            "server": {"name": "s"},
            "result": {},
            "notes": {
                "host_cpu": {"busy_percent": 95.0},
                "engine_cpu": {"client": client, "server": 2.0, "source": "/proc/PID/stat"},
            },
        }

    (hot,) = cpu_bound(env(97.0))
    assert hot.message.startswith("client c: its engine at 97 % of a CPU (/proc/PID/stat")
    assert cpu_bound(env(3.0)) == []
