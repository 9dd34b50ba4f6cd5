"""Simulated backing: each launched instance becomes a lab namespace shaped from its type's
advertised figures, scaled like the lab profiles (``lab/profiles/r4.yaml``).

Scale: rate × ``rate`` (default 1/20) and time × ``time`` (1/20), hence a credit bucket
(rate × time) × 1/400. Burstable types ("Up to") get a tbf credit shaper: baseline ``rate``,
``peak``, and a ``bucket`` from :data:`CREDIT_GBIT` — seed 004's measured r4 credits; for other
burstable families no credit size is documented, so :data:`DEFAULT_CREDIT_S` seconds at peak
is assumed and the host is labelled ``credit_source: assumed``. Steady types get ``rate`` only.
Both directions are shaped (AWS limits in and out separately). tbf holds at most
270 s of its base rate: a bucket above that is capped and labelled ``credit_source: capped``.
"""

from __future__ import annotations

from typing import Any

from netfleet.cloud.aws.plan.catalogue import InstanceInfo
from netfleet.lab.models import TBF_MAX_BUCKET_SECONDS, LabSpec

#: Gbit of network credit per type, seed 004 (r4 family, "Up to 10 Gigabit")
CREDIT_GBIT = {"r4.large": 2700.0, "r4.xlarge": 5145.0, "r4.2xlarge": 8925.0, "r4.4xlarge": 11950.0}
#: seconds at (peak - baseline) assumed when a family's credit is not documented
DEFAULT_CREDIT_S = 300.0
#: the MTU of AWS's current instance types inside a VPC
JUMBO_MTU = 9001
#: the lab gateway standing for the internet gateway (seed 003: path MTU 1500 on public addresses)
PUBLIC_PATH = {"mtu": 1500, "subnet": "198.18.100.0/24"}


def shaper(info: InstanceInfo, rate_scale: float, time_scale: float) -> dict[str, Any] | None:
    if not info.baseline_gbps:
        return None
    rate_mbit = info.baseline_gbps * 1000 * rate_scale
    if not info.burstable or not info.peak_gbps or info.peak_gbps <= info.baseline_gbps:
        return {"rate": f"{rate_mbit:g}mbit"}
    bucket_mbit = credit_gbit(info) * 1000 * rate_scale * time_scale
    # tbf cannot hold more than TBF_MAX_BUCKET_SECONDS at the base rate (it would wrap): a
    # small-baseline type (t3.micro: 64 Mbit/s) gets the largest bucket tbf can keep
    bucket_mbit = min(bucket_mbit, rate_mbit * TBF_MAX_BUCKET_SECONDS * 0.95)
    return {
        "rate": f"{rate_mbit:g}mbit",
        "peak": f"{info.peak_gbps * 1000 * rate_scale:g}mbit",
        "bucket": f"{bucket_mbit:g}mbit",
    }


def credit_gbit(info: InstanceInfo) -> float:
    """Seed 004's measured credit, else DEFAULT_CREDIT_S at (peak - baseline)."""
    assert info.baseline_gbps and info.peak_gbps
    assumed = (info.peak_gbps - info.baseline_gbps) * DEFAULT_CREDIT_S
    return CREDIT_GBIT.get(info.instance_type, assumed)


def _capped(info: InstanceInfo, time_scale: float) -> bool:
    base = info.baseline_gbps or 0.0
    return credit_gbit(info) * time_scale > base * TBF_MAX_BUCKET_SECONDS * 0.95


def lab_spec(
    name: str,
    hosts: list[tuple[str, InstanceInfo, dict[str, str]]],
    *,
    rate_scale: float = 0.05,
    time_scale: float = 0.05,
    subnet: str = "198.18.0.0/24",
    extra_hosts: dict[str, Any] | None = None,
    public_path: bool = False,
) -> LabSpec:
    """A lab with one namespace per (host name ≤10 chars, type info, extra labels), plus
    ``extra_hosts`` (lab host entries as they are: the Fargate tiers' namespaces).

    ``public_path`` (``cloud.path: public``, seed 003): the instances' links get AWS's jumbo
    MTU (9001) and the lab a gateway whose routed path has MTU 1500 (:data:`PUBLIC_PATH`):
    hosts addressed at their public faces meet through it, as on AWS through the internet
    gateway, where iperf3's streams report ``pmtu 1500``."""
    lab_hosts: dict[str, Any] = dict(extra_hosts or {})
    for host, info, extra in hosts:
        shaping = shaper(info, rate_scale, time_scale)
        labels: dict[str, Any] = {**info.labels(), **extra}
        if info.burstable and info.instance_type not in CREDIT_GBIT:
            labels["credit_source"] = "assumed"
        if shaping and "bucket" in shaping and _capped(info, time_scale):
            labels["credit_source"] = "capped (tbf limit)"
        entry: dict[str, Any] = {"labels": labels}
        if shaping:
            entry["out"] = shaping
            entry["in"] = dict(shaping)
        lab_hosts[host] = entry
    path: dict[str, Any] = {"mtu": JUMBO_MTU, "gateway": dict(PUBLIC_PATH)} if public_path else {}
    return LabSpec.model_validate(
        {
            "name": name,
            "description": "simulated AWS backing (netfleet_sim.instances)",
            "subnet": subnet,
            **path,
            "scale": {
                "rate": rate_scale,
                "time": time_scale,
                "note": f"rate x{rate_scale:g}, time x{time_scale:g}, bucket x"
                f"{rate_scale * time_scale:g}",
            },
            "hosts": lab_hosts,
        }
    )
