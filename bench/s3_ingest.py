"""Ingest of an S3 results root (moto's server as its own process, loopback only), into a local
catalog and into an S3 catalog: the first ingest, then the same again (a no-op: decided by the
manifest from the root's listing — size and ETag —, no envelope opened), wall seconds each.

    uv run python bench/s3_ingest.py [--envelopes 300] [--rounds 2]

About 30 s per round with the defaults (moto answers every request in Python).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.goldenkit import CASES, envelope  # noqa: E402
from tests.motokit import moto_server  # noqa: E402

from netfleet import aws  # noqa: E402
from netfleet.catalog import ingest  # noqa: E402
from netfleet.store import open_root  # noqa: E402
from netfleet.store.root import ResultsRoot  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--envelopes", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, moto_server():
        os.environ["NETFLEET_S3_STATE"] = str(Path(tmp) / "state")
        local = ResultsRoot(Path(tmp) / "raw")
        for n in range(args.envelopes):
            local.write(envelope(CASES[n % len(CASES)], f"r{n:05d}"))
        s3 = aws.client("s3")
        s3.create_bucket(Bucket="raw")
        s3.create_bucket(Bucket="catalogs")
        items = [(str(p.relative_to(local.path)), p.read_bytes()) for p in local.files()]
        open_root("s3://raw/fleet").write_encoded_many(items)
        print(f"{args.envelopes} envelopes in s3://raw/fleet; wall seconds")
        for round_ in range(args.rounds):
            for name, catalog in (
                ("local", f"{tmp}/cat{round_}"),
                ("S3", f"s3://catalogs/c{round_}"),
            ):
                times = []
                for _ in range(2):
                    started = time.monotonic()
                    report = ingest(open_root("s3://raw/fleet"), catalog)
                    times.append(time.monotonic() - started)
                print(
                    f"round {round_ + 1}, {name} catalog: first {times[0]:.2f} s, again "
                    f"{times[1]:.2f} s ({report.unchanged} of {report.seen} not opened)"
                )


if __name__ == "__main__":
    main()
