"""Price/performance: $ per sustained and per peak Gbit/s, $/month, and the cheapest type that
meets a target.

Where a price comes from, per (instance type, direction) group:

1. ``prices`` passed from Python (instance type → $/hour) wins;
2. the dated price table (:mod:`netfleet.pricetable`: the shipped table, or the copy ``netfleet
   cloud prices refresh`` wrote) when every run's hosts carry ``instance_type`` and ``region``
   labels (cloud hosts do) that are in it;
3. otherwise the runs' ``price_per_hour`` label (lab and SSH hosts).

Each row carries its source (the table's ``as_of`` date, or the label) and whether the price is
stale (a table older than :data:`netfleet.pricetable.STALE_AFTER_DAYS`; a label's age is not
known). Sustained is what a host keeps up forever
(a credit host's baseline, a steady host's level); peak is its burst level. A type meets a
target when the *lower end* of its sustained estimate reaches it in every measured direction.
A month is 730 hours (365 × 24 / 12), the cloud providers' convention.

Runs from a scaled lab (``lab_scale`` label, :mod:`netfleet.report.labscale`) measure a
fraction of the cloud rate their instance type stands for, while the price is the cloud's: $ per
Gbit/s divides it by the *cloud* figure (lab rate ÷ scale), a target is compared with the cloud
figure, and the table shows both, labelled.
"""

from __future__ import annotations

import datetime as dt
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from netfleet.analysis import GroupAnalysis
from netfleet.analysis.estimate import Estimate
from netfleet.errors import InputError
from netfleet.pricetable import STALE_AFTER_DAYS, PriceTable, stale_warning
from netfleet.report.labscale import LabScale, common_scale, goodput_basis_note
from netfleet.report.study import rates_of, throughput_groups
from netfleet.tabular import Tabular
from netfleet.units import parse_rate

HOURS_PER_MONTH = 730.0
PRICE_LABEL = "price_per_hour"
REGION_LABEL = "region"
GBIT = 1e9


@dataclass(frozen=True)
class PriceRow:
    instance_type: str
    direction: str
    price_per_hour: float | None
    price_source: str
    kind: str
    sustained: Estimate | None
    peak: Estimate | None
    #: the price table's date (None: a label or a price given from Python)
    price_as_of: dt.date | None = None
    #: age of the price in days, and whether that is past the table's staleness limit
    price_age_days: int | None = None
    stale: bool | None = None
    #: the lab's scale when the runs were a scaled lab's (the rates then stand for ÷ it)
    lab: LabScale | None = None

    def cloud(self, e: Estimate | None) -> Estimate | None:
        """The cloud rate ``e`` stands for (``e`` itself outside a scaled lab)."""
        if e is None or self.lab is None:
            return e
        return e.scaled(1 / self.lab.rate)

    def per_gbps_hour(self, e: Estimate | None) -> float | None:
        """$/h per Gbit/s of the cloud rate ``e`` (a lab rate) stands for."""
        c = self.cloud(e)
        if self.price_per_hour is None or c is None or c.value <= 0:
            return None
        return self.price_per_hour / (c.value / GBIT)

    @property
    def per_month(self) -> float | None:
        return None if self.price_per_hour is None else self.price_per_hour * HOURS_PER_MONTH


