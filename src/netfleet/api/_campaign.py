"""``run``: a campaign, with the cloud cost and quota guards before anything is launched."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from netfleet.api._paths import results_url

if TYPE_CHECKING:
    from netfleet.advice import Advice
    from netfleet.plan.summary import Plan
    from netfleet.runner import CampaignResult
    from netfleet.runner.events import Reporter
    from netfleet.store.envelope import Envelope
    from netfleet.tabular import Tabular


@dataclass
class RunOutcome:
    """What :func:`run` did. ``result`` is None on a dry run."""

    results: str
    #: the plan (a dry run, or a cloud campaign: it prices the run time)
    plan: Plan | None = None
    #: what launching the cloud machines costs (cloud campaigns)
    cost: Tabular | None = None
    result: CampaignResult | None = None
    #: what limited these runs, with the evidence
    advice: list[Advice] = field(default_factory=list)
    #: cloud: the session's cheat sheet with measured ÷ advertised, and what it cost
    cloud_sheet: Tabular | None = None
    cloud_cost: str | None = None
    #: cloud: ENA per instance, CloudWatch vs iperf3 (seeds 003/004)
    cloud_checks: Tabular | None = None

    @property
    def failed(self) -> bool:
        """Some run failed (in this session, or earlier and not retried): exit status 3."""
        r = self.result
        return r is not None and bool(r.failed or r.kept_failed)


def run(
    spec: str | os.PathLike[str],
    *,
    results: str | None = None,
    dry_run: bool = False,
    state_dir: Path | None = None,
    resume: bool = False,
    install: bool = False,
    concurrency: int | None = None,
    max_cost: float = 5.0,
    max_instances: int = 10,
    yes: bool = False,
    reporter: Reporter | None = None,
    say: Callable[[str], None] | None = None,
    show: Callable[[Tabular], None] | None = None,
    ask: Callable[[str], bool] | None = None,
    max_runs: int | None = None,
    wait_refill: bool = False,
) -> RunOutcome:
    """Run a campaign: preflight every host, then the runs as scheduled (concurrency, host
    exclusivity, bandwidth budget), storing and journaling each as it ends.

    A campaign with cloud hosts is planned in waves and priced first
    (:mod:`netfleet.cloud.aws.plan.runwaves`: servers held throughout, the other instances
    acquired when their job is due and released after their last run, adaptive runs bounded by
    the catalogue, the dead-man switch from the plan's end), and refused
    (:class:`~netfleet.errors.InputError`, nothing launched) above ``max_cost`` USD, above
    ``max_instances`` instances held at once, with an unknown price, or
    (:class:`~netfleet.errors.EnvironmentProblem`) when a job does not fit the account's vCPU
    quota even alone; ``yes`` confirms, it never lifts a limit. ``show`` gets the cost table
    (its notes: the waves, peak vCPUs, instance-hours, the quota notes) before that check,
    ``reporter`` the progress of each run.
    ``backing: sim`` is refused on any endpoint that is not loopback; on a real AWS endpoint the
    account, regions, resources and estimate go to ``say`` and the launch needs ``yes`` or
    ``ask(question)`` answering True (:mod:`netfleet.cloud.aws.plan.safety`).
    ``max_runs``: the most runs the campaign may plan (default NETFLEET_MAX_RUNS, else
    1,000,000; counted before anything is expanded).
    A burst test on a burstable host within its refill time after its last traffic (this
    campaign's journal or another's under the same results root) is said, and its bucket
    flagged possibly partial; ``wait_refill`` waits for a lab host's known refill
    (``lab_refill_s``) instead (a host's ``refill_s`` label is always waited for).
    A failed run does not raise: see :attr:`RunOutcome.failed`."""
    from netfleet.api._aio import run_sync
    from netfleet.api._spec import is_cloud, plan_of, with_refill
    from netfleet.runner import run_campaign
    from netfleet.spec import load_spec
    from netfleet.store import open_root

    campaign = load_spec(Path(spec), max_runs=max_runs)
    root = open_root(results_url(results, campaign.results))
    outcome = RunOutcome(root.url)
    cloud = is_cloud(campaign)
    priced = None
    if cloud:  # backing sim never reaches a real endpoint (a dry run's plan either)
        from netfleet.cloud.aws.plan import safety

        safety.check_campaign(campaign, safety.PLAN_SERVICES)
    if dry_run or cloud:
        outcome.plan = with_refill(plan_of(campaign), root.journal_root)
        if cloud:  # AWS's plan: the waves and stop bounds the run follows, priced (issue 25)
            from netfleet.cloud.aws import runs

            priced = runs.plan_cost(
                campaign,
                outcome.plan.estimated_seconds,
                runs=outcome.plan.runs,
                max_instances=max_instances,
                max_cost=max_cost,
                concurrency=concurrency,
            )
            assert priced is not None
            outcome.cost = priced.table
            if not dry_run and show is not None:
                show(priced.table)
        if dry_run:
            return outcome
    from netfleet.cloud import guard

    if priced is not None:  # AWS's price and quota answer for the waves the run follows
        runs.follow(campaign, priced)
    # every cloud's machines, AWS's included: one guard, from each cloud's price and quota,
    # before anything is launched (and before the confirmation is asked), over the wall time
    # the run takes (with AWS's waves: theirs, boot and release included)
    guard.campaign(
        campaign,
        lambda: (
            priced.waves.plan.wall_s
            if priced is not None
            else (outcome.plan or plan_of(campaign)).estimated_seconds
        ),
        max_cost=max_cost,
        max_instances=max_instances,
        say=say or (lambda _line: None),
    )
    if priced is not None:  # a real endpoint: the account, regions and estimate confirmed
        runs.confirm_campaign(
            campaign,
            priced.estimate,
            yes=yes,
            ask=ask,
            say=say or (lambda _line: None),
            switch_minutes=priced.waves.switch_minutes(),
        )
    result = run_sync(
        run_campaign(
            campaign,
            root,
            reporter,
            state_dir,
            resume=resume,
            install=install,
            concurrency=concurrency,
            waves=priced.waves.acquire if priced is not None else None,
            wait_refill=wait_refill,
        )
    )
    outcome.result = result
    from netfleet.advice import advise

    outcome.advice = advise(e.model_dump() for e in result.envelopes)
    if cloud and result.ok:
        from netfleet.cloud.aws import runs

        since = min(e.started_at for e in result.envelopes)
        outcome.cloud_sheet, outcome.cloud_cost = runs.summary(
            campaign, root.url, priced, since, envelopes=result.envelopes
        )
        cloud_settings = runs.cloud_spec(campaign)
        if cloud_settings is not None:  # seeds 003/004: ENA per instance, CloudWatch vs iperf3
            from netfleet.cloud.aws.collect.checks import session_checks

            outcome.cloud_checks = session_checks(result.envelopes, cloud_settings.region)
    return outcome


def __getattr__(name: str) -> str:
    if name == "RUN_LINE_LEGEND":  # what a run line's words mean (netfleet.report.runline)
        from netfleet.report.runline import RUN_LINE_LEGEND

        return RUN_LINE_LEGEND
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def run_summary(envelope: Envelope) -> str:
    """The engine's one-line summary of a stored run (its received rate, for throughput
    engines; both levels of a run that held two: "379 → 47.8 Mbit/s after 6.1 s"; a scaled
    lab's run adds the cloud figures it stands for); empty when the engine has none."""
    from netfleet.engines import summary
    from netfleet.report.runline import rate_line, run_levels

    levels = run_levels(envelope.model_dump(mode="json")) if envelope.status == "ok" else None
    if levels is not None:
        return levels
    found = summary(envelope.engine.name, envelope.result)
    if found is None:
        return ""
    if found.received_bps is None:
        return found.text
    return rate_line(found.received_bps, found.text, envelope.labels)
