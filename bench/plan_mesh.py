"""Plan and schedule a full mesh of 1,000 SSH hosts; print how long each step takes.

    uv run python bench/plan_mesh.py [--hosts 1000] [--concurrency 500]

Steps, each timed on its own (nothing connects anywhere — the hosts are only planned):

1. validate the campaign spec (1,000 ``kind: ssh`` hosts, one ``mesh`` test);
2. the round-robin schedule: n − 1 rounds of n/2 disjoint pairs (circle method);
3. expand the mesh into every ordered pair as a PlannedRun with its deterministic run key;
4. build the scheduler (pending runs grouped by host pair);
5. scheduler decisions: simulate the first 50,000 runs (jittered lengths around 11.5 s,
   ``concurrency`` at once) and report the cost per run started and ended;
6. the start-up wall-time estimate for the whole campaign.

Takes about 10 s and 1 GB of memory for 1,000 hosts (a million runs).
"""

from __future__ import annotations

import argparse
import random
import time

from netfleet.plan import expand
from netfleet.plan.topology import circle_rounds
from netfleet.runner.scheduler import Limits, Scheduler, estimate_wall_seconds, simulate
from netfleet.spec.models import CampaignSpec


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=1000)
    ap.add_argument("--concurrency", type=int, default=500)
    args = ap.parse_args()
    n = args.hosts
    hosts = {
        f"h{i:04d}": {"kind": "ssh", "address": f"10.{i // 250}.{i % 250}.10", "user": "bench"}
        for i in range(n)
    }
    doc = {
        "campaign": "mesh",
        "hosts": hosts,
        "tests": [{"name": "m", "topology": {"kind": "mesh", "hosts": "all"}}],
        "concurrency": args.concurrency,
    }

    t = time.perf_counter()
    spec = CampaignSpec.model_validate(doc)
    t_spec = time.perf_counter() - t

    t = time.perf_counter()
    rounds = circle_rounds(list(spec.hosts))
    t_rounds = time.perf_counter() - t
    pairs = sum(len(r) for r in rounds)

    t = time.perf_counter()
    runs = expand(spec)
    t_expand = time.perf_counter() - t

    limits = Limits.of(spec)
    t = time.perf_counter()
    Scheduler(runs, limits)
    t_index = time.perf_counter() - t

    sample = runs[:50_000]
    rng = random.Random(1)
    length = {r.sequence: 11.5 + rng.uniform(-0.5, 0.5) for r in sample}
    t = time.perf_counter()
    slots = simulate(sample, limits, lambda r: length[r.sequence])
    t_sim = time.perf_counter() - t

    t = time.perf_counter()
    wall = estimate_wall_seconds(runs, limits)
    t_estimate = time.perf_counter() - t

    print(f"full mesh of {n} hosts, concurrency {args.concurrency}")
    print(f"  spec validation                    {t_spec:8.3f} s")
    print(
        f"  round-robin schedule               {t_rounds:8.3f} s   "
        f"{len(rounds)} rounds, {pairs} pairs"
    )
    print(
        f"  expand to runs with run keys       {t_expand:8.3f} s   {len(runs)} runs, "
        f"{t_expand / len(runs) * 1e6:.1f} µs per run"
    )
    print(f"  scheduler index                    {t_index:8.3f} s")
    print(
        f"  decisions for {len(slots)} runs          {t_sim:8.3f} s   "
        f"{t_sim / len(slots) * 1e6:.1f} µs per run (start + end)"
    )
    print(
        f"  wall-time estimate                 {t_estimate:8.3f} s   "
        f"{wall / 3600:.1f} h for the whole mesh"
    )
    total = t_spec + t_expand + t_estimate  # what `netfleet plan` does (the rounds are in expand)
    print(
        f"  plan = validate + expand + estimate {total:7.3f} s   (target < 1 s: "
        f"{'met' if total < 1 else 'MISSED'})"
    )


if __name__ == "__main__":
    main()
