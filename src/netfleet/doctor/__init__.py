"""``netfleet doctor``: is this fleet ready, and what will limit its numbers?

::

    report = asyncio.run(doctor(spec))        # hosts, client→server pairs, advice
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netfleet.advice import Advice, advise_doctor, rules_changed
from netfleet.doctor.checks import host_report, pair_report
from netfleet.hosts.registry import build_host
from netfleet.plan import expand
from netfleet.spec.models import CampaignSpec


@dataclass
class DoctorReport:
    hosts: list[dict[str, Any]] = field(default_factory=list)
    pairs: list[dict[str, Any]] = field(default_factory=list)
    advice: list[Advice] = field(default_factory=list)


async def doctor(
    spec: CampaignSpec,
    lab_state_dir: Path | None = None,
    results: Iterable[Mapping[str, Any]] = (),
) -> DoctorReport:
    """Check every host of the spec and every client→server pair its runs use; with the
    campaign's earlier ``results`` (raw envelopes), warn about provider rules revised since."""
    hosts = {name: build_host(name, hs, lab_state_dir) for name, hs in spec.hosts.items()}
    runs = expand(spec)
    pairs = sorted({(r.client, r.server) for r in runs if r.client != r.server})
    used = sorted({h for p in pairs for h in p} | {r.client for r in runs})
    for name in used:
        await hosts[name].check()
    report = DoctorReport()
    for name in used:
        report.hosts.append(await host_report(hosts[name]))
    mtus = {h["host"]: h["mtu"] for h in report.hosts}
    for client, server in pairs:
        report.pairs.append(await pair_report(hosts[client], hosts[server], mtus.get(client)))
    report.advice = advise_doctor(report.hosts, report.pairs) + rules_changed(results)
    return report


__all__ = ["DoctorReport", "doctor"]
