"""Seed 001's summary table: request/response latency, ping and throughput per topology label,
from the catalog's :func:`netfleet.catalog.topology.topology_rows`."""

from __future__ import annotations

import os
from typing import Any

from netfleet.catalog.pending import catalog_notes
from netfleet.catalog.topology import COLUMNS, PRICE_LABELS, topology_labels, topology_rows
from netfleet.pricetable import PriceTable
from netfleet.report.cheatsheet import Scale, in_cloud_figures, scale_notes
from netfleet.tabular import Tabular

#: the providers' month (365 × 24 / 12 h); seed 001 wrote 24 × 30 = 720
HOURS_PER_MONTH = 730.0


def _price(
    labels: list[str], types: list[str], regions: list[str], table: PriceTable | None
) -> tuple[float | None, str | None]:
    """One instance's $/hour for a topology's runs, and where it came from."""
    if len(labels) == 1:
        try:
            return float(labels[0]), "price_per_hour label"
        except ValueError:
            return None, f"unreadable price_per_hour label {labels[0]!r}"
    if len(labels) > 1:
        return None, f"several price_per_hour labels ({', '.join(labels)})"
    if table is not None and len(types) == 1 and len(regions) == 1:
        hourly = table.ec2_hourly(regions[0], types[0])
        if hourly is not None:
            return hourly, f"price table as of {table.as_of}"
    return None, None


def _in_cloud(rows: list[list[Any]], rate_of: dict[Any, str]) -> list[list[Any]]:
    """The throughput of each scaled lab's row as the cloud figure it stands for."""
    columns = ["", *COLUMNS]
    rows = in_cloud_figures(rows, columns, ["throughput_gbps"], [rate_of.get(r[0]) for r in rows])
    at = columns.index("throughput_by_streams")
    for row in rows:  # "1: 0.28, 2: 0.29" → each count's figure in the cloud
        rate = rate_of.get(row[0])
        if rate and "," not in rate and row[at]:
            pairs = (part.split(": ") for part in str(row[at]).split(", "))
            row[at] = ", ".join(f"{p}: {float(v) / float(rate):.2f}" for p, v in pairs)
    return rows


def topology_table(
    catalog_dir: str | os.PathLike[str],
    by: str = "topology",
    campaign: str | None = None,
    results: str | os.PathLike[str] | None = None,
    scale: Scale = "lab",
    price_table: PriceTable | None = None,
) -> Tabular:
    """One row per value of ``by`` (a label key or runs column), with what each column means;
    with ``results`` (a results root), raw results not yet in the catalog are named in a note.
    ``scale``: a scaled lab's throughput as measured (``lab``) or as the cloud figures it
    stands for (``cloud``). ``price_table``: the dated table cloud hosts are priced from (None:
    ``price_per_hour`` labels only)."""
    from netfleet.lab.gateway import RATE_LABEL, UNCAPPED, uncapped_words

    rows, missing, scaled = topology_rows(catalog_dir, by, campaign)
    labels = topology_labels(catalog_dir, by, campaign, (*PRICE_LABELS, RATE_LABEL))
    table = price_table
    sources: set[str] = set()
    uncapped = [str(g) for g, (*_, gw) in labels.items() if UNCAPPED in gw]
    words = uncapped_words({RATE_LABEL: UNCAPPED})
    gateway = [f"{by} {', '.join(uncapped)}: through a lab gateway; {words}."] if uncapped else []
    if scale == "cloud" and scaled:
        rows = _in_cloud(rows, {value: rate for value, rate, _time in scaled})
    for row in rows:
        prices, types, regions, _gw = labels.get(row[0], ([], [], [], []))
        hourly, source = _price(prices, types, regions, table)
        row += [hourly, None if hourly is None else hourly * HOURS_PER_MONTH]
        if source:
            sources.add(source)
    return Tabular(
        [by, *COLUMNS, "usd_per_hour", "usd_per_month"],
        rows,
        title=f"Latency and throughput by {by}" + (f", campaign {campaign}" if campaign else ""),
        notes=[
            "rr = request/response over one TCP connection (latency engine); rr_mean_us, "
            "rr_p50_us and rr_p99_us are the mean over runs of each run's own figure (the "
            "samples are not stored: no percentile over the pooled samples), "
            "rr_p99_worst_run_us the highest run's p99; full_round_trip false means half-RTT "
            "numbers (sockperf without --full-rtt).",
            "throughput = the receiver's total per run (Gbit/s goodput), averaged over the "
            "complete runs of one stream count: the count that carried the most (streams); "
            "throughput_by_streams = each count's average when runs used several (never "
            "averaged together).",
            *(
                [
                    f"{missing} throughput run(s) have no end summary (adaptive runs stopped "
                    "once steady, or runs cut short): left out of throughput, blank when a group "
                    "has no other — see netfleet analyze for their interval series."
                ]
                if missing
                else []
            ),
            "usd_per_hour, usd_per_month: one instance of the topology's hosts (label "
            "price_per_hour, else the dated price table by instance_type and region), × "
            f"{HOURS_PER_MONTH:g} h a month (seed 001: 24 × 30 h); a pair costs twice"
            + (f"; from {', '.join(sorted(sources))}." if sources else "; no prices found."),
            *scale_notes(((f"{by} {value}", rate, time) for value, rate, time in scaled), scale),
            *gateway,
            *catalog_notes(results, catalog_dir),
        ],
        decimals=2,
    )
