"""How much CPU the controller (the `netfleet run` process) uses while a test runs.

    sudo uv run python bench/controller_cpu.py [--seconds 20] [--kind netns|ssh|both]

A lab with a shaped link (the client sends at 200 Mbit/s) and a controller host; one iperf3 run
of ``--seconds`` between them, driven by a real `netfleet run` in a pseudo-terminal (so the live
Rich progress is drawn as for a person watching). The controller's own CPU time (utime + stime
of its process, children excluded: iperf3 runs on the hosts) is read from /proc when the
journal records the client's start and when it records the run's end; the figure is that CPU
time over the wall time between. ``ssh`` drives the same lab's hosts over SSH (real sshd in each
namespace, the controller inside the lab's ``ctl`` namespace). Needs root; takes about
``seconds`` + 10 s per kind. Leaves nothing behind (lab down, sshd stopped by PID).
"""

from __future__ import annotations

import argparse
import os
import pty
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the lab's sshd is the tests' (tests/sshdkit.py)

from tests.sshdkit import make_key, start_sshd  # noqa: E402

from netfleet import lab  # noqa: E402
from netfleet.runner.journal import journal_path, read_records  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime


def measure(argv: list[str], journal: Path, seconds: float) -> tuple[float, float, int]:
    """(controller CPU s, wall s, exit status) between the client's start and the run's end."""
    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120"}
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env)
    os.close(slave)

    screen = bytearray()

    def drain() -> None:  # read the terminal as a person would see it
        try:
            while chunk := os.read(master, 65536):
                screen.extend(chunk[-4000:])
                del screen[:-8000]
        except OSError:
            pass

    threading.Thread(target=drain, daemon=True).start()
    try:
        start = end = None
        deadline = time.monotonic() + seconds + 60
        while time.monotonic() < deadline and proc.poll() is None:
            events = [r["event"] + "/" + str(r.get("role")) for r in read_records(journal)]
            if start is None and "process/client" in events:
                start = (cpu_seconds(proc.pid), time.monotonic())
            if start is not None and any(e.startswith("run_finished") for e in events):
                end = (cpu_seconds(proc.pid), time.monotonic())
                break
            time.sleep(0.05)
        status = proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    if start is None or end is None:
        tail = screen.decode(errors="replace")[-2000:]
        raise SystemExit(f"the run did not start and end as expected (exit {status}):\n{tail}")
    return end[0] - start[0], end[1] - start[1], status


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--kind", choices=["netns", "ssh", "both"], default="both")
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("run as root: the lab builds network namespaces")
    work = Path(tempfile.mkdtemp(prefix="nf-cpu-"))
    name = "c" + secrets.token_hex(3)
    state = work / "labstate"
    (work / "lab.yaml").write_text(
        yaml.safe_dump(
            {
                "name": name,
                "subnet": "198.18.70.0/24",
                "hosts": {"ctl": {}, "srv": {}, "cli": {"out": {"rate": "200mbit"}}},
            }
        )
    )
    made = lab.up(lab.load_lab(work / "lab.yaml"), state_dir=state)
    sshds = []
    try:
        kinds = ["netns", "ssh"] if args.kind == "both" else [args.kind]
        params = {"duration": args.seconds, "interval": 1}
        for kind in kinds:
            if kind == "netns":
                hosts = {h: {"kind": "netns", "lab": name, "host": h} for h in ("srv", "cli")}
                prefix: list[str] = []
            else:
                client_key = make_key(work / "client_key")
                lines = []
                for h in ("srv", "cli"):
                    key = make_key(work / f"host_key_{h}")
                    sshd = start_sshd(
                        made.hosts[h].namespace,
                        made.hosts[h].address,
                        work / f"sshd-{h}",
                        key,
                        [client_key.public_text],
                    )
                    sshds.append(sshd)
                    lines.append(sshd.known_hosts_line)
                (work / "known_hosts").write_text("".join(lines))
                hosts = {
                    h: {
                        "kind": "ssh",
                        "address": made.hosts[h].address,
                        "user": "root",
                        "key": str(client_key.private),
                        "known_hosts": str(work / "known_hosts"),
                    }
                    for h in ("srv", "cli")
                }
                prefix = ["ip", "netns", "exec", made.hosts["ctl"].namespace]
            campaign = f"cpu-{kind}"
            spec = work / f"{campaign}.yaml"
            spec.write_text(
                yaml.safe_dump(
                    {
                        "campaign": campaign,
                        "hosts": hosts,
                        "tests": [
                            {"name": "t", "client": "cli", "server": "srv", "params": params}
                        ],
                    }
                )
            )
            results = work / f"results-{kind}"
            argv = [
                *prefix,
                sys.executable,
                "-m",
                "netfleet",
                "run",
                str(spec),
                "-r",
                str(results),
                "--state-dir",
                str(state),
            ]
            cpu, wall, status = measure(argv, journal_path(results, campaign), args.seconds)
            print(
                f"{kind:5s}: controller CPU {cpu:.2f} s over {wall:.1f} s of test = "
                f"{cpu / wall * 100:.2f} % of one core (exit {status}; target ≤ 2 %)"
            )
    finally:
        for sshd in sshds:
            sshd.stop()
        lab.down(name, state_dir=state)


if __name__ == "__main__":
    main()