@dataclass
class PricePerformance:
    rows: list[PriceRow]
    target_bps: float | None = None
    cheapest: str | None = None
    verdict: str = ""
    notes: list[str] = field(default_factory=list)

    def table(self) -> Tabular:
        columns = [
            "instance_type", "direction", "kind", "usd_per_hour", "usd_per_month",
            "sustained_gbps", "peak_gbps", "usd_per_sustained_gbps_hour",
            "usd_per_peak_gbps_hour", "usd_per_sustained_gbps_month", "price_source",
            "price_as_of", "price_age_days", "price_stale", "lab_scale", "cloud_sustained_gbps",
            "cloud_peak_gbps",
        ]  # fmt: skip
        rows: list[list[Any]] = []
        for r in self.rows:
            ps = r.per_gbps_hour(r.sustained)
            rows.append(
                [
                    r.instance_type,
                    r.direction,
                    r.kind,
                    r.price_per_hour,
                    r.per_month,
                    None if r.sustained is None else r.sustained.value / GBIT,
                    None if r.peak is None else r.peak.value / GBIT,
                    ps,
                    r.per_gbps_hour(r.peak),
                    None if ps is None else ps * HOURS_PER_MONTH,
                    r.price_source,
                    r.price_as_of,
                    r.price_age_days,
                    r.stale,
                    None if r.lab is None else r.lab.label(),
                    _gbps(r.cloud(r.sustained)) if r.lab else None,
                    _gbps(r.cloud(r.peak)) if r.lab else None,
                ]
            )
        notes = [
            "sustained = a credit host's baseline or a steady host's level; peak = the burst "
            "level; goodput, Gbit/s; a month = 730 h.",
            *self.notes,
        ]
        labs = sorted({r.lab.label() for r in self.rows if r.lab is not None})
        if labs:
            notes.append(
                f"{', '.join(labs)} rows: sustained_gbps and peak_gbps are the lab's measured "
                "figures; cloud_sustained_gbps and cloud_peak_gbps the cloud figures they stand "
                "for (÷ the lab scale); $ per Gbit/s and the target use the cloud figures "
                "(the price is the cloud's)."
            )
        goodput = sorted({r.instance_type for r in self.rows if r.lab and r.lab.basis == "goodput"})
        if goodput:  # the cloud figures land under the seed's: the profile's, not the price's
            notes.append(goodput_basis_note(", ".join(goodput)))
        if self.verdict:
            notes.append(self.verdict)
        return Tabular(columns, rows, title="Price per Gbit/s", notes=notes, decimals=4)

    def report_table(self) -> tuple[Tabular, dict[int, str]]:
        """The narrower form for people (the HTML/markdown report, terminal tables): people's
        headers, the price's source with its staleness in one cell, and a flag on each row whose
        price is stale. JSON and CSV keep :meth:`table`."""
        t = self.table()
        keep = {
            "instance_type": "instance type", "direction": "direction",
            "usd_per_hour": "$/hour", "usd_per_month": "$/month",
            "sustained_gbps": "sustained Gbit/s", "peak_gbps": "peak Gbit/s",
            "usd_per_sustained_gbps_hour": "$/h per sustained Gbit/s",
            "usd_per_peak_gbps_hour": "$/h per peak Gbit/s",
            "usd_per_sustained_gbps_month": "$/month per sustained Gbit/s",
            "price_source": "price from",
        }  # fmt: skip
        if any(r.lab is not None for r in self.rows):
            keep = {
                **{k: v for k, v in keep.items() if k != "price_source"},
                "sustained_gbps": "sustained Gbit/s (lab)",
                "peak_gbps": "peak Gbit/s (lab)",
                "lab_scale": "lab scale",
                "cloud_sustained_gbps": "sustained Gbit/s (cloud)",
                "cloud_peak_gbps": "peak Gbit/s (cloud)",
                "price_source": "price from",
            }
        idx = [t.columns.index(c) for c in keep]
        flags = {
            n: f"price {r.price_age_days} days old: refresh the table"
            for n, r in enumerate(self.rows)
            if r.stale
        }
        src = t.columns.index("price_source")
        rows = []
        for row, r in zip(t.rows, self.rows, strict=True):
            cells = [row[i] for i in idx]
            if r.stale:  # staleness stays on the row in every human form
                cells[-1] = f"{row[src]} ({r.price_age_days} days old: stale)"
            rows.append(cells)
        return Tabular(list(keep.values()), rows, title=t.title, notes=t.notes), flags

    def records(self) -> dict[str, Any]:
        table = self.table()
        return {
            "title": table.title,
            "rows": table.records(),
            "notes": table.notes,
            "target_gbps": None if self.target_bps is None else self.target_bps / GBIT,
            "cheapest": self.cheapest,
            "verdict": self.verdict,
        }


def _label_price(group: GroupAnalysis) -> tuple[float | None, str]:
    found = {str(a.run.labels.get(PRICE_LABEL)) for a in group.runs if PRICE_LABEL in a.run.labels}
    if not found:
        return None, "none"
    if len(found) > 1:
        return None, f"conflicting {PRICE_LABEL} labels: {', '.join(sorted(found))}"
    text = found.pop()
    try:
        value = float(text)
    except ValueError:
        return None, f"unreadable {PRICE_LABEL} label {text!r}"
    if not math.isfinite(value) or value < 0:
        return None, f"unreadable {PRICE_LABEL} label {text!r}"
    return value, "label"


def _table_price(group: GroupAnalysis, table: PriceTable | None) -> float | None:
    """The table's price when every run's (region, instance type) is in it, and agree."""
    if table is None or not group.runs:
        return None
    found = set()
    for a in group.runs:
        region, itype = a.run.labels.get(REGION_LABEL), a.run.labels.get("instance_type")
        price = table.ec2_hourly(str(region), str(itype)) if region and itype else None
        if price is None:
            return None
        found.add(price)
    return found.pop() if len(found) == 1 else None


