"""What the bill counts besides instance-hours: public IPv4 addresses, EBS volumes and data
transfer (same-AZ private traffic is free; cross-AZ is charged on each side; cross-region out of
the sending region; internet egress), and a NAT gateway where one is used.

Each :class:`Line` says what it counts, how much, at which rate and from which dated source, so
a plan shows, e.g., that a cross-region 10 Gbit/s hour moves 4.5 TB (decimal units: 1 GB =
10⁹ bytes) and what that costs. Pure functions over the price table; no AWS calls.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from netfleet.pricetable import PriceTable

#: the root volume every instance gets (AL2023 and Debian AMIs default to 8 GiB)
ROOT_GIB = 8.0
#: hours in the month EBS and the AWS calculator price by
HOURS_PER_MONTH = 730.0
#: transfer kinds → (the rate key, sides charged)
TRANSFER = {
    "same-az": (None, 0),  # private addresses in one zone: free
    "cross-az": ("cross_az_gb_each_way", 2),  # out of one zone and into the other
    "public-in-region": ("cross_az_gb_each_way", 2),  # public addresses inside a region
    "cross-region": ("inter_region_out_gb", 1),  # out of the sending region; in is free
    "internet": ("internet_out_gb", 1),
}


@dataclass(frozen=True)
class Line:
    item: str  #: e.g. "public IPv4", "transfer cross-region us-east-1→eu-west-1"
    quantity: float
    unit: str  #: "address-h", "GB-month", "GB"
    rate: float | None  #: USD per unit (None: no price in the table)
    usd: float | None
    region: str
    source: str  #: where the rate came from, with its date

    def text(self) -> str:
        what = "unknown (no price)" if self.usd is None else f"${self.usd:,.2f}"
        rate = "" if self.rate is None else f" × ${self.rate:g}/{self.unit}"
        qty = f"{self.quantity:,.1f}" if self.quantity >= 100 else f"{self.quantity:.3g}"
        return f"{self.item}: {qty} {self.unit}{rate} = {what}"


@dataclass(frozen=True)
class Flow:
    """Bytes one way between two places; ``kind`` is a key of :data:`TRANSFER`."""

    kind: str
    src_region: str
    dst_region: str
    gbytes: float
    why: str = ""  #: how the volume was found (the estimate's assumption, or "measured")


def transfer_kind(
    placement: str,
    src_region: str,
    dst_region: str,
    path: str = "auto",
    zones: tuple[str | None, str | None] | None = None,
) -> str:
    """The billing kind of traffic between two hosts of a campaign. ``zones``: the two hosts'
    zones as far as the plan knows them (None: chosen at launch). With ``zones`` given, a
    placement that does not keep the fleets in one zone (``none``, ``cross-region``) is priced
    ``cross-az`` unless both zones are known and equal: an upper bound, as a zone-spread fleet
    pays cross-AZ (before, the plan counted it free)."""
    if src_region != dst_region:
        return "cross-region"
    if path == "public":
        return "public-in-region"
    if placement == "cross-az":
        return "cross-az"
    if zones is None or placement in ("same-az", "cluster"):
        return "same-az"
    return "same-az" if zones[0] is not None and zones[0] == zones[1] else "cross-az"


def gbytes_at(gbps: float, seconds: float) -> float:
    """GB (10⁹ bytes) moved at ``gbps`` Gbit/s for ``seconds``: 10 Gbit/s × 1 h = 4,500 GB."""
    return gbps * seconds / 8


def ipv4(table: PriceTable, region: str, address_hours: float) -> Line:
    rate = table.other_rate(region, "public_ipv4_hour")
    return Line(
        "public IPv4 (one per instance)",
        address_hours,
        "address-h",
        rate,
        None if rate is None else rate * address_hours,
        region,
        str(table.other_source_of(region)),
    )


def ebs(table: PriceTable, region: str, instance_hours: float, gib: float = ROOT_GIB) -> Line:
    rate = table.other_rate(region, "ebs_gp3_gb_month")
    qty = gib * instance_hours / HOURS_PER_MONTH
    return Line(
        f"EBS gp3 root volumes ({gib:g} GiB each)",
        qty,
        "GB-month",
        rate,
        None if rate is None else rate * qty,
        region,
        str(table.other_source_of(region)),
    )


def nat(table: PriceTable, region: str, hours: float, gbytes: float) -> list[Line]:
    h, gb = table.other_rate(region, "nat_gateway_hour"), table.other_rate(region, "nat_gateway_gb")
    src = str(table.other_source_of(region))
    return [
        Line("NAT gateway", hours, "h", h, None if h is None else h * hours, region, src),
        Line("NAT gateway processing", gbytes, "GB", gb, None if gb is None else gb * gbytes,
             region, src),
    ]  # fmt: skip


def transfer(table: PriceTable, flow: Flow) -> Line:
    key, sides = TRANSFER[flow.kind]
    where = (
        f"{flow.src_region}→{flow.dst_region}"
        if flow.src_region != flow.dst_region
        else flow.src_region
    )
    item = f"transfer {flow.kind} {where}" + (f" ({flow.why})" if flow.why else "")
    if key is None:
        return Line(item, flow.gbytes, "GB", 0.0, 0.0, flow.src_region, "free (AWS: same-AZ)")
    rate = table.other_rate(flow.src_region, key)
    eff = None if rate is None else rate * sides
    return Line(
        item,
        flow.gbytes,
        "GB",
        eff,
        None if eff is None else eff * flow.gbytes,
        flow.src_region,
        str(table.other_source_of(flow.src_region)),
    )


#: one pair a plan's transfer counts: (client type, client region, client zone, server type,
#: server region, server zone); a zone None: chosen at launch
Pair = tuple[str, str, "str | None", str, str, "str | None"]


def plan_flows(
    placement: str,
    path: str,
    pairs: Sequence[Pair],
    gbps: Mapping[str, float],
    seconds: float,
) -> list[Flow]:
    """Upper bound of the traffic a plan moves: each pair (:data:`Pair`) sends at the lower of
    the two types' advertised peaks for ``seconds``, billed as :func:`transfer_kind` says. A
    type without a catalogue figure moves nothing here (named in ``why``)."""
    out = []
    for ctype, cregion, czone, stype, sregion, szone in pairs:
        kind = transfer_kind(placement, cregion, sregion, path, (czone, szone))
        rate = min(gbps.get(ctype, 0.0), gbps.get(stype, 0.0))
        why = (
            f"≤ {rate:g} Gbit/s × {seconds / 60:.0f} min, the advertised peak the whole time"
            if rate
            else f"no catalogue figure for {ctype}/{stype}: not counted"
        )
        if rate and kind == "cross-az" and placement != "cross-az":
            why += "; zones chosen at launch may differ: priced cross-AZ"
        out.append(Flow(kind, cregion, sregion, gbytes_at(rate, seconds), why))
    return out


def total(lines: Sequence[Line]) -> float | None:
    """Sum of the lines, None if any is unpriced."""
    if any(line.usd is None for line in lines):
        return None
    return sum(line.usd or 0.0 for line in lines)


def sent_bytes(result: Mapping[str, Any] | None) -> int | None:
    """Bytes an iperf3 run's sender(s) sent (``end.sum_sent``, plus the reverse of a bidir
    run); None for an engine whose result does not say."""
    end = (result or {}).get("end") or {}
    total_ = 0
    found = False
    for key in ("sum_sent", "sum_sent_bidir_reverse"):
        b = (end.get(key) or {}).get("bytes")
        if isinstance(b, int | float):
            total_ += int(b)
            found = True
    return total_ if found else None


def measured_flows(envelopes: Iterable[Any], placement: str, path: str) -> tuple[list[Flow], int]:
    """The transfer the engines measured, by billing kind and direction: each ok run's sent
    bytes from its sending host's region/zone (labels) to the other's. Returns the flows and
    how many runs had no byte count (other engines)."""
    sums: dict[tuple[str, str, str], float] = {}
    unknown = 0
    for env in envelopes:
        if getattr(env, "status", None) != "ok":
            continue
        sent = sent_bytes(env.result)
        if sent is None:
            unknown += 1
            continue
        src, dst = (env.server, env.client) if env.direction == "in" else (env.client, env.server)
        sr, dr = str(src.labels.get("region", "")), str(dst.labels.get("region", ""))
        kind = transfer_kind(placement, sr, dr, path)
        if kind in ("same-az", "cross-az") and sr == dr:
            sz, dz = src.labels.get("availability_zone"), dst.labels.get("availability_zone")
            kind = "cross-az" if sz and dz and sz != dz else "same-az"
        key = (kind, sr, dr)
        sums[key] = sums.get(key, 0.0) + sent / 1e9
    flows = [Flow(k, s, d, gb, "measured by the engines") for (k, s, d), gb in sorted(sums.items())]
    return flows, unknown
