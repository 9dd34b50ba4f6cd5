"""``netfleet demo``: lab up → campaign → ingest → cheat sheet → lab down, leaving nothing behind.

The demo's lab runs at ×0.05 of the cloud figures its hosts' names give; its cheat sheet is shown
as those cloud figures (the lab's ÷ 0.05, flagged ``cloud; lab ×0.05``). The steady host's shaper
is known, so the demo checks itself: its cheat-sheet average in the lab's own figures must match
rate × 1448/1514 (TCP goodput at MTU 1500 with timestamps) within 2 %. It ends with the answer
seed 004 was written for, per direction of the credit host: it bursts at X for τ s, then gives
Y; bucket ≈ Z — in the cloud figures the lab's stand for, the lab's beside them — and the
calculator command for the next question (:mod:`netfleet.report.burst_answer`).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netfleet.errors import EnvironmentProblem, InputError, NetfleetError
from netfleet.report import Tabular
from netfleet.runner import CampaignResult, Reporter, run_campaign
from netfleet.spec import load_spec
from netfleet.store import open_root
from netfleet.units import goodput_ratio

CAMPAIGN = Path(__file__).with_name("campaign.yaml")
LAB_PROFILE = "demo"
MARKER = ".netfleet-demo"
TOLERANCE = 0.02


@dataclass
class DemoResult:
    campaign: CampaignResult
    #: the cheat sheet as shown: the lab's rows as the cloud figures they stand for
    cheatsheet: Tabular
    steady_expected_gbps: float
    #: the steady host's average per direction, in the lab's figures (checked against its shaper)
    steady_measured_gbps: dict[str, float]
    wall_s: float
    workdir: Path
    lab_removed: list[str]
    #: the study report (HTML) written at the end, or None if it could not be built
    report: Path | None = None
    report_problem: str | None = None
    #: the credit host's answer per direction (sentence, calculator command or None)
    answers: list[tuple[str, str | None]] = field(default_factory=list)
    #: the same cheat sheet in the lab's own figures
    lab_cheatsheet: Tabular | None = None
    #: the steady host's average per direction as the cloud figure it stands for (Gbit/s)
    steady_cloud_gbps: dict[str, float] = field(default_factory=dict)

    @property
    def steady_ok(self) -> bool:
        return bool(self.steady_measured_gbps) and all(
            abs(v / self.steady_expected_gbps - 1) <= TOLERANCE
            for v in self.steady_measured_gbps.values()
        )


def prepare(workdir: Path) -> tuple[Path, Path]:
    """Results and catalog directories inside ``workdir``, emptied if the demo made them."""
    if workdir.exists() and any(workdir.iterdir()) and not (workdir / MARKER).exists():
        raise InputError(
            f"{workdir} exists and was not made by netfleet demo",
            hint="pass --dir with a new or empty directory",
        )
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / MARKER).write_text("made by netfleet demo; safe to delete\n")
    results, catalog = workdir / "results", workdir / "catalog"
    for d in (results, catalog):
        if d.exists():
            shutil.rmtree(d)
    return results, catalog


def run_demo(
    workdir: Path,
    reporter: Reporter | None = None,
    state_dir: Path | None = None,
    run_async: Callable[[Coroutine[Any, Any, CampaignResult]], CampaignResult] = asyncio.run,
    say: Callable[[str], None] = lambda _msg: None,
) -> DemoResult:
    from netfleet import lab
    from netfleet.catalog import ingest
    from netfleet.report.cheatsheet import cheatsheet

    if os.geteuid() != 0:
        raise EnvironmentProblem(
            "netfleet demo builds a lab of network namespaces and tc shapers, which needs root",
            hint="run it as root: sudo netfleet demo (or the README's demo command)",
        )
    t0 = time.monotonic()
    results, catalog = prepare(workdir)
    lab_spec = lab.load_lab(LAB_PROFILE)
    if lab_spec.name in lab.labs(state_dir=state_dir):
        say(f"removing a leftover '{lab_spec.name}' lab first")
        lab.down(lab_spec.name, state_dir=state_dir)
    say(f"lab up: {', '.join(lab_spec.hosts)}")
    lab.up(lab_spec, state_dir=state_dir)
    try:
        spec = load_spec(CAMPAIGN)
        campaign = run_async(run_campaign(spec, open_root(results), reporter, state_dir))
    finally:
        removed = lab.down(lab_spec.name, state_dir=state_dir)
        say(f"lab down: removed {len(removed)} namespaces")
    ingest(open_root(results), catalog)
    group = ("instance_type", "direction")
    # checked in the lab's figures (its shapers'); shown as the cloud figures they stand for
    lab_sheet = cheatsheet(catalog, group_by=group)
    sheet = cheatsheet(catalog, group_by=group, scale="cloud")
    steady = lab_spec.hosts["steady"]
    rate = steady.out.rate if steady.out is not None else 0.0
    expected = rate * goodput_ratio(steady.mtu or lab_spec.mtu) / 1e9
    measured = _steady_avg(lab_sheet, steady.labels.get("instance_type"))
    in_cloud = _steady_avg(sheet, steady.labels.get("instance_type"))
    answers = _burst_answers(catalog, spec.campaign)
    report, problem = _study_report(catalog, workdir / "report.html", spec.campaign, say)
    return DemoResult(
        campaign,
        sheet,
        expected,
        measured,
        time.monotonic() - t0,
        workdir,
        removed,
        report,
        problem,
        answers,
        lab_sheet,
        in_cloud,
    )


def _steady_avg(sheet: Tabular, instance_type: object) -> dict[str, float]:
    """The steady host's average per direction in a cheat sheet (Gbit/s)."""
    return {
        str(rec.get("direction")): float(rec["avg"])
        for rec in sheet.records()
        if rec.get("instance_type") == instance_type
    }


def _burst_answers(catalog: Path, campaign: str) -> list[tuple[str, str | None]]:
    from netfleet.report.burst_answer import burst_answer
    from netfleet.report.study import throughput_groups

    found = [burst_answer(g) for g in throughput_groups(catalog, (campaign,))]
    return [(a.sentence(), a.calc_command()) for a in found if a is not None]


def _study_report(
    catalog: Path, out: Path, campaign: str, say: Callable[[str], None]
) -> tuple[Path | None, str | None]:
    """The demo ends with the HTML study report; a report that cannot be built is said, never
    a reason to lose the measured results."""
    from netfleet.report.study_report import write_study

    say("writing the study report")
    try:
        return write_study(catalog, out, campaigns=(campaign,), title="netfleet demo"), None
    except NetfleetError as exc:
        return None, str(exc)
