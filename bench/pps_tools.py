"""Which trusted tool drives the most small packets per second on this machine (issue 38).

Two network namespaces joined by a veth pair (198.18.200.1/.2), nothing shaped; each tool sends
UDP datagrams of ``--size`` bytes as fast as it can for ``--seconds`` and the receiver counts
what arrived. Prints, per tool and round: packets sent and delivered per second, loss, and the
CPU the sender and receiver used (their own ``/proc/PID/stat``, not the machine's). Root.

    .venv/bin/python bench/pps_tools.py --seconds 5 --rounds 3 --size 64

Tools: iperf3 ``-u -l SIZE -b 0`` (one thread), iperf 2 ``-u -l SIZE -b 100G`` with 1 and 2
streams (a thread each), sockperf ``throughput`` (it reports only what it sent: its receiver
keeps no count, so it cannot say what was delivered).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import secrets
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

A, B = "198.18.200.1", "198.18.200.2"
TICKS = os.sysconf("SC_CLK_TCK")


def sh(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout


@contextlib.contextmanager
def pair() -> Iterator[tuple[str, str]]:
    tag = secrets.token_hex(3)
    na, nb = f"nfppsa{tag}", f"nfppsb{tag}"
    made: list[str] = []
    try:
        for ns in (na, nb):
            sh("ip", "netns", "add", ns)
            made.append(ns)
        sh("ip", "link", "add", f"va{tag}", "netns", na, "type", "veth", "peer", f"vb{tag}",
           "netns", nb)  # fmt: skip
        for ns, dev, addr in ((na, f"va{tag}", A), (nb, f"vb{tag}", B)):
            sh("ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
            sh("ip", "-n", ns, "link", "set", dev, "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        yield na, nb
    finally:
        for ns in made:
            subprocess.run(["ip", "netns", "del", ns], check=False)


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def start(ns: str, *argv: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        ["ip", "netns", "exec", ns, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip


def stop(proc: subprocess.Popen[str]) -> str:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
    out, _ = proc.communicate()
    return out


def iperf3(na: str, nb: str, size: int, seconds: float) -> dict[str, float]:
    server = start(nb, "iperf3", "-s", "-1", "-J", "-B", B, "-p", "25201")
    time.sleep(0.3)
    client = start(na, "iperf3", "-c", B, "-p", "25201", "-u", "-l", str(size), "-b", "0",
                   "-t", str(seconds), "-J")  # fmt: skip
    cpu_c = cpu_end = 0.0
    while client.poll() is None:
        with contextlib.suppress(OSError):
            cpu_c = cpu_s(client.pid)
        time.sleep(0.2)
    doc = json.loads(stop(client))
    srv = stop(server)
    s = doc["end"]["sum"]
    sent = s["packets"] / s["seconds"]
    lost = s.get("lost_packets", 0)
    out = {"sent_pps": sent, "delivered_pps": (s["packets"] - lost) / s["seconds"],
           "loss_percent": s.get("lost_percent", 0.0)}  # fmt: skip
    out["sender_cpu_percent"] = doc["end"]["cpu_utilization_percent"]["host_total"]
    with contextlib.suppress(Exception):
        out["receiver_cpu_percent"] = json.loads(srv)["end"]["cpu_utilization_percent"][
            "host_total"
        ]
    del cpu_c, cpu_end
    return out


def iperf2(na: str, nb: str, size: int, seconds: float, streams: int) -> dict[str, float]:
    server = start(nb, "iperf", "-s", "-u", "-B", B, "-p", "25202", "-y", "C")
    time.sleep(0.3)
    client = start(na, "iperf", "-c", B, "-p", "25202", "-u", "-l", str(size), "-b", "100G",
                   "-t", str(seconds), "-P", str(streams), "-y", "C")  # fmt: skip
    used = 0.0
    while client.poll() is None:
        with contextlib.suppress(OSError):
            used = cpu_s(client.pid)
        time.sleep(0.2)
    sent_text = stop(client)
    time.sleep(0.5)
    srv_cpu = 0.0
    with contextlib.suppress(OSError):
        srv_cpu = cpu_s(server.pid)
    text = stop(server)
    # server CSV per stream: ...,interval,bytes,bps,jitter,lost,total,pct,ooo ; a sum line has id -1
    rows = [line.split(",") for line in text.splitlines() if line.count(",") >= 13]
    total = sum(int(r[11]) for r in rows if r[5] != "-1")
    lost = sum(int(r[10]) for r in rows if r[5] != "-1")
    sent_rows = [line.split(",") for line in sent_text.splitlines() if line.count(",") >= 8]
    sent_bytes = sum(int(r[7]) for r in sent_rows if r[5] != "-1")
    return {"sent_pps": sent_bytes / size / seconds, "delivered_pps": (total - lost) / seconds,
            "loss_percent": 100 * lost / total if total else 0.0,
            "sender_cpu_percent": 100 * used / seconds,
            "receiver_cpu_percent": 100 * srv_cpu / seconds}  # fmt: skip


def sockperf(na: str, nb: str, size: int, seconds: float) -> dict[str, float]:
    server = start(nb, "sockperf", "server", "-i", B, "-p", "25203")
    time.sleep(0.3)
    client = start(na, "sockperf", "throughput", "-i", B, "-p", "25203", "-m", str(size),
                   "-t", str(int(seconds)))  # fmt: skip
    used = 0.0
    while client.poll() is None:
        with contextlib.suppress(OSError):
            used = cpu_s(client.pid)
        time.sleep(0.2)
    text = stop(client)
    stop(server)
    m = re.search(r"Message Rate is ([\d.]+) \[msg/sec\]", re.sub(r"\x1b\[[0-9;]*m", "", text))
    return {"sent_pps": float(m.group(1)) if m else float("nan"), "delivered_pps": float("nan"),
            "loss_percent": float("nan"), "sender_cpu_percent": 100 * used / seconds,
            "receiver_cpu_percent": float("nan")}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--size", type=int, default=64, help="UDP payload bytes")
    args = ap.parse_args()
    tools = {
        "iperf3 -u -b 0": lambda a, b: iperf3(a, b, args.size, args.seconds),
        "iperf2 -u -P 1": lambda a, b: iperf2(a, b, args.size, args.seconds, 1),
        "iperf2 -u -P 2": lambda a, b: iperf2(a, b, args.size, args.seconds, 2),
        "sockperf tp": lambda a, b: sockperf(a, b, args.size, args.seconds),
    }
    print(f"# {args.size}-byte UDP payloads, {args.seconds:g} s, {os.cpu_count()} CPUs, "
          f"load {os.getloadavg()[0]:.2f}")  # fmt: skip
    print(f"{'tool':16} {'round':>5} {'sent kpps':>10} {'delivered kpps':>15} {'loss %':>7} "
          f"{'snd CPU %':>9} {'rcv CPU %':>9}")  # fmt: skip
    with pair() as (na, nb):
        for r in range(args.rounds):
            for name, run in tools.items():  # interleaved: each round runs every tool once
                f = run(na, nb)
                print(f"{name:16} {r:>5} {f['sent_pps'] / 1e3:>10.1f} "
                      f"{f['delivered_pps'] / 1e3:>15.1f} {f['loss_percent']:>7.2f} "
                      f"{f['sender_cpu_percent']:>9.0f} {f['receiver_cpu_percent']:>9.0f}",
                      flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
