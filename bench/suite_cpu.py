"""Where the test suite's CPU goes: the suite's pytest command (``scripts/test.sh``'s main
phase: ``-m "not solo"``) run under the kernel's process accounting (``acct(2)``, BSD v3
records: one a process that ends, with its user and system CPU), then the CPU by program, the
xdist workers' own, the short-lived Python processes (a CLI or a helper started by a test), and
how busy the machine's cores were (CPU over wall × cores; and from ``/proc/stat``, which also
counts what the records round to nothing: a process shorter than their 10 ms tick).

    .venv/bin/python bench/suite_cpu.py              # four workers, as scripts/test.sh
    .venv/bin/python bench/suite_cpu.py --workers 2
    .venv/bin/python bench/suite_cpu.py --workers 1 -- tests/test_ssh.py

Root only (``acct(2)``). Process accounting is machine-wide: every process that ends while it
runs is counted, the suite's or not — run it on a quiet machine; it switches accounting off
however pytest ends (and would replace a records file another tool had switched on: there is
none on this machine's Debian unless the ``acct`` package is installed).
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import os
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# struct acct_v3 (linux/acct.h): flag, version, tty, exitcode, uid, gid, pid, ppid, btime,
# etime (float), then comp_t utime, stime, mem, io, rw, minflt, majflt, swaps; comm[16]
_RECORD = struct.Struct("<BBHIIIIIIfHHHHHHHH16s")
_HZ = 100  # AHZ: the unit of an acct_v3 record's times
_LIBC = ctypes.CDLL(None, use_errno=True)


def _comp(value: int) -> int:
    """A comp_t: 13 bits of mantissa, 3 of base-8 exponent."""
    return (value & 0x1FFF) << (((value >> 13) & 7) * 3)


def _acct(path: str | None) -> None:
    if _LIBC.acct(path.encode() if path else None) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"acct({path!r}): {os.strerror(err)}")


def records(data: bytes) -> list[tuple[int, int, str, float, float]]:
    """(pid, ppid, program, CPU seconds, elapsed seconds) of each record."""
    out = []
    for off in range(0, len(data) - _RECORD.size + 1, _RECORD.size):
        f = _RECORD.unpack_from(data, off)
        comm = f[18].split(b"\0")[0].decode(errors="replace")
        out.append((f[6], f[7], comm, (_comp(f[10]) + _comp(f[11])) / _HZ, f[9] / _HZ))
    return out


def machine_cpu() -> float:
    """Every core's busy seconds since boot (``/proc/stat``: user, nice, system, irq, softirq,
    steal): unlike the records it counts processes shorter than a tick and the kernel's
    softirq work (a lab's packets) too."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=4, help="xdist workers (-n), as test.sh")
    ap.add_argument("--top", type=int, default=15, help="programs listed")
    ap.add_argument("pytest_args", nargs="*", help="after --: given to pytest")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("suite_cpu: process accounting (acct) needs root")
    root = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory(prefix="suite-cpu-") as tmp:
        pacct = os.path.join(tmp, "pacct")
        Path(pacct).touch()
        cmd = [
            *(sys.executable, "-m", "pytest", "-n", str(args.workers), "--dist", "loadfile"),
            *("--no-loadscope-reorder", "-m", "not solo", "-p", "no:cacheprovider", "-q"),
            *args.pytest_args,
        ]
        env = {**os.environ, "PYTHONPYCACHEPREFIX": str(Path(sys.prefix) / "netfleet-test-pycache")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        _acct(pacct)
        start, busy = time.monotonic(), machine_cpu()
        try:
            rc = subprocess.call(cmd, cwd=root, env=env)
        finally:
            _acct(None)
        wall, busy = time.monotonic() - start, machine_cpu() - busy
        recs = records(Path(pacct).read_bytes())
    total = sum(r[3] for r in recs)
    cores = os.cpu_count() or 1
    print(f"\npytest exit {rc}; {args.workers} workers; wall {wall:.1f} s")
    print(f"{len(recs)} processes ended; CPU {total:.1f} s = {total / wall:.2f} of {cores} cores")
    print(f"busy on average (the floor at full use: {total / cores:.0f} s)")
    print(f"the machine's cores were busy {busy:.1f} s (/proc/stat: with processes shorter than")
    print(f"an accounting tick and the kernel's softirq) = {busy / wall:.2f} of {cores} cores")
    by = collections.Counter[str]()
    count = collections.Counter[str]()
    for _, _, comm, cpu, _ in recs:
        by[comm] += cpu
        count[comm] += 1
    for comm, cpu in by.most_common(args.top):
        print(f"  {cpu:8.1f} s  {count[comm]:6d} processes  {comm}")
    lifelong = [r for r in recs if abs(r[4] - wall) < 10 and r[2] == "python"]
    workers = sorted(lifelong, key=lambda r: -r[3])[: args.workers]
    print("xdist workers' own CPU: " + ", ".join(f"{r[3]:.1f} s" for r in workers))
    short = [r[3] for r in recs if r[2] in ("python", "netfleet") and r[4] < 10]
    print(f"Python processes that lived < 10 s: {len(short)}, {sum(short):.1f} CPU s")
    sys.exit(rc)


if __name__ == "__main__":
    main()
