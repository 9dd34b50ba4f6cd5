"""Cross-checks after a run: ENA per instance (seed 003), CloudWatch bytes vs iperf3 (seed 004)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from netfleet.tabular import Tabular


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


#: CloudWatch's EC2 periods: detailed monitoring publishes per minute, basic per 5 minutes
DETAILED_S, BASIC_S = 60, 300


def monitoring_period(ec2: Any, instance_id: str) -> int:
    """The period the instance's network metrics are published at: 60 s with detailed
    monitoring (``Monitoring.State`` enabled), else 300 s — netfleet launches with basic
    monitoring (detailed costs per metric), so on AWS this is 300 s."""
    resp = ec2.describe_instances(InstanceIds=[instance_id])
    for res in resp.get("Reservations", []):
        for inst in res.get("Instances", []):
            if inst.get("Monitoring", {}).get("State") == "enabled":
                return DETAILED_S
    return BASIC_S


def whole_periods(
    start: dt.datetime, end: dt.datetime, period: int
) -> tuple[dt.datetime, dt.datetime]:
    """[start, end) widened to whole ``period``-second buckets (CloudWatch sums whole ones)."""
    t0 = start.timestamp() // period * period
    t1 = -(-end.timestamp() // period) * period
    return (
        dt.datetime.fromtimestamp(t0, dt.UTC),
        dt.datetime.fromtimestamp(max(t1, t0 + period), dt.UTC),
    )


def cloudwatch_bytes(
    cw: Any,
    instance_id: str,
    metric: str,
    start: dt.datetime,
    end: dt.datetime,
    period: int = DETAILED_S,
) -> float | None:
    """Sum of NetworkIn/NetworkOut (bytes) over [start, end) in ``period``-second sums (60:
    detailed monitoring; 300: basic, and the window must cover whole 5-minute buckets)."""
    resp = cw.get_metric_statistics(
        Namespace="AWS/EC2",
        MetricName=metric,
        Dimensions=[{"Name": "InstanceId", "Value": instance_id}],
        StartTime=start,
        EndTime=end,
        Period=period,
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
    period: int = DETAILED_S,
) -> CloudWatchCheck:
    """CloudWatch counts wire bytes (headers included), iperf3 goodput bytes: a few % more in
    CloudWatch is expected, so the default tolerance is 10 %."""
    got = cloudwatch_bytes(cw, instance_id, metric, start, end, period)
    return CloudWatchCheck(instance_id, metric, got, iperf_bytes, tolerance)


#: seconds added on each side of a run's window before it is widened to whole periods
WINDOW_PAD_S = 60.0


def _iperf3_bytes(result: Any, key: str) -> float | None:
    end = result.get("end") if isinstance(result, dict) else None
    block = end.get(key) if isinstance(end, dict) else None
    value = block.get("bytes") if isinstance(block, dict) else None
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def session_checks(envelopes: Iterable[Any], region: str) -> Tabular:
    """After a cloud run (each instance asked in its ``region`` label's region, else
    ``region``) (seeds 003 and 004): ENA per instance (DescribeInstanceAttribute) and,
    per complete iperf3 run, CloudWatch's NetworkOut of the sending instance and NetworkIn of
    the receiving one over the run's window against iperf3's bytes. Every row says what it
    could not check and why — never a silent pass."""
    from botocore.exceptions import BotoCoreError, ClientError

    from netfleet import aws

    clients: dict[str, tuple[Any, Any]] = {}

    def clients_of(host: Any) -> tuple[Any, Any]:
        """EC2 and CloudWatch of the host's own region (its ``region`` label)."""
        where = host.labels.get("region")
        where = where if isinstance(where, str) and where else region
        if where not in clients:
            clients[where] = (aws.client("ec2", where), aws.client("cloudwatch", where))
        return clients[where]

    def when(stamp: str) -> dt.datetime:
        return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00"))

    runs = [e for e in envelopes if e.engine.name == "iperf3" and e.status == "ok"]
    busy: dict[str, list[tuple[str, dt.datetime, dt.datetime]]] = {}  # instance → its runs
    for env in runs:
        for host in (env.client, env.server):
            iid = host.labels.get("instance_id")
            if isinstance(iid, str) and iid:
                busy.setdefault(iid, []).append((env.run_id, when(env.started_at),
                                                 when(env.ended_at)))  # fmt: skip
    ena: dict[str, str] = {}
    period: dict[str, int] = {}
    rows: list[list[Any]] = []
    for env in runs:
        sender, receiver = (
            (env.server, env.client) if env.direction == "in" else (env.client, env.server)
        )
        start, end = when(env.started_at), when(env.ended_at)
        for host, metric, key in (
            (sender, "NetworkOut", "sum_sent"),
            (receiver, "NetworkIn", "sum_received"),
        ):
            iid = host.labels.get("instance_id")
            if not isinstance(iid, str) or not iid:
                continue
            ec2, cw = clients_of(host)
            if iid not in ena:
                try:
                    ena[iid] = "on" if ena_enabled(ec2, iid) else "OFF"
                except (ClientError, BotoCoreError) as exc:
                    ena[iid] = f"cannot check: {str(exc)[:120]}"
            if iid not in period:
                try:
                    period[iid] = monitoring_period(ec2, iid)
                except (ClientError, BotoCoreError):
                    period[iid] = BASIC_S  # the default: what netfleet launches with
            window = whole_periods(
                start - dt.timedelta(seconds=WINDOW_PAD_S),
                end + dt.timedelta(seconds=WINDOW_PAD_S),
                period[iid],
            )
            others = sorted(
                rid
                for rid, s0, s1 in busy.get(iid, [])
                if rid != env.run_id and s0 < window[1] and s1 > window[0]
            )
            got = _iperf3_bytes(env.result, key)
            cw_bytes = None
            if got is None:
                verdict = "no data: the iperf3 result has no end summary"
            elif others:
                verdict = (
                    f"cannot check: CloudWatch's {period[iid] // 60}-minute sums of this window "
                    f"also hold {', '.join(others[:3])}{' …' if len(others) > 3 else ''}"
                )
            else:
                try:
                    check = cross_check(cw, iid, metric, *window, got, period=period[iid])
                    verdict, cw_bytes = check.verdict, check.cloudwatch_bytes
                except (ClientError, BotoCoreError) as exc:
                    verdict, cw_bytes = f"cannot check: {str(exc)[:120]}", None
            rows.append([env.run_id, host.name, iid, ena[iid], metric, got, cw_bytes, verdict])
    return Tabular(
        columns=["run_id", "host", "instance_id", "ena", "metric", "iperf3_bytes",
                 "cloudwatch_bytes", "verdict"],
        rows=rows,
        title="Cross-checks: ENA per instance, CloudWatch bytes vs iperf3 (goodput bytes)",
        notes=[
            "CloudWatch counts wire bytes (headers too) and every flow of the instance over whole "
            "periods — 5 minutes with basic monitoring (netfleet's instances), 1 minute with "
            f"detailed — around the run (±{WINDOW_PAD_S:.0f} s, widened to whole periods): a few "
            "% above iperf3 agrees; more than 10 % off is a mismatch worth a look (another flow, "
            "a lost counter, the wrong host). A window that also holds another run of the "
            "instance cannot be checked (runs closer than 5 minutes apart, with basic "
            "monitoring).",
            "No datapoints (an emulator such as moto) means not checked, not passed.",
        ],
    )  # fmt: skip
