"""``report topology``, ``report html`` and ``report price``: answers over the catalog."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from netfleet.api._paths import catalog_dir, results_url

if TYPE_CHECKING:
    from netfleet.pricetable import PriceTable
    from netfleet.report.price import PricePerformance
    from netfleet.tabular import Tabular


def report_topology(
    *,
    catalog: str | os.PathLike[str] | None = None,
    results: str | None = None,
    by: str = "topology",
    campaign: str | None = None,
    scale: Literal["lab", "cloud"] = "lab",
) -> Tabular:
    """Seed 001's summary: request/response latency, ping and throughput per topology label
    (``by``: a label key or runs column). ``scale``: a scaled lab's throughput as measured
    (``lab``) or as the cloud figures it stands for (``cloud``)."""
    from netfleet.report.topology import topology_table

    return topology_table(
        catalog_dir(catalog),
        by,
        campaign,
        results=results_url(results),
        scale=scale,
        price_table=_prices(),
    )


def _prices() -> PriceTable:
    """The dated table cloud hosts are priced from: AWS's (its refreshed copy in the cloud
    state directory, else the one it ships)."""
    from netfleet import pricetable
    from netfleet.cloud.aws.plan import prices

    return prices.load(pricetable.default_state_root())


def report_loaded(
    *,
    catalog: str | os.PathLike[str] | None = None,
    campaign: Sequence[str] = (),
    scale: Literal["lab", "cloud"] = "lab",
) -> Tabular:
    """Latency under load: every phase of every ``latency-under-load`` run (idle, up, down,
    both) with its RTT percentiles, inflation over idle, responsiveness in round trips per
    minute (RPM), one-way medians, loss and the load's goodput (``campaign``: only those).
    ``scale``: a scaled lab's goodput as measured (``lab``) or as the cloud figures it stands
    for (``cloud``; latency is the lab's in both)."""
    from netfleet.report.loaded_latency import loaded_table

    return loaded_table(catalog_dir(catalog), tuple(campaign), scale)


def report_pps(
    *,
    results: str | None = None,
    campaign: str | None = None,
    scale: Literal["lab", "cloud"] = "lab",
) -> Tabular:
    """Packets per second: every ``pps`` run's sent, arrived and delivered pps, loss, what
    limited it (path, receiver or sender) and its hosts' ENA allowance deltas, read from the raw
    results (of one campaign, or all). ``scale``: a scaled lab's packet rates as measured
    (``lab``) or as the cloud figures they stand for (``cloud``; a sender- or receiver-limited
    run keeps the lab's)."""
    from netfleet.report.pps import pps_table
    from netfleet.store import open_root

    root = open_root(results_url(results))
    docs = [root.read(p) for p in root.files()]
    return pps_table((d for d in docs if not campaign or d.get("campaign") == campaign), scale)


def report_html(
    *,
    catalog: str | os.PathLike[str] | None = None,
    results: str | None = None,
    campaign: Sequence[str] = (),
    out: str | os.PathLike[str] = "netfleet-report.html",
    format: Literal["html", "markdown"] = "html",
    compare: tuple[str, str] | None = None,
    target: str | None = None,
    title: str | None = None,
) -> Path:
    """Write the study report (one self-contained HTML file, or markdown with its PNGs):
    summary with advice, cheat sheet, out vs in, measured ÷ advertised, burst vs baseline,
    latency per topology, price per Gbit/s, compare (``compare``: A B), per-run appendix.
    Returns the file written."""
    from netfleet.catalog.pending import catalog_notes
    from netfleet.report.document import Paragraph
    from netfleet.report.html import write_report
    from netfleet.report.study_report import build_document

    cat = catalog_dir(catalog)
    doc = build_document(
        cat, tuple(campaign), compare=compare, target=target, title=title, price_table=_prices()
    )
    if doc.sections:  # un-ingested raw results: said first, in the summary
        doc.sections[0].blocks[:0] = [
            Paragraph(n, "warn") for n in catalog_notes(results_url(results), cat)
        ]
    return write_report(doc, Path(out), format)


def report_price(
    *,
    catalog: str | os.PathLike[str] | None = None,
    campaign: Sequence[str] = (),
    target: str | None = None,
) -> PricePerformance:
    """$ per sustained and per peak Gbit/s and $/month: prices from the dated price table for
    cloud hosts (instance_type + region labels), else from price_per_hour labels; with
    ``target`` (e.g. ``5gbit``), the cheapest type meeting that sustained rate."""
    from netfleet.report.price import price_performance

    return price_performance(catalog_dir(catalog), tuple(campaign), target=target, table=_prices())
