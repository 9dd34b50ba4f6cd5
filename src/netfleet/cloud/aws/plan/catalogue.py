"""Advertised network figures per instance type, from EC2 DescribeInstanceTypes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class InstanceInfo:
    instance_type: str
    vcpus: int
    memory_gib: float
    network_performance: str  #: AWS's text, e.g. "Up to 10 Gigabit"
    baseline_gbps: float | None  #: Gbit/s, wire rate as AWS advertises it
    peak_gbps: float | None
    ena: str  #: "required" / "supported" / "unsupported"
    architectures: tuple[str, ...]

    @property
    def burstable(self) -> bool:
        """AWS says "Up to": a credit bucket above a lower baseline."""
        return self.network_performance.lower().startswith("up to")

    def labels(self) -> dict[str, str]:
        out = {
            "instance_type": self.instance_type,
            "cloud": "aws",
            "network_performance": self.network_performance,
            "burstable": str(self.burstable).lower(),
            "ena": self.ena,
        }
        if self.baseline_gbps is not None:
            out["baseline_gbps"] = f"{self.baseline_gbps:g}"
        if self.peak_gbps is not None:
            out["peak_gbps"] = f"{self.peak_gbps:g}"
        return out


def from_api(item: dict[str, Any]) -> InstanceInfo:
    net = item.get("NetworkInfo", {})
    cards = net.get("NetworkCards") or []
    base = sum(float(c.get("BaselineBandwidthInGbps", 0)) for c in cards) or None
    peak = sum(float(c.get("PeakBandwidthInGbps", 0)) for c in cards) or None
    return InstanceInfo(
        instance_type=item["InstanceType"],
        vcpus=int(item.get("VCpuInfo", {}).get("DefaultVCpus", 0)),
        memory_gib=float(item.get("MemoryInfo", {}).get("SizeInMiB", 0)) / 1024,
        network_performance=str(net.get("NetworkPerformance", "unknown")),
        baseline_gbps=base,
        peak_gbps=peak,
        ena=str(net.get("EnaSupport", "unsupported")),
        architectures=tuple(item.get("ProcessorInfo", {}).get("SupportedArchitectures", [])),
    )


#: what DescribeInstanceTypes answers when one type of the request does not exist (retired, a
#: typo, or an emulator's gap): it refuses the whole call (moto: ``….NotFound``)
UNKNOWN_TYPE = "InvalidInstanceType"


def describe(ec2: Any, types: list[str]) -> dict[str, InstanceInfo]:
    """Look the types up (in batches of 100, the API's limit). A type EC2 does not know is left
    out of the answer (callers name it) instead of blanking the batch: a refused batch is
    split in halves until the unknown ones stand alone."""
    out: dict[str, InstanceInfo] = {}
    wanted = sorted(set(types))
    for i in range(0, len(wanted), 100):
        _describe_known(ec2, wanted[i : i + 100], out)
    return out


def _describe_known(ec2: Any, batch: list[str], out: dict[str, InstanceInfo]) -> None:
    from botocore.exceptions import ClientError

    try:
        resp = ec2.describe_instance_types(InstanceTypes=batch)
    except ClientError as exc:
        if not str(exc.response.get("Error", {}).get("Code", "")).startswith(UNKNOWN_TYPE):
            raise
        if len(batch) == 1:
            return  # this one is unknown
        half = len(batch) // 2
        _describe_known(ec2, batch[:half], out)
        _describe_known(ec2, batch[half:], out)
        return
    for item in resp["InstanceTypes"]:
        info = from_api(item)
        out[info.instance_type] = info


def measured_ratio(measured_gbps: float, info: InstanceInfo) -> float | None:
    """measured ÷ advertised baseline (both Gbit/s); None when AWS gives no baseline."""
    return measured_gbps / info.baseline_gbps if info.baseline_gbps else None
