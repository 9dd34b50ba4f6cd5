"""The dated price table (base rank 0): the JSON format and its typed model.

Only reading and the model live here (no boto3, no netfleet imports beyond errors), so both the
report (price per Gbit/s) and a cloud (cost estimates, ``cloud prices refresh``) can use it.
Which file a cloud ships is the cloud's own (AWS: ``netfleet.cloud.aws.plan.prices.SHIPPED``),
handed to :func:`load`; the report gets its table from ``netfleet.api``. The table states its
``source`` and ``as_of``; :func:`stale_warning` says when it is older than
:data:`STALE_AFTER_DAYS`. A refreshed copy written next to the cloud state
(``<state>/prices.json``) wins over the shipped one in :func:`load`.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netfleet.errors import InputError

STALE_AFTER_DAYS = 90
#: where ``netfleet cloud`` keeps its state (journals, keys, a refreshed price table)
CLOUD_DIR_ENV = "NETFLEET_CLOUD_DIR"


@dataclass(frozen=True)
class Source:
    """Where a group of prices came from, and the date they were read."""

    source: str
    as_of: dt.date

    def __str__(self) -> str:
        return f"{self.source}, as of {self.as_of}"


#: keys of ``other_per_unit``: what the bill counts besides instance-hours
OTHER_KEYS = (
    "public_ipv4_hour",  #: $/h per public IPv4 address (in use or idle)
    "ebs_gp3_gb_month",  #: $/GB-month of gp3 volume (billed per second)
    "cross_az_gb_each_way",  #: $/GB charged on each side of a cross-AZ transfer
    "inter_region_out_gb",  #: $/GB out of the sending region (in: free)
    "internet_out_gb",  #: $/GB out to the internet (first 10 TB tier)
    "nat_gateway_hour",
    "nat_gateway_gb",  #: $/GB processed by a NAT gateway
)


@dataclass
class PriceTable:
    """The table's ``source``/``as_of`` describe it as a whole (the oldest part); each price
    also names its own :class:`Source` (``sources`` + ``ec2_source`` …), which every estimate
    shows next to the figure it priced."""

    source: str
    as_of: dt.date
    ec2: dict[str, dict[str, float]]  #: region → type → USD per hour
    fargate: dict[str, dict[str, float]]  #: region → {vcpu_hour, gb_hour}
    path: Path = field(default_factory=Path)  #: the file it was read from
    sources: dict[str, Source] = field(default_factory=dict)  #: id → source
    ec2_source: dict[str, dict[str, str]] = field(default_factory=dict)  #: region → type → id
    fargate_source: dict[str, str] = field(default_factory=dict)  #: region → source id
    other: dict[str, dict[str, float]] = field(default_factory=dict)  #: region → OTHER_KEYS
    other_source: dict[str, str] = field(default_factory=dict)  #: region → source id

    def ec2_hourly(self, region: str, instance_type: str) -> float | None:
        return self.ec2.get(region, {}).get(instance_type)

    def _source(self, key: str | None) -> Source:
        return self.sources.get(key or "", Source(self.source, self.as_of))

    def ec2_source_of(self, region: str, instance_type: str) -> Source:
        """Where ``instance_type``'s price in ``region`` came from (the table's own source when
        the entry names none)."""
        return self._source(self.ec2_source.get(region, {}).get(instance_type))

    def fargate_source_of(self, region: str) -> Source:
        return self._source(self.fargate_source.get(region))

    def other_rate(self, region: str, key: str) -> float | None:
        """An ``other_per_unit`` price (:data:`OTHER_KEYS`) in ``region``, None if unknown."""
        return self.other.get(region, {}).get(key)

    def other_source_of(self, region: str) -> Source:
        return self._source(self.other_source.get(region))

    def age_days(self, today: dt.date | None = None) -> int:
        return ((today or dt.date.today()) - self.as_of).days

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "as_of": self.as_of.isoformat(),
            "currency": "USD",
            "ec2_on_demand_per_hour": self.ec2,
            "fargate": self.fargate,
            "sources": {
                k: {"source": v.source, "as_of": v.as_of.isoformat()}
                for k, v in self.sources.items()
            },
            "ec2_source": self.ec2_source,
            "fargate_source": self.fargate_source,
            "other_per_unit": self.other,
            "other_source": self.other_source,
        }


def _parse(doc: dict[str, Any], path: Path) -> PriceTable:
    try:
        return PriceTable(
            source=str(doc["source"]),
            as_of=dt.date.fromisoformat(doc["as_of"]),
            ec2={
                r: {t: float(p) for t, p in types.items()}
                for r, types in doc["ec2_on_demand_per_hour"].items()
            },
            fargate={r: {k: float(v) for k, v in f.items()} for r, f in doc["fargate"].items()},
            path=path,
            sources={
                str(k): Source(str(v["source"]), dt.date.fromisoformat(v["as_of"]))
                for k, v in doc.get("sources", {}).items()
            },
            ec2_source={
                r: {t: str(k) for t, k in types.items()}
                for r, types in doc.get("ec2_source", {}).items()
            },
            fargate_source={r: str(k) for r, k in doc.get("fargate_source", {}).items()},
            other={
                r: {k: float(v) for k, v in rates.items() if k in OTHER_KEYS}
                for r, rates in doc.get("other_per_unit", {}).items()
            },
            other_source={r: str(k) for r, k in doc.get("other_source", {}).items()},
        )
    except (KeyError, ValueError, TypeError, AttributeError) as exc:
        raise InputError(
            f"{path}: not a netfleet price table ({exc})",
            hint="delete it to fall back to the shipped table, or run `netfleet cloud prices "
            "refresh`",
        ) from None


def default_state_root() -> Path:
    """``$NETFLEET_CLOUD_DIR``, else ``~/.local/state/netfleet/cloud``."""
    env = os.environ.get(CLOUD_DIR_ENV)
    return Path(env) if env else Path.home() / ".local" / "state" / "netfleet" / "cloud"


def load(state_root: Path | None, shipped: Path) -> PriceTable:
    """The refreshed copy in ``state_root`` (``prices.json``) if there is one, else the table a
    cloud ships (``shipped``)."""
    local = state_root / "prices.json" if state_root else None
    path = local if local and local.exists() else shipped
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: cannot read the price table ({exc})") from None
    return _parse(doc, path)


def stale_warning(table: PriceTable, today: dt.date | None = None) -> str | None:
    age = table.age_days(today)
    if age > STALE_AFTER_DAYS:
        return (
            f"prices are {age} days old (as of {table.as_of}, {table.path.name}): estimates may be "
            "off; run `netfleet cloud prices refresh` when online"
        )
    return None