def price_rows(
    groups: Sequence[GroupAnalysis],
    prices: Mapping[str, float] | None = None,
    table: PriceTable | None = None,
    today: dt.date | None = None,
) -> list[PriceRow]:
    """One row per (instance type, direction) group."""
    rows = []
    for g in groups:
        itype = str(g.keys.get("instance_type"))
        price, source = _label_price(g)
        as_of, age, stale = None, None, None
        listed = _table_price(g, table)
        if prices and itype in prices:
            price, source = float(prices[itype]), "given price table"
        elif listed is not None and table is not None:
            price, as_of = listed, table.as_of
            age = table.age_days(today)
            stale = age > STALE_AFTER_DAYS
            source = f"price table as of {table.as_of}"
        elif price is not None:
            source = f"{PRICE_LABEL} label"
        r = rates_of(g)
        rows.append(
            PriceRow(
                itype,
                str(g.keys.get("direction")),
                price,
                source,
                r.kind,
                r.sustained,
                r.peak,
                as_of,
                age,
                stale,
                common_scale(a.run.labels for a in g.runs),
            )
        )
    return rows


def _gbps(e: Estimate | None) -> float | None:
    return None if e is None else e.value / GBIT


def parse_target(text: str) -> float:
    try:
        return parse_rate(text)
    except ValueError as exc:
        raise InputError(f"--target: {exc}", hint="e.g. --target 5gbit") from None


def cheapest(rows: Sequence[PriceRow], target_bps: float) -> tuple[str | None, str]:
    """The cheapest instance type whose sustained rate's lower end reaches the target in every
    measured direction, and a sentence saying why (or why none)."""
    by_type: dict[str, list[PriceRow]] = {}
    for r in rows:
        by_type.setdefault(r.instance_type, []).append(r)
    meeting: list[tuple[float, str]] = []
    unpriced = []
    for itype, rs in by_type.items():
        if any(r.sustained is None for r in rs):
            continue
        if all((c := r.cloud(r.sustained)) is not None and c.low >= target_bps for r in rs):
            price = rs[0].price_per_hour
            if price is None:
                unpriced.append(itype)
            else:
                meeting.append((price, itype))
    want = f"≥ {target_bps / GBIT:g} Gbit/s sustained"
    if not meeting:
        extra = f" ({', '.join(unpriced)} would, but has no price)" if unpriced else ""
        return None, f"no measured type reaches {want} in every direction{extra}."
    price, itype = min(meeting)
    others = len(meeting) - 1
    return itype, (
        f"cheapest type reaching {want} in every measured direction: {itype} at "
        f"${price:.4g}/h (${price * HOURS_PER_MONTH:,.0f}/month)"
        + (f"; {others} other type(s) also reach it." if others else ".")
    )


def price_performance(
    catalog_dir: str | os.PathLike[str],
    campaigns: Sequence[str] = (),
    prices: Mapping[str, float] | None = None,
    target: str | None = None,
    groups: Sequence[GroupAnalysis] | None = None,
    table: PriceTable | None = None,
    today: dt.date | None = None,
) -> PricePerformance:
    """The price table of a catalog (or of ``groups`` already analysed). ``table``: the dated
    price table (a cloud's: ``netfleet.cloud.aws.plan.prices.load()``); without one only
    labels and ``prices`` count."""
    groups = list(groups) if groups is not None else throughput_groups(catalog_dir, campaigns)
    rows = price_rows(groups, prices, table, today)
    out = PricePerformance(rows)
    if not any(r.price_per_hour is not None for r in rows):
        out.notes.append(
            f"no prices: cloud hosts need instance_type and {REGION_LABEL} labels found in the "
            f"price table; other hosts a {PRICE_LABEL} label ($/hour)."
        )
    if table is not None and any(r.price_as_of is not None for r in rows):
        out.notes.append(f"price table: {table.source}, as of {table.as_of}.")
        warn = stale_warning(table, today)
        if warn:
            out.notes.append(warn)
    bad = sorted({r.price_source for r in rows if r.price_source.startswith(("conflict", "unre"))})
    out.notes += bad
    if target is not None:
        out.target_bps = parse_target(target)
        out.cheapest, out.verdict = cheapest(rows, out.target_bps)
    return out
