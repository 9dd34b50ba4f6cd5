"""What a cloud study costs as the seeds ran it and as netfleet plans it, from the same price
table (issue 25.7). Offline, a few seconds, no AWS call.

    uv run python bench/study_cost.py [--quota-standard 1152] [--quota-g 64] [--quota-p 64]

* **Seed 002** (77 types, ``iperf3 -P 10 -t 3600``): as the seed ran it — each type's client
  with its own c5.18xlarge server (widdix/ec2-network-benchmark's stack), 3600 s each, one
  family's stacks at once, families one after another. As netfleet plans it — one shared
  c5n.18xlarge receiver (100 Gbit/s) held for the whole study, each client type acquired in
  waves (longest first, bounded by the vCPU quotas and the receiver's Gbit/s), released after
  its run: steady types (catalogue baseline = peak) 60 s, burstable ones their burst τ (+25 %)
  + 30 s at baseline, boot 120 s + install 60 s + release 10 s each, per-second billing with
  the one-minute minimum. Burst τ = bucket ÷ (peak − baseline) with the bucket seed 004 measured
  for the r4 type of the same baseline (its calculator: 0.75 → 2,700 Gbit, 1.25 → 5,145,
  2.5 → 8,925, 5 → 11,950); a type without catalogue figures gets the longest documented burst
  (60 min).
* **As run**: the same study written as a campaign spec (77 client hosts, one receiver, adaptive
  runs) and planned by what ``netfleet run`` executes
  (``netfleet.cloud.aws.plan.runwaves.plan_run``): bounds from the catalogue alone (no bucket
  is known before a run), every job allowed at once.
* **Seed 000** (10 Fargate tiers × in/out, 10 s omit + 60 s): tasks one after another beside a
  c5.18xlarge client (the seed) vs all tasks at once (netfleet; their summed rates stay far
  below the client's), each task with its 3 min start/stop.
* **Seed 004** (r4 pairs, -t 3600): 3600 s per pair vs the adaptive stop bounded by the
  catalogue and the seed's own buckets.

Catalogue figures: moto's copy of DescribeInstanceTypes (1,395 types); g3, p2 and p3 are not in
it — their vCPUs and network performance are transcribed from AWS's accelerated-computing
instance page (no baseline/peak figures: they get the 60-min bound unless fixed-rate).
Quotas: the defaults are assumptions (an established account's applied values), not read.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
from importlib.resources import files
from pathlib import Path

from netfleet.cloud.aws.plan import catalogue, prices, quotas
from netfleet.cloud.plan import stopbound, waves

ROOT = Path(__file__).resolve().parent.parent
TYPES = [
    t
    for t in (ROOT / "bench" / "seed002_types.txt").read_text().splitlines()
    if t and not t.startswith("#")
]
#: seed 004's calculator: baseline Gbit/s → bucket Gbit (r4.large … r4.4xlarge, eu-west-1)
SEED004_BUCKETS = {0.75: 2700.0, 1.25: 5145.0, 2.5: 8925.0, 5.0: 11950.0}
#: not in moto's catalogue (retired types): (vCPUs, AWS's network performance text, Gbit/s
#: when fixed-rate)
ACCELERATED = {
    "g3.4xlarge": (16, "Up to 10 Gigabit", None),
    "g3.8xlarge": (32, "10 Gigabit", 10.0),
    "g3.16xlarge": (64, "20 Gigabit", 20.0),
    "p2.xlarge": (4, "High", None),
    "p2.8xlarge": (32, "10 Gigabit", 10.0),
    "p2.16xlarge": (64, "20 Gigabit", 20.0),
    "p3.2xlarge": (8, "Up to 10 Gigabit", None),
    "p3.8xlarge": (32, "10 Gigabit", 10.0),
    "p3.16xlarge": (64, "25 Gigabit", 25.0),
}
SEED_SERVER = "c5.18xlarge"
RECEIVER = "c5n.18xlarge"
RECEIVER_GBPS = 100.0


def load_catalogue() -> dict[str, catalogue.InstanceInfo]:
    raw = json.loads(
        gzip.decompress((files("moto.ec2") / "resources" / "instance_types.json.gz").read_bytes())
    )
    out = {t: catalogue.from_api(raw[t]) for t in [*TYPES, SEED_SERVER, RECEIVER] if t in raw}
    for t, (vcpus, perf, gbps) in ACCELERATED.items():
        out[t] = catalogue.InstanceInfo(t, vcpus, 0.0, perf, gbps, gbps, "supported", ("x86_64",))
    return out


def implied_bucket(baseline: float) -> float:
    """Seed 004's bucket for the r4 type of this baseline, linear in between (0 at 0)."""
    pts = sorted({0.0: 0.0, **SEED004_BUCKETS}.items())
    for (b0, k0), (b1, k1) in itertools.pairwise(pts):
        if baseline <= b1:
            return k0 + (k1 - k0) * (baseline - b0) / (b1 - b0)
    (b0, k0), (b1, k1) = pts[-2], pts[-1]
    return k1 + (k1 - k0) * (baseline - b1) / (b1 - b0)


