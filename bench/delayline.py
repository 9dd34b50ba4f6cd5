#!/usr/bin/env python3
"""The lab's delay line (native/delayline): the round trip ping and irtt see against the
configured delay, the highest rate it forwards without adding loss, and one TCP flow's window
limit at a long round trip against the BDP arithmetic.

One lab (random name, 198.18.93.0/24): ``server`` and ``plain`` on veths (no delay line),
``near`` behind a delay line that adds nothing (the lab's own round trip through the same kind
of link), ``d05``/``d5``/``d25``/``d50`` with 0.5/5/25/50 ms each way (round trips of 1, 10, 50
and 100 ms) and ``wan`` with 20 ms each way (a cross-region-like 40 ms). It prints:

1. per delay: irtt's median RTT (probe every 3 ms, 3 s, run at the same time as one to ``near``),
   ping's average, minus the configured round trip and minus the lab's own (``near``);
2. one TCP flow from ``server`` to ``plain`` (no line), ``near`` (0 ms) and ``d5`` (10 ms),
   paced at 0.5, 1, 2 Gbit/s and unpaced: delivered rate, retransmits, and every drop on the
   line's path (both TAPs' queues, the line's ring); UDP is no use here: iperf3's UDP sender
   tops out near 0.1 Gbit/s on a busy 2-core machine, plain veth or not;
3. one TCP flow to ``wan`` with socket buffers of 256 KiB, 1 and 4 MiB (``iperf3 -w``) against
   window / RTT, and with the defaults (autotuning).

Needs root; about 2 minutes. Everything it creates is removed, also on failure or Ctrl-C.

    sudo .venv/bin/python bench/delayline.py [rtt] [rate] [window]   # default: all three
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from netfleet.lab import LabHost, down, load_lab, resolve_host, up
from netfleet.lab import delayline as dl
from netfleet.lab.state import LabState, read_state

DELAYS_MS = {"d05": 0.5, "d5": 5.0, "d25": 25.0, "d50": 50.0}
WAN_MS = 20.0
TCP_RATES = [0.5e9, 1e9, 2e9, 0.0]  # 0: unpaced
WINDOWS = [256 << 10, 1 << 20, 4 << 20]
IRTT_PORT, IPERF_PORT = 2112, 5201


def lab_text(name: str) -> str:
    hosts = ["  server: {}", "  plain: {}", "  near: {link: {}}"]
    for host, ms in DELAYS_MS.items():
        hosts.append(f"  {host}: {{link: {{out: {{delay: {ms}ms}}, in: {{delay: {ms}ms}}}}}}")
    hosts.append(f"  wan: {{link: {{out: {{delay: {WAN_MS}ms}}, in: {{delay: {WAN_MS}ms}}}}}}")
    return f"name: {name}\nsubnet: 198.18.93.0/24\nhosts:\n" + "\n".join(hosts) + "\n"


def netns(ns: str, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["ip", "netns", "exec", ns, *argv], capture_output=True, text=True, timeout=timeout
    )


@contextmanager
def server(host: LabHost, *argv: str) -> Iterator[None]:
    proc = subprocess.Popen(
        ["ip", "netns", "exec", host.namespace, *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(0.4)
    try:
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def irtt_median_ms(client: LabHost, target: LabHost) -> float:
    out = netns(client.namespace, "irtt", "client", "-Q", "-o", "-", "-i", "3ms", "-d", "3s",
                f"{target.address}:{IRTT_PORT}")  # fmt: skip
    return float(json.loads(out.stdout)["stats"]["rtt"]["median"]) / 1e6


def ping_avg_ms(client: LabHost, target: LabHost) -> float:
    out = netns(client.namespace, "ping", "-q", "-n", "-c", "200", "-i", "0.01", target.address)
    stats = out.stdout.rsplit("=", 1)[1].split("/")  # min/avg/max/mdev
    return float(stats[1])


def rtt_table(name: str, state: Path) -> None:
    print("\n1. Round trip seen against the configured delay (irtt median, ping average)")
    print(f"{'each way':>9} {'RTT set':>8} {'irtt':>11} {'irtt-set':>9} {'lab own':>8} "
          f"{'irtt-set-own':>13} {'ping avg':>11} {'ping-set-own':>13}")  # fmt: skip
    client, near = resolve_host(name, "server", state), resolve_host(name, "near", state)
    for host, ms in DELAYS_MS.items():
        target = resolve_host(name, host, state)
        srv = ("irtt", "server", "-i", "0", "-b")
        with server(target, *srv, f"{target.address}:{IRTT_PORT}"), \
                server(near, *srv, f"{near.address}:{IRTT_PORT}"):  # fmt: skip
            with ThreadPoolExecutor(2) as pool:
                far_ms, own_ms = pool.map(lambda t: irtt_median_ms(client, t), [target, near])
            with ThreadPoolExecutor(2) as pool:
                ping_ms, ping_own = pool.map(lambda t: ping_avg_ms(client, t), [target, near])
        rtt = 2 * ms
        print(
            f"{ms:>6g} ms {rtt:>5g} ms {far_ms:>8.3f} ms {(far_ms - rtt) * 1e3:>6.0f} µs "
            f"{own_ms * 1e3:>5.0f} µs {(far_ms - rtt - own_ms) * 1e3:>10.0f} µs "
            f"{ping_ms:>8.3f} ms {(ping_ms - rtt - ping_own) * 1e3:>10.0f} µs"
        )


def iperf3(client: LabHost, target: LabHost, *extra: str, seconds: int = 3) -> dict:
    with server(target, "iperf3", "-s", "-1", "-B", target.address, "-p", str(IPERF_PORT)):
        out = netns(client.namespace, "iperf3", "-c", target.address, "-p", str(IPERF_PORT),
                    "-J", "-t", str(seconds), *extra, timeout=seconds + 30)  # fmt: skip
    result = json.loads(out.stdout)
    if result.get("error"):
        raise RuntimeError(f"iperf3 to {target.name}: {result['error']}")
    return result


def tap_drops(state: LabState, host: str) -> int:
    """Packets the host's two TAPs dropped (their queue toward the delay line was full)."""
    h = state.hosts[host]
    total = 0
    for ns, dev in ((h.namespace, h.interface), (state.switch, h.port)):
        out = subprocess.run(["ip", "-n", ns, "-j", "-s", "link", "show", "dev", dev],
                             capture_output=True, text=True, check=True).stdout  # fmt: skip
        total += json.loads(out)[0]["stats64"]["tx"]["dropped"]
    return total


