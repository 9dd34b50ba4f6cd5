"""Seed 001's summary table: request/response latency, ping and throughput per topology label,
from the catalog's :func:`netfleet.catalog.topology.topology_rows`."""

from __future__ import annotations

import os

from netfleet.catalog.pending import catalog_notes
from netfleet.catalog.topology import COLUMNS, topology_rows
from netfleet.report.cheatsheet import scale_notes
from netfleet.tabular import Tabular


def topology_table(
    catalog_dir: str | os.PathLike[str],
    by: str = "topology",
    campaign: str | None = None,
    results: str | os.PathLike[str] | None = None,
) -> Tabular:
    """One row per value of ``by`` (a label key or runs column), with what each column means;
    with ``results`` (a results root), raw results not yet in the catalog are named in a note."""
    rows, missing, scaled = topology_rows(catalog_dir, by, campaign)
    return Tabular(
        [by, *COLUMNS],
        rows,
        title=f"Latency and throughput by {by}" + (f", campaign {campaign}" if campaign else ""),
        notes=[
            "rr = request/response over one TCP connection (latency engine), averaged over "
            "runs; full_round_trip false means half-RTT numbers (sockperf without --full-rtt).",
            "throughput = the receiver's total per run (Gbit/s goodput), averaged over complete "
            "runs; streams = the parallel streams those runs used.",
            *(
                [
                    f"{missing} throughput run(s) have no end summary (adaptive runs stopped "
                    "once steady, or runs cut short): left out of throughput, blank when a group "
                    "has no other — see netfleet analyze for their interval series."
                ]
                if missing
                else []
            ),
            *scale_notes((f"{by} {value}", rate, time) for value, rate, time in scaled),
            *catalog_notes(results, catalog_dir),
        ],
        decimals=2,
    )