def machine(
    itype: str, cat: dict[str, catalogue.InstanceInfo], table: prices.PriceTable, region: str
) -> waves.Machine:
    cls = quotas.quota_class(itype)
    code = quotas.QUOTAS.get((cls, "on-demand"), (None,))[0] if cls else None
    return waves.Machine(itype, cat[itype].vcpus, table.ec2_hourly(region, itype), code)


def budget(args: argparse.Namespace, gbps: float | None) -> waves.Budget:
    q = {cls: quotas.QUOTAS[(cls, "on-demand")][0] for cls in ("standard", "g", "p")}
    return waves.Budget(
        vcpus={q["standard"]: args.quota_standard, q["g"]: args.quota_g, q["p"]: args.quota_p},
        gbps=gbps,
    )


def line(label: str, p: waves.WavePlan, n_waves: int | None = None) -> None:
    usd = "unknown" if p.usd is None else f"${p.usd:,.2f}"
    peak = ", ".join(f"{q} {v}" for q, v in sorted(p.peak_vcpus.items()) if v)
    print(
        f"  {label:<9} {usd:>10}  instance-hours {p.instance_hours:7.2f}  "
        f"wall {p.wall_s / 3600:6.2f} h  waves {n_waves or p.waves:3d}  peak instances "
        f"{p.peak_instances:3d}  peak vCPUs {sum(p.peak_vcpus.values()):5d} ({peak})"
    )
    for u in p.unfit:
        print(f"    does not fit: {u}")


def seed002(args: argparse.Namespace, table: prices.PriceTable) -> tuple[float, float]:
    cat = load_catalogue()
    region = "us-east-1"
    families: dict[str, list[str]] = {}
    for t in TYPES:
        families.setdefault(t.split(".")[0], []).append(t)
    no_quota = waves.Budget()
    seed_parts = [
        waves.plan(
            [
                waves.Job(
                    t, (machine(t, cat, table, region), machine(SEED_SERVER, cat, table, region)),
                    3600.0,
                )
                for t in fam
            ],
            no_quota,
            waves.Timing(0.0, 0.0, 0.0),  # the seed's figure: 3600 s per type, nothing else
        )
        for fam in families.values()
    ]  # fmt: skip
    seed = waves.WavePlan(  # the families one after another
        slots=[s for p in seed_parts for s in p.slots],
        shared=(),
        wall_s=sum(p.wall_s for p in seed_parts),
        peak_vcpus={  # per quota: the largest family's
            q: max(p.peak_vcpus.get(q, 0) for p in seed_parts)
            for q in {q for p in seed_parts for q in p.peak_vcpus}
        },
        peak_instances=max(p.peak_instances for p in seed_parts),
        instance_hours=sum(p.instance_hours for p in seed_parts),
        usd=sum(p.usd or 0.0 for p in seed_parts),
        unpriced=[u for p in seed_parts for u in p.unpriced],
        unfit=[],
        over_cost=None,
    )
    jobs, long = [], []
    for t in TYPES:
        info = cat[t]
        bucket = (
            implied_bucket(info.baseline_gbps)
            if info.burstable and info.baseline_gbps is not None
            else None
        )
        b = stopbound.bound(info, bucket_gbit=bucket)
        if b.long:
            long.append((t, b))
        peak = info.peak_gbps or 10.0
        jobs.append(waves.Job(t, (machine(t, cat, table, region),), b.seconds, peak, b.why))
    shared = (machine(RECEIVER, cat, table, region),)
    nf = waves.plan(jobs, budget(args, RECEIVER_GBPS), waves.Timing(), shared)
    print(f"seed 002: {len(TYPES)} types, -P10, {region}")
    line("seed", seed, len(families))
    line("netfleet", nf)
    print(f"  long runs ({len(long)} types; the rest are fixed-rate per the catalogue, 60 s):")
    for t, b in sorted(long, key=lambda x: -x[1].seconds):
        print(f"    {t:<12} {b.seconds / 60:5.1f} min  {b.why}")
    assert seed.usd is not None and nf.usd is not None
    if nf.unfit:
        print(f"  ({len(nf.unfit)} types do not fit the quotas: left out of netfleet's total)")
    print(f"  ratio netfleet/seed: {nf.usd / seed.usd:.3f}")
    return seed.usd, nf.usd


