"""A per-flow cap with this kernel's tc: htb classes per flow, chosen by a classic-BPF hash.

The kernel here has no ``fq``/``sfq``/``fq_codel`` (which would separate flows themselves), but it
has ``htb`` and the ``bpf`` classifier. cls_bpf runs a *classic* BPF program whose return value
is the class id, so a 15-instruction program computes ``1:(0x100 + (sport XOR dport) & 0xff)``
for IPv4 TCP/UDP packets and returns 0 (→ htb's default class, uncapped) for anything else (ARP,
ICMP). Each of the 256 classes is an htb class with ``rate = ceil = cap``: every flow gets at most
``cap``. Two flows whose port XORs share the low byte share one cap; Linux hands consecutive
connections to one destination ports 2 apart, so the streams of one test do not collide.

The cap is applied on the host's ``eth0`` (what it sends) and on its switch port (what it
receives), like ``out``/``in`` shapers, which it therefore replaces on that host.
"""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

from netfleet.lab.commands import run

BUCKETS = 256
FIRST_MINOR = 0x100
DEFAULT_RATE = "100gbit"

# classic BPF opcodes (linux/filter.h)
_LDH_ABS, _LDB_ABS, _LDXB_MSH, _LDH_IND = 0x28, 0x30, 0xB1, 0x48
_ST, _LDX_MEM, _XOR_X, _AND_K, _ADD_K = 0x02, 0x61, 0xAC, 0x54, 0x04
_JEQ_K, _RET_A, _RET_K = 0x15, 0x16, 0x06


def program() -> list[tuple[int, int, int, int]]:
    """(code, jt, jf, k) of the flow-hash classifier; offsets include the 14-byte Ethernet
    header (cls_bpf sees the MAC header on ingress and egress)."""
    return [
        (_LDH_ABS, 0, 0, 12),  # 0: A = ethertype
        (_JEQ_K, 0, 12, 0x0800),  # 1: IPv4? else -> 14
        (_LDB_ABS, 0, 0, 23),  # 2: A = IP protocol
        (_JEQ_K, 1, 0, 6),  # 3: TCP -> 5
        (_JEQ_K, 0, 9, 17),  # 4: UDP? else -> 14
        (_LDXB_MSH, 0, 0, 14),  # 5: X = IP header length
        (_LDH_IND, 0, 0, 14),  # 6: A = source port
        (_ST, 0, 0, 0),  # 7: M[0] = A
        (_LDH_IND, 0, 0, 16),  # 8: A = destination port
        (_LDX_MEM, 0, 0, 0),  # 9: X = M[0]
        (_XOR_X, 0, 0, 0),  # 10: A ^= X
        (_AND_K, 0, 0, BUCKETS - 1),  # 11: A &= 0xff
        (_ADD_K, 0, 0, (1 << 16) + FIRST_MINOR),  # 12: A = 1:(0x100 + A)
        (_RET_A, 0, 0, 0),  # 13: class id
        (_RET_K, 0, 0, 0),  # 14: no match -> htb default class
    ]


def bytecode() -> str:
    prog = program()
    return ",".join([str(len(prog)), *(f"{c} {t} {f} {k}" for c, t, f, k in prog)])


def batch(dev: str, cap_bps: float) -> list[str]:
    """tc batch lines that cap every flow leaving ``dev`` at ``cap_bps``."""
    rate = f"{round(cap_bps)}bit"
    burst = max(2 * 65536, math.ceil(cap_bps / 8 * 0.001))
    lines = [
        f"qdisc add dev {dev} root handle 1: htb default 1",
        f"class add dev {dev} parent 1: classid 1:1 htb rate {DEFAULT_RATE}",
    ]
    for i in range(BUCKETS):
        lines.append(
            f"class add dev {dev} parent 1: classid 1:{FIRST_MINOR + i:x} htb rate {rate} "
            f"ceil {rate} burst {burst} cburst {burst} quantum 65536"
        )
    lines.append(f'filter add dev {dev} parent 1: prio 1 bpf bytecode "{bytecode()}"')
    return lines


def apply(ns: str, dev: str, cap_bps: float) -> None:
    """Install the per-flow cap on ``dev`` inside namespace ``ns`` (one ``tc -batch``)."""
    with tempfile.NamedTemporaryFile("w", prefix="nf-flowcap-", suffix=".tc") as fh:
        fh.write("\n".join(batch(dev, cap_bps)) + "\n")
        fh.flush()
        run(["tc", "-n", ns, "-batch", str(Path(fh.name))])
