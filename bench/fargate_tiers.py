"""Seed 000 offline, in full: the Fargate tiers of examples/fargate-tiers.cloud.yaml provisioned
in moto's server (its own process, loopback only), the measurement examples/fargate-tiers.yaml
(60 s, -O 10, -P 2, in and out, 20 s cooldown) run with real iperf3 in the simulated backing
(one namespace per task, shaped from seed 000 × 0.2), the cheat sheet printed beside the seed's
figures, then everything torn down and counted through the API.

    sudo uv run python bench/fargate_tiers.py [--tiers 10] [--duration 60] [--omit 10]
                                              [--cooldown 20]

Root needed (namespaces). About 31 minutes with the defaults (20 runs × 90 s);
``--tiers 2 --duration 5 --omit 1 --cooldown 0`` takes about a minute.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import sys
import tempfile
import urllib.request
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.motokit import moto_server  # noqa: E402

from netfleet import aws, lab  # noqa: E402
from netfleet.catalog import ingest  # noqa: E402
from netfleet.cloud.aws.acquire import fargate  # noqa: E402
from netfleet.cloud.aws.acquire.provision import Provisioner  # noqa: E402
from netfleet.cloud.aws.plan import prices  # noqa: E402
from netfleet.cloud.aws.release import teardown  # noqa: E402
from netfleet.report.cheatsheet import cheatsheet  # noqa: E402
from netfleet.runner import run_campaign  # noqa: E402
from netfleet.spec import load_spec  # noqa: E402
from netfleet.store import ResultsRoot  # noqa: E402
from netfleet.units import goodput_ratio  # noqa: E402
from netfleet_sim import fargate as fargate_sim  # noqa: E402

RATE_SCALE = 0.2


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tiers", type=int, default=10)
    ap.add_argument("--duration", type=float, default=60)
    ap.add_argument("--omit", type=float, default=10)
    ap.add_argument("--cooldown", type=float, default=20)
    args = ap.parse_args()
    camp = fargate.load_campaign(ROOT / "examples" / "fargate-tiers.cloud.yaml")
    camp.fargate.tiers = camp.fargate.tiers[: args.tiers]
    table = prices.load(None)
    tiers_cost = fargate.estimate(table, camp.region, camp.fargate.tiers, camp.duration_minutes)
    fleets = [(f.instance_type, f.count) for f in camp.fleets]
    ec2_cost = prices.estimate(table, camp.region, fleets, camp.duration_minutes)
    ec2_usd = "unknown (no price for " + ", ".join(ec2_cost.unknown) + ")"
    if ec2_cost.usd is not None:
        ec2_usd = f"${ec2_cost.usd:.2f}"
    print(
        f"plan: {tiers_cost.instances} Fargate tasks ${tiers_cost.usd or 0:.2f} + "
        f"{ec2_cost.instances} EC2 {ec2_usd} for {camp.duration_minutes:g} min in {camp.region} "
        f"(prices as of {table.as_of})"
    )
    work = Path(tempfile.mkdtemp(prefix="nf-fargate-bench-"))
    name = "fgb" + secrets.token_hex(3)
    with moto_server() as srv:
        body = {"model_name": "ecs::task", "transition": {"progression": "manual", "times": 10**9}}
        req = urllib.request.Request(
            srv.url + "/moto-api/state-manager/set-transition",
            data=json.dumps(body).encode(),
            method="POST",
        )
        urllib.request.urlopen(req, timeout=10).read()
        prov = Provisioner(camp, work / "cloud", poll_s=0.05)
        try:
            prov.acquire()
            hosts = fargate.acquire_tiers(prov, camp.fargate)
            print(f"acquired {len(hosts)} tasks: " + ", ".join(h.name for h in hosts))
            state = work / "labstate"
            lab.up(
                fargate_sim.lab_spec(name, hosts, rate_scale=RATE_SCALE, subnet="198.18.53.0/24"),
                state_dir=state,
            )
            try:
                doc = yaml.safe_load((ROOT / "examples" / "fargate-tiers.yaml").read_text())
                for key in ("cloud", "results"):  # this bench acquires the tiers itself
                    doc.pop(key)
                doc["hosts"] = fargate_sim.spec_hosts(name, hosts)
                test = doc["tests"][0]
                test["params"].update({"duration": args.duration, "omit": args.omit})
                test["matrix"]["server"] = [h.name for h in hosts]
                doc["cooldown"] = args.cooldown
                spec_path = work / "fargate-tiers.yaml"
                spec_path.write_text(yaml.safe_dump(doc))
                root = ResultsRoot(work / "results")
                result = asyncio.run(run_campaign(load_spec(spec_path), root, lab_state_dir=state))
                print(f"runs ok: {result.ok} of {result.total}")
            finally:
                lab.down(name, state_dir=state)
            ingest(root, work / "catalog")
            sheet = {
                (r["instance_type"], r["direction"]): r
                for r in cheatsheet(work / "catalog").records()
            }
            ratio = goodput_ratio(1500)
            print(
                "\ntier        dir  seed 000 Mbit/s  lab expected  lab avg  lab p5  "
                "measured/expected  sim ×5"
            )
            for h in hosts:
                out_bps, in_bps, _ = fargate_sim.figures(h.tier)
                for direction, seed in (("in", in_bps), ("out", out_bps)):
                    r = sheet.get((h.labels["instance_type"], direction))
                    expected = seed * RATE_SCALE * ratio / 1e6
                    if r is None:
                        print(f"{h.name:11} {direction:4} {seed / 1e6:8.0f}   no data")
                        continue
                    avg, p5 = r["avg"] * 1e3, r["p5"] * 1e3
                    print(
                        f"{h.name:11} {direction:4} {seed / 1e6:8.0f}  {expected:12.1f}  "
                        f"{avg:7.1f}  {p5:6.1f}  {avg / expected:17.3f}  {avg / RATE_SCALE:9.0f}"
                    )
            print(
                "goodput, Mbit/s; lab expected = seed × 0.2 × 1448/1514 (tbf shapes the wire); "
                "sim ×5 = the lab avg scaled back\n"
                "(a simulation of seed 000, not a measurement of AWS)"
            )
        finally:
            prov.release()
            left = teardown.remaining(aws.client("ec2", camp.region), camp.campaign)
            print("after teardown, counted through the API: " + json.dumps(left))


if __name__ == "__main__":
    main()
