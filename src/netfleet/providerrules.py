"""The provider rules netfleet's verdicts rely on, each with the date it was last checked.

A verdict such as "this host bursts on credits" or "each flow is capped" reads a cloud's
documented behaviour, and clouds change it (FIELD-NOTES: the aggregate-gateway rule's scope was
narrowed). Every run records the ``as_of`` date of each rule here (``state.rules`` in the raw
envelope, docs/format.md); ``netfleet doctor --results`` warns when a rule's date is newer than
the one a result recorded (:func:`changed_since`). Revise a rule's text and its ``as_of``
together.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class ProviderRule:
    name: str
    as_of: dt.date
    text: str


RULES: tuple[ProviderRule, ...] = (
    ProviderRule(
        "aws-credit-bucket",
        dt.date(2026, 11, 25),
        'AWS "Up to X Gbps" types (<= 16 vCPUs) burst on network I/O credits above a baseline; '
        "in and out limited separately",
    ),
    ProviderRule(
        "aws-per-flow-limit",
        dt.date(2026, 11, 25),
        "AWS: one flow 5 Gbit/s outside a cluster placement group, 10 Gbit/s inside",
    ),
    ProviderRule(
        "aws-gateway-aggregate",
        dt.date(2026, 11, 25),
        "AWS: through an internet or local gateway, 50 % of the bandwidth (5 Gbit/s below "
        "32 vCPUs); the scope was narrowed from all traffic leaving the region",
    ),
    ProviderRule(
        "aws-mtu",
        dt.date(2026, 11, 25),
        "AWS: MTU 9001 inside a VPC, 1500 through a gateway, cross-region peering or VPN",
    ),
    ProviderRule(
        "aws-ena-allowance",
        dt.date(2026, 11, 25),
        "AWS ENA: *_allowance_exceeded counters count packets queued or dropped at the "
        "instance's limit",
    ),
    ProviderRule(
        "aws-ena-express",
        dt.date(2026, 11, 25),
        "AWS ENA Express (SRD): both ends enabled, same subnet, per-ENI setting; "
        "ena_srd_* counters",
    ),
    ProviderRule(
        "aws-bandwidth-weighting",
        dt.date(2026, 11, 25),
        "AWS 8th-generation types: bandwidth weighting vpc-1/ebs-1 moves up to 25 % of the "
        "baseline between VPC and EBS",
    ),
)

BY_NAME: dict[str, ProviderRule] = {r.name: r for r in RULES}
#: the newest rule's date: the table's date
AS_OF: dt.date = max(r.as_of for r in RULES)


def recorded() -> dict[str, str]:
    """What a run records: rule name → its ``as_of`` (ISO date)."""
    return {r.name: r.as_of.isoformat() for r in RULES}


def changed_since(record: Mapping[str, object]) -> list[tuple[ProviderRule, str | None]]:
    """The rules whose date is newer than a result's record of them, with the recorded date
    (None: the rule did not exist when the result was taken). Unreadable dates count as old."""
    out: list[tuple[ProviderRule, str | None]] = []
    for rule in RULES:
        seen = record.get(rule.name)
        if seen is None:
            out.append((rule, None))
            continue
        try:
            then = dt.date.fromisoformat(str(seen))
        except ValueError:
            then = dt.date.min
        if rule.as_of > then:
            out.append((rule, str(seen)))
    return out
