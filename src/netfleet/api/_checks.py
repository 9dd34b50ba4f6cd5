"""``doctor`` and ``advice``: what will stop a campaign, and what limited its runs."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from netfleet.api._paths import catalog_dir, results_url

if TYPE_CHECKING:
    from netfleet.advice import Advice
    from netfleet.doctor import DoctorReport


def doctor(
    spec: str | os.PathLike[str], *, state_dir: Path | None = None, results: str | None = None
) -> DoctorReport:
    """Check every host and client→server pair of a campaign before running it: tool versions
    and capabilities, CPUs, interface and path MTU (tracepath), NIC driver, ENA allowance
    counters, offloads, ICMP and TCP port reachability — then advice with its evidence (an
    advice of severity ``error``: runs would fail). The campaign's earlier results (in
    ``results``, else where ``run`` puts them) are checked for provider rules revised since."""
    from netfleet.api._aio import run_sync
    from netfleet.doctor import doctor as run_doctor
    from netfleet.spec import load_spec

    loaded = load_spec(Path(spec))
    earlier = _campaign_results(results_url(results, loaded.results), loaded.campaign)
    return run_sync(run_doctor(loaded, state_dir, earlier))


def _campaign_results(url: str, campaign: str) -> list[dict[str, Any]]:
    """The raw envelopes of one campaign; none when the results root does not exist yet."""
    from netfleet.store import ResultsRoot, open_root

    root = open_root(url)
    if isinstance(root, ResultsRoot) and not root.path.is_dir():
        return []
    return [root.read(p) for p in root.glob(f"d=*/campaign={campaign}/*.json.gz")]


def advice(
    *,
    results: str | None = None,
    catalog: str | os.PathLike[str] | None = None,
    campaign: str | None = None,
) -> list[Advice]:
    """Advice with evidence over the raw results (of one campaign, or all): CPU-bound runs,
    per-flow caps, gateway MTU, in/out asymmetry, retransmits, ENA allowances. The runs of
    ``results`` and those ``catalog`` holds by reference (``netfleet import … --catalog``: each
    read from its file, checked against the manifest's SHA-256; a missing or changed file is an
    error naming it)."""
    from netfleet.advice import advise
    from netfleet.analysis import registered_documents
    from netfleet.store import ResultsRoot, open_root

    root = open_root(results_url(results))
    docs = []
    if not isinstance(root, ResultsRoot) or root.path.is_dir():
        docs = [root.read(p) for p in root.files()]
    if campaign:
        docs = [d for d in docs if d.get("campaign") == campaign]
    return advise(docs + registered_documents(catalog_dir(catalog), campaign))
