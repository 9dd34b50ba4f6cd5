"""Seeded odd iperf3 documents through the reader of an import by reference
(``reader.read_file``): one hash of every outcome — the manifest row (state, reason, flags),
the ``runs`` row, the interval rows and the ``ends`` rows, each value by its ``repr`` (an int
and a float differ) — to compare two trees' decoder, checks and row builder (issue 34).

    .venv/bin/python bench/odd_documents.py --documents 4000
    PYTHONPATH=/tmp/before/src .venv/bin/python bench/odd_documents.py --documents 4000

Each document is a client ``-J`` document (TCP or UDP, --bidir or not, 0-60 intervals, 0-3
streams an interval) with up to three odd changes: a sum field of another type or out of
range, a key removed or added, a null, empty or missing sum, the last interval repeated, a
key of the file's own, a server's document, a server-side file, a gap, omitted intervals, an
interval that is not an object, reverse sums in one interval only, ``intervals`` of another
type, a rate no link carries. ``--each`` prints every document's hash (to find the first
that differs).
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import random
from typing import Any

ODD = [None, "12", "x", True, False, 0, -1, 1.5, 10**20, 10**400, -(10**30), 2**63, 2**63 - 1,
       -0.0, 1e308, [], {}, 3.0, 7]  # fmt: skip
FIELDS = ["start", "end", "seconds", "bytes", "bits_per_second", "retransmits", "omitted",
          "sender", "jitter_ms", "packets"]  # fmt: skip


def a_sum(rng: random.Random, t0: float, t1: float, sender: bool, udp: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"start": t0, "end": t1, "seconds": t1 - t0,
                           "bytes": rng.randint(10**6, 10**9)}  # fmt: skip
    out["bits_per_second"] = out["bytes"] * 8 / out["seconds"]
    if udp:
        out.update(jitter_ms=rng.random(), lost_packets=rng.randint(0, 9),
                   packets=rng.randint(10, 999), lost_percent=rng.random())  # fmt: skip
    else:
        out["retransmits"] = rng.randint(0, 300)
    out.update(omitted=False, sender=sender)
    return out


def document(rng: random.Random) -> dict[str, Any]:
    n, udp, bidir = rng.choice([0, 1, 2, 5, 10, 60]), rng.random() < 0.2, rng.random() < 0.15
    intervals: list[Any] = []
    for i in range(n):
        t0 = float(i) if rng.random() < 0.9 else i
        streams = [dict(a_sum(rng, t0, t0 + 1.0, True, udp), socket=5 + k)
                   for k in range(rng.choice([0, 1, 3]))]  # fmt: skip
        entry = {"streams": streams, "sum": a_sum(rng, t0, t0 + 1.0, True, udp)}
        if bidir:
            entry["sum_bidir_reverse"] = a_sum(rng, t0, t0 + 1.0, False, udp)
        intervals.append(entry)
    test = {"protocol": "UDP" if udp else "TCP", "num_streams": 1, "duration": n, "omit": 0,
            "reverse": 0, "bidir": int(bidir)}  # fmt: skip
    total = {"start": 0, "end": float(n), "seconds": float(n), "bytes": 5, "bits_per_second": 40.0}
    doc: dict[str, Any] = {
        "start": {"connecting_to": {"host": "198.18.0.2", "port": 5201},
                  "version": "iperf 3.12", "timestamp": {"timesecs": 1528842526},
                  "test_start": test},
        "intervals": intervals,
        "end": {"sum_sent": dict(total), "sum_received": dict(total)},
    }  # fmt: skip
    for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):
        odd(rng, doc)
    return doc


def odd(rng: random.Random, doc: dict[str, Any]) -> None:
    """One odd change to ``doc``."""
    kind = rng.randrange(14)
    every = doc["intervals"] if isinstance(doc["intervals"], list) else []
    ivs = [iv for iv in every if isinstance(iv, dict) and isinstance(iv.get("sum"), dict)]
    if kind == 0 and ivs:
        rng.choice(ivs)["sum"][rng.choice(FIELDS)] = rng.choice(ODD)
    elif kind == 1 and ivs:
        total = rng.choice(ivs)["sum"]
        total.pop(rng.choice(list(total) or ["start"]), None)
    elif kind == 2 and ivs and len(ivs) == len(every):
        every.append(copy.deepcopy(every[-1]))  # iperf3 3.12's repeated last interval
    elif kind == 3 and ivs:
        rng.choice(ivs)["sum"]["zz_extra"] = rng.choice([1, "x", None, {"a": 1}])
    elif kind == 4 and ivs:
        entry = rng.choice(ivs)
        how = rng.randrange(4)
        if how == 3:
            entry.pop("sum")
        else:
            entry["sum"] = [None, {}, {"foo": 1}][how]
    elif kind == 5:
        doc[rng.choice(["host", "zz", "note"])] = rng.choice(["a", 1, 2.5, True, None, [1]])
    elif kind == 6:
        server = copy.deepcopy({k: v for k, v in doc.items() if k != "server_output_json"})
        server["start"] = {"accepted_connection": {"host": "198.18.0.1"},
                           "timestamp": {"timesecs": 1528842526}}  # fmt: skip
        doc["server_output_json"] = server
    elif kind == 7 and ivs:
        total = rng.choice(ivs)["sum"]
        total["start"] = (total.get("start") or 0) + rng.choice([0.5, 0.0001, 3])
    elif kind == 8 and ivs:
        for entry in ivs[: rng.randint(1, len(ivs))]:
            entry["sum"]["omitted"] = True
    elif kind == 9 and ivs and len(ivs) == len(every):
        every[rng.randrange(len(every))] = rng.choice([None, 1, "x", []])
    elif kind == 10 and ivs:
        rng.choice(ivs)["sum_bidir_reverse"] = rng.choice(
            [None, {}, a_sum(rng, 0.0, 1.0, False, False)]
        )
    elif kind == 11:
        doc["intervals"] = rng.choice([{}, None, "x", []])
    elif kind == 12 and ivs:
        rng.choice(ivs)["sum"]["bits_per_second"] = rng.choice([-5, -5.0, 1e16, 10**17, 3])
    elif kind == 13:
        doc["start"].pop("connecting_to", None)
        doc["start"]["accepted_connection"] = {"host": "198.18.0.9"}


def text(value: Any) -> str:
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda kv: str(kv[0]))
        return "{" + ",".join(f"{k!r}:{text(v)}" for k, v in items) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(text(v) for v in value) + "]"
    return repr(value)


def main() -> None:
    from netfleet.catalog import reader
    from netfleet.catalog.sourcelist import Options
    from netfleet.store.sources import PRESETS, pattern_regex

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--documents", type=int, default=4000)
    ap.add_argument("--each", action="store_true", help="every document's hash")
    args = ap.parse_args()
    opts = Options("import", {}, pattern_regex(PRESETS["seed002"]), side="sender")
    whole, states = hashlib.sha256(), {"ok": 0, "bad": 0}
    for seed in range(args.documents):
        data = json.dumps(document(random.Random(seed))).encode()
        source = f"/odd/d=2018-04-10/r4.4xlarge-15288{seed:05d}.json.gz"
        read = reader.read_file(source, data, {}, opts, mtime=1.5e9)
        out: list[Any] = [read.row]
        if read.rows is not None:
            rows = read.rows
            out += [rows.run, rows.intervals.rows(), rows.ends, rows.extra]
        line = text(out).encode()
        states[read.row["state"]] += 1
        whole.update(line)
        if args.each:
            print(seed, hashlib.sha256(line).hexdigest()[:12])
    print(f"{args.documents} documents ({states['ok']} ok, {states['bad']} refused): "
          f"{whole.hexdigest()}")  # fmt: skip


if __name__ == "__main__":
    main()
