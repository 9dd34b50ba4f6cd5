"""Cross-checks after a run: ENA per instance (seed 003), CloudWatch bytes vs iperf3 (seed 004)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any


def ena_enabled(ec2: Any, instance_id: str) -> bool:
    """DescribeInstanceAttribute enaSupport: is ENA actually on for this instance?"""
    resp = ec2.describe_instance_attribute(InstanceId=instance_id, Attribute="enaSupport")
    return bool(resp.get("EnaSupport", {}).get("Value", False))


@dataclass(frozen=True)
class CloudWatchCheck:
    instance_id: str
    metric: str  #: NetworkIn or NetworkOut
    cloudwatch_bytes: float | None  #: None: CloudWatch has no datapoints for the window
    iperf_bytes: float
    tolerance: float

    @property
    def verdict(self) -> str:
        if self.cloudwatch_bytes is None:
            return "no data: CloudWatch has no datapoints for this window (cannot check)"
        if self.iperf_bytes <= 0:
            return "no data: iperf3 reported no bytes"
        ratio = self.cloudwatch_bytes / self.iperf_bytes
        if ratio < 1 - self.tolerance or ratio > 1 + self.tolerance:
            return f"mismatch: CloudWatch/iperf3 = {ratio:.3f}"
        return f"agrees: CloudWatch/iperf3 = {ratio:.3f}"


def cloudwatch_bytes(
    cw: Any, instance_id: str, metric: str, start: dt.datetime, end: dt.datetime
) -> float | None:
    """Sum of NetworkIn/NetworkOut (bytes) over [start, end), 60 s periods (detailed monitoring;
    with basic monitoring AWS gives 5-minute sums and the window must cover them)."""
    resp = cw.get_metric_statistics(
        Namespace="AWS/EC2",
        MetricName=metric,
        Dimensions=[{"Name": "InstanceId", "Value": instance_id}],
        StartTime=start,
        EndTime=end,
        Period=60,
        Statistics=["Sum"],
        Unit="Bytes",
    )
    points = resp.get("Datapoints", [])
    return sum(float(p["Sum"]) for p in points) if points else None


def cross_check(
    cw: Any,
    instance_id: str,
    metric: str,
    start: dt.datetime,
    end: dt.datetime,
    iperf_bytes: float,
    tolerance: float = 0.10,
) -> CloudWatchCheck:
    """CloudWatch counts wire bytes (headers included), iperf3 goodput bytes: a few % more in
    CloudWatch is expected, so the default tolerance is 10 %."""
    got = cloudwatch_bytes(cw, instance_id, metric, start, end)
    return CloudWatchCheck(instance_id, metric, got, iperf_bytes, tolerance)
