"""Simulated backing for Fargate tiers: each task becomes a lab namespace shaped like its tier.

Source of the figures: seed 000 (StormForger, "AWS Fargate Network Performance", eu-west-1,
iperf3 ``-P 2 -O 10 -t 60`` from a c5.18xlarge in the same VPC and security group), as
transcribed in the shipped lab profile ``lab/profiles/fargate.yaml`` — read from there, so the
two never disagree. Links are steady (the seed saw a short initial peak, then "very stable"
sustained throughput, and gives no peak figures) and asymmetric: ``out`` = the table's
"Outgoing" (sent by the container), ``in`` = "Incoming". Scale: rate × 0.2 (the profile's; the
fastest tier, 3404 Mbit/s, becomes 680.8 Mbit/s), time × 1 (no credit to scale).

The seed measured only the minimum and maximum memory of the 256…4096 CPU tiers. Any other
tier takes the measured tier of the same CPU nearest in memory (labelled
``figure_source: nearest seed 000 tier …``); 8192 and 16384 CPU were not offered in 2018 and
take the largest measured tier (4096/30720), labelled ``figure_source: assumed …``.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from netfleet.cloud.aws.acquire.fargate import TierHost, TierSpec, tier_name
from netfleet.lab.models import LabSpec

PROFILE = "fargate"


@cache
def measured() -> dict[tuple[int, int], tuple[float, float]]:
    """(cpu, memory MiB) → (out, in) in bits/s as measured on AWS (the profile ÷ its scale)."""
    from netfleet.lab import load_lab

    spec = load_lab(PROFILE)
    scale = spec.scale.rate if spec.scale else 1.0
    out: dict[tuple[int, int], tuple[float, float]] = {}
    for host in spec.hosts.values():
        cpu, mem = host.labels.get("cpu_units"), host.labels.get("memory_mib")
        if isinstance(cpu, int) and isinstance(mem, int) and host.out and host.in_:
            out[(cpu, mem)] = (host.out.rate / scale, host.in_.rate / scale)
    return out


def figures(t: TierSpec) -> tuple[float, float, str]:
    """(out, in) bits/s on AWS for tier ``t`` and where the figure comes from."""
    table = measured()
    if (t.cpu, t.memory) in table:
        return (*table[(t.cpu, t.memory)], "seed 000 (measured)")
    same_cpu = [k for k in table if k[0] == t.cpu]
    if same_cpu:
        near = min(same_cpu, key=lambda k: (abs(k[1] - t.memory), k[1]))
        return (*table[near], f"nearest seed 000 tier {tier_name(*near)}")
    big = max(table)
    return (*table[big], f"assumed: seed 000 has no {t.cpu}-CPU tier, used {tier_name(*big)}")


def lab_host(
    host: TierHost, rate_scale: float = 0.2, extra: dict[str, str] | None = None
) -> dict[str, Any]:
    """The lab host entry (``labels``, ``out``, ``in``) for one running tier."""
    out_bps, in_bps, source = figures(host.tier)
    labels: dict[str, Any] = {
        **host.labels,
        **(extra or {}),
        "figure_source": source,
        "advertised_out_mbps": round(out_bps / 1e6, 1),
        "advertised_in_mbps": round(in_bps / 1e6, 1),
    }
    return {
        "labels": labels,
        "out": {"rate": f"{out_bps * rate_scale / 1e6:g}mbit"},
        "in": {"rate": f"{in_bps * rate_scale / 1e6:g}mbit"},
    }


def lab_spec(
    name: str,
    hosts: list[TierHost],
    *,
    client: tuple[str, dict[str, Any]] = ("client", {"labels": {"role": "client"}}),
    rate_scale: float = 0.2,
    subnet: str = "198.18.0.0/24",
) -> LabSpec:
    """A lab: the client namespace (unshaped by default: the seed's c5.18xlarge was never the
    bottleneck) plus one namespace per tier."""
    lab_hosts: dict[str, Any] = {client[0]: client[1]}
    for h in hosts:
        lab_hosts[h.name] = lab_host(h, rate_scale)
    return LabSpec.model_validate(
        {
            "name": name,
            "description": "simulated Fargate tiers (netfleet_sim.fargate, seed 000)",
            "subnet": subnet,
            "scale": {
                "rate": rate_scale,
                "time": 1.0,
                "note": f"Fargate Mbit/s x{rate_scale:g} (seed 000); steady links, no time scaling",
            },
            "hosts": lab_hosts,
        }
    )


def spec_hosts(lab: str, hosts: list[TierHost], client: str = "client") -> dict[str, Any]:
    """The measurement spec's ``hosts:`` for the sim lab ``lab`` (netns lab hosts)."""
    names = [client, *(h.name for h in hosts)]
    return {n: {"kind": "netns", "lab": lab, "host": n} for n in names}