def line_drops(state: LabState, host: str, state_dir: Path) -> int:
    """Everything the delay line path dropped: TAP queues, ring overflow (no loss configured)."""
    c = dl.counters(state, state.hosts[host], state_dir)
    assert c, f"the delay line of {host} is not running"
    return tap_drops(state, host) + sum(d["overflow"] + d["lost"] for d in c.values())


def throughput(name: str, state_dir: Path) -> None:
    print("\n2. Forwarding rate: one TCP flow server -> host, paced with iperf3 -b (3 s each)")
    print(f"{'paced at':>9} {'host':>5} {'RTT':>6} {'delivered':>11} {'retransmits':>12} "
          f"{'line drops':>11}")  # fmt: skip
    client = resolve_host(name, "server", state_dir)
    state = read_state(name, state_dir)
    assert state is not None
    best = 0.0
    for rate in TCP_RATES:
        for host in ("plain", "near", "d5"):
            target = resolve_host(name, host, state_dir)
            before = line_drops(state, host, state_dir) if host != "plain" else 0
            end = iperf3(client, target, *(["-b", str(int(rate))] if rate else []))["end"]
            drops = line_drops(state, host, state_dir) - before if host != "plain" else 0
            got = end["sum_received"]["bits_per_second"]
            paced = f"{rate / 1e9:.1f} Gb/s" if rate else "unpaced"
            rtt = 2 * DELAYS_MS.get(host, 0.0)
            shown = "-" if host == "plain" else str(drops)
            print(f"{paced:>9} {host:>5} {rtt:>3g} ms {got / 1e9:>6.2f} Gb/s "
                  f"{end['sum_sent'].get('retransmits', 0):>12} {shown:>11}")  # fmt: skip
            if host != "plain" and drops == 0:
                best = max(best, got)
    print(f"highest rate a flow got through the delay line with no drop on its path: "
          f"{best / 1e9:.2f} Gbit/s (MTU 1500, TCP with GSO: 64 KiB per read/write)")  # fmt: skip


def window_limit(name: str, state_dir: Path) -> None:
    rtt = 2 * WAN_MS / 1e3
    print(f"\n3. One TCP flow over a {rtt * 1e3:g} ms round trip (host wan): window / RTT")
    bdp = 10e9 * rtt / 8 / 1e6
    print(f"   BDP at 10 Gbit/s: 10e9 x {rtt:.3f} s / 8 = {bdp:.0f} MB; a window W carries at "
          "most W x 8 / RTT. Linux doubles SO_RCVBUF (-w) and keeps part of it for overhead: "
          "the window lies between W and 2W")  # fmt: skip
    print(f"{'iperf3 -w':>10} {'W x 8 / RTT':>12} {'measured':>10} {'ratio':>6}")
    client, wan = resolve_host(name, "server", state_dir), resolve_host(name, "wan", state_dir)
    for w in WINDOWS:
        end = iperf3(client, wan, "-w", str(w), "-O", "1", seconds=4)["end"]
        got = end["sum_received"]["bits_per_second"]
        limit = w * 8 / rtt
        print(f"{w >> 10:>6} KiB {limit / 1e6:>7.0f} Mb/s {got / 1e6:>6.0f} Mb/s "
              f"{got / limit:>6.2f}")  # fmt: skip
    end = iperf3(client, wan, "-O", "1", seconds=4)["end"]
    rmem = netns(client.namespace, "sysctl", "-n", "net.ipv4.tcp_rmem").stdout.split()
    print(f"{'default':>10} {'':>12} {end['sum_received']['bits_per_second'] / 1e6:>6.0f} Mb/s "
          f"(defaults: tcp_rmem max {int(rmem[2]) >> 20} MiB; "
          "in 4 s slow start and autotuning are still growing the window)")  # fmt: skip


def main() -> int:
    if os.geteuid() != 0:
        print("needs root (network namespaces)", file=sys.stderr)
        return 4
    name = "b" + secrets.token_hex(3)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "lab.yaml"
        path.write_text(lab_text(name))
        state = Path(tmp) / "labs"
        up(load_lab(path), state_dir=state)
        try:
            load = os.getloadavg()[0]
            print(f"lab {name}; machine load average {load:.1f} on {os.cpu_count()} cores")
            parts = sys.argv[1:] or ["rtt", "rate", "window"]
            for part, run in (("rtt", rtt_table), ("rate", throughput), ("window", window_limit)):
                if part in parts:
                    run(name, state)
        finally:
            down(name, state_dir=state)
    return 0


if __name__ == "__main__":
    sys.exit(main())
