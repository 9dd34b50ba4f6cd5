"""The dated price table (base rank 0): the JSON file shipped in the repo and its typed model.

Only reading and the model live here (no boto3, no netfleet imports beyond errors), so both the
report (price per Gbit/s) and the cloud provider (cost estimates, ``cloud prices refresh``) can
use it. The table states its ``source`` and ``as_of``; :func:`stale_warning` says when it is
older than :data:`STALE_AFTER_DAYS`. A refreshed copy written next to the cloud state
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

SHIPPED = Path(__file__).parent / "cloud" / "data" / "prices.json"
STALE_AFTER_DAYS = 90
#: where ``netfleet cloud`` keeps its state (journals, keys, a refreshed price table)
CLOUD_DIR_ENV = "NETFLEET_CLOUD_DIR"


@dataclass
class PriceTable:
    source: str
    as_of: dt.date
    ec2: dict[str, dict[str, float]]  #: region → type → USD per hour
    fargate: dict[str, dict[str, float]]  #: region → {vcpu_hour, gb_hour}
    path: Path = field(default=SHIPPED)

    def ec2_hourly(self, region: str, instance_type: str) -> float | None:
        return self.ec2.get(region, {}).get(instance_type)

    def age_days(self, today: dt.date | None = None) -> int:
        return ((today or dt.date.today()) - self.as_of).days

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "as_of": self.as_of.isoformat(),
            "currency": "USD",
            "ec2_on_demand_per_hour": self.ec2,
            "fargate": self.fargate,
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


def load(state_root: Path | None = None) -> PriceTable:
    local = state_root / "prices.json" if state_root else None
    path = local if local and local.exists() else SHIPPED
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
