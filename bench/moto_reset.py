"""What a test's fresh moto costs the server, and what a second AWS client costs netfleet: the
suite's moto server (tests/motoserve.py, forked as the tests fork it) is reset, then asked
DescribeVpcs, DescribeInstances and ECS ListClusters — what the cloud tests' ``fresh`` fixture
and their first calls do — ``--rounds`` times; the server's CPU (``/proc/PID/stat``) is printed
for the lot. Then ``aws.client("ec2", …)`` a second time in this process, in ms.

    .venv/bin/python bench/moto_reset.py [--rounds 20]

A few seconds; loopback only.
"""

from __future__ import annotations

import argparse
import os
import sys
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests import motokit  # noqa: E402

from netfleet import aws  # noqa: E402


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20, help="resets (default 20)")
    args = ap.parse_args()
    if args.rounds < 1:
        sys.exit("moto_reset: --rounds must be at least 1")
    with motokit.moto_server() as server:
        ec2 = aws.client("ec2", "us-east-1")
        ecs = aws.client("ecs", "us-east-1")
        ec2.describe_vpcs()  # the server's first backend, made before the count starts
        before = cpu_s(server.proc.pid)
        for _ in range(args.rounds):
            server.reset()
            ec2.describe_vpcs()
            ec2.describe_instances()
            ecs.list_clusters()
        spent = cpu_s(server.proc.pid) - before
        print(f"{args.rounds} × (reset, DescribeVpcs, DescribeInstances, ListClusters): "
              f"the server's CPU {spent:.2f} s ({spent / args.rounds:.3f} s a round)")  # fmt: skip
        again = timeit.timeit(lambda: aws.client("ec2", "us-east-1"), number=1000)
        print(f'aws.client("ec2", "us-east-1") again: {again:.3f} ms')


if __name__ == "__main__":
    main()