def as_run(args: argparse.Namespace, table: prices.PriceTable, seed_usd: float) -> None:
    """Seed 002's study as a campaign spec, planned by what ``netfleet run`` executes
    (:func:`netfleet.cloud.aws.plan.runwaves.plan_run`): one client host per type and the receiver,
    adaptive runs (``until_steady``) bounded by the catalogue alone — no bucket is known before
    the run, so a burstable type gets the longest documented burst — all jobs allowed at once
    (``concurrency: 77``), the vCPU quotas as given."""
    import tempfile

    import yaml

    from netfleet.cloud.aws.plan import runwaves
    from netfleet.cloud.aws.runs import cloud_spec
    from netfleet.plan import expand
    from netfleet.spec import load_spec

    names = {t: t.replace(".", "-") for t in TYPES}
    doc = {
        "campaign": "seed002",
        "results": "/tmp/unused",
        "concurrency": len(TYPES),
        "allow_host_overlap": ["rx"],
        "cloud": {
            "region": "us-east-1",
            "placement": "none",
            "backing": "sim",  # planned only, never launched: AWS's timing (time_scale 1)
            "time_scale": 1,
            "fleets": [{"name": "rx", "instance_type": RECEIVER, "role": "server"}]
            + [{"name": n, "instance_type": t, "role": "client"} for t, n in names.items()],
        },
        "tests": [
            {
                "name": "p10",
                "engine": "iperf3",
                "server": "rx",
                "subject": "client",
                "params": {"duration": 3600, "parallel": 10, "until_steady": 10},
                "matrix": {"client": list(names.values())},
            }
        ],
    }
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "seed002.yaml"
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        spec = load_spec(path)
    cs = cloud_spec(spec)
    assert cs is not None
    q = {cls: quotas.QUOTAS[(cls, "on-demand")][0] for cls in ("standard", "g", "p")}
    quota = {
        runwaves.quota_key(q["standard"], "us-east-1"): args.quota_standard,
        runwaves.quota_key(q["g"], "us-east-1"): args.quota_g,
        runwaves.quota_key(q["p"], "us-east-1"): args.quota_p,
    }
    rw = runwaves.plan_run(spec, cs, expand(spec), table, load_catalogue(), vcpu_budget=quota)
    line("as run", rw.plan)
    long = sum(b.long for b in rw.bounds.values())
    print(
        f"    ({long} long types: no bucket known before the run, so the longest documented "
        "burst; the line above assumes seed 004's buckets; no receiver Gbit/s limit)"
    )
    assert rw.plan.usd is not None
    print(f"  ratio as-run/seed: {rw.plan.usd / seed_usd:.3f}")


def seed000(table: prices.PriceTable) -> None:
    from netfleet.cloud.aws.acquire import fargate
    from netfleet.spec.cloud import TierSpec

    region = "eu-west-1"
    tiers = [(256, 512), (256, 2048), (512, 1024), (512, 4096), (1024, 2048), (1024, 8192),
             (2048, 4096), (2048, 16384), (4096, 8192), (4096, 30720)]  # fmt: skip
    run_s = 2 * (10 + 60)  # in and out, 10 s omitted + 60 s each
    start_stop_s = 180.0
    per_task = [fargate.hourly(table, region, TierSpec(cpu=c, memory=m)) or 0.0 for c, m in tiers]
    client = table.ec2_hourly(region, SEED_SERVER) or 0.0
    task_s = run_s + start_stop_s
    tasks_usd = sum(p * waves.billed_s(task_s) / 3600 for p in per_task)
    seed_wall = len(tiers) * task_s
    nf_wall = task_s
    seed_usd = tasks_usd + client * seed_wall / 3600
    nf_usd = tasks_usd + client * nf_wall / 3600
    print(f"seed 000: {len(tiers)} Fargate tiers × in/out, {region}, client {SEED_SERVER}")
    print(f"  seed      ${seed_usd:8.2f}  wall {seed_wall / 60:5.1f} min (tasks one at a time)")
    print(f"  netfleet  ${nf_usd:8.2f}  wall {nf_wall / 60:5.1f} min (all tasks in one wave)")
    print(f"  ratio netfleet/seed: {nf_usd / seed_usd:.3f}")


def seed004(table: prices.PriceTable) -> None:
    cat = load_catalogue()
    region = "eu-west-1"
    sizes = ["large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge"]
    seed_usd = nf_usd = 0.0
    print(f"seed 004: r4 pairs, {region}")
    for s in sizes:
        t = f"r4.{s}"
        info = cat[t]
        p = table.ec2_hourly(region, t) or 0.0
        bucket = SEED004_BUCKETS.get(info.baseline_gbps or -1.0) if info.burstable else None
        b = stopbound.bound(info, bucket_gbit=bucket)
        held = waves.Timing().held_s(b.seconds)
        seed_usd += 2 * p
        nf_usd += 2 * p * waves.billed_s(held) / 3600
        print(f"    {t:<12} seed 60.0 min  netfleet {held / 60:5.1f} min held: {b.why}")
    print(f"  seed      ${seed_usd:8.2f}   netfleet  ${nf_usd:8.2f}")
    print(f"  ratio netfleet/seed: {nf_usd / seed_usd:.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quota-standard", type=int, default=1152)
    ap.add_argument("--quota-g", type=int, default=64)
    ap.add_argument("--quota-p", type=int, default=64)
    args = ap.parse_args()
    table = prices.load(None)
    print(f"prices: {table.path.name} (each type's source and date: netfleet cloud prices)")
    seed_usd, _ = seed002(args, table)
    as_run(args, table, seed_usd)
    seed000(table)
    seed004(table)


if __name__ == "__main__":
    main()
