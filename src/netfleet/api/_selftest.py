"""``cloud selftest``: the smallest campaign that touches every call a study makes, on the
user's own account, with a step-by-step report around it.

The selftest is a generated two-instance campaign (one server, one client, one iperf3 run)
run through :func:`netfleet.api.run` — the path a study takes, guards included. Around it:

* before the run, the checks a study makes, each as a step of its own: the credentials
  (``sts:GetCallerIdentity``), what an earlier selftest left (given back through the one
  release path, as ``cloud destroy`` does), the permission probes
  (:mod:`netfleet.cloud.aws.plan.permissions`), the service-linked roles a spot or Fargate
  study creates, the vCPU quota (:mod:`~netfleet.cloud.aws.plan.quotas`) and the image lookup
  (:mod:`~netfleet.cloud.aws.acquire.images`);
* after it, the steps read back from the campaign's own journal (the record a ``kill -9``
  recovery reads): the plan and its guards, the network, the launch, user-data and readiness,
  the iperf3 run, the result in the results root (read back), the release, what AWS still
  counts of the campaign (every kind 0, else given back again), and the bill.

Every step has its time, what AWS answered, and for a failure the fix; the first failure's
class is the exit status (:data:`EXIT_STATUSES`). The campaign's name is fixed
(:data:`CAMPAIGN`), so a selftest killed with ``kill -9`` is finished by
``netfleet cloud destroy netfleet-selftest`` or by the next selftest's first step.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from netfleet.errors import EnvironmentProblem, ExitStatus, InputError, NetfleetError

if TYPE_CHECKING:
    from netfleet.cloud.aws.campaign import CloudSpec
    from netfleet.runner.events import Reporter
    from netfleet.tabular import Tabular

#: the selftest's campaign: one name, so the next selftest (or ``cloud destroy``) finds it
CAMPAIGN = "netfleet-selftest"
#: its two instances' hosts
SERVER, CLIENT = "server", "client"
#: each failure class → the exit status it ends with (README.md, docs/cloud.md)
EXIT_STATUSES = {
    "refused": ExitStatus.INVALID_INPUT,  # a limit (--max-cost) or the confirmation
    "measurement": ExitStatus.RUNS_FAILED,  # everything came up, the iperf3 run failed
    "account": ExitStatus.ENVIRONMENT,  # credentials, permissions, quota, image, launch…
    "left": ExitStatus.LEFT_RESOURCES,  # resources of the selftest may remain
}
#: the statuses a step ends with
OK, WARN, FAIL, SKIPPED = "ok", "warn", "fail", "skipped"
#: the steps, in order (those not reached are shown as skipped)
STEPS = (
    "credentials",
    "leftovers",
    "permissions",
    "service-linked roles",
    "quotas",
    "image",
    "plan and guards",
    "network",
    "launch",
    "user-data and readiness",
    "iperf3",
    "result",
    "release",
    "nothing left",
    "bill",
)


@dataclass
class Step:
    """One step of the selftest: its status, how long it took, what AWS answered, the fix."""

    name: str
    status: str
    seconds: float | None
    answered: str
    fix: str = ""
    #: a failure's exit status (:data:`EXIT_STATUSES`)
    exit_status: int = 0


@dataclass
class Selftest:
    """What :func:`cloud_selftest` found, step by step."""

    region: str
    campaign: str
    steps: list[Step] = field(default_factory=list)

    @property
    def exit_status(self) -> int:
        """0 when no step failed; else resources left (6) before the first failure's class."""
        failed = [s for s in self.steps if s.status == FAIL]
        if any(s.exit_status == ExitStatus.LEFT_RESOURCES for s in failed):
            return int(ExitStatus.LEFT_RESOURCES)
        return failed[0].exit_status if failed else 0

    def step(self, name: str) -> Step:
        return next(s for s in self.steps if s.name == name)

    def table(self) -> Tabular:
        """The steps as a table (``--format json`` too), with the verdict as its note."""
        from netfleet.tabular import Tabular

        rows = [
            [
                i,
                s.name,
                None if s.seconds is None else round(s.seconds, 1),
                s.status,
                s.answered,
                s.fix or None,
            ]
            for i, s in enumerate(self.steps, start=1)
        ]
        failed = [s.name for s in self.steps if s.status == FAIL]
        verdict = (
            f"failed: {', '.join(failed)} (exit {self.exit_status})"
            if failed
            else "every step passed: a study on this account can launch, measure, store and "
            "clean up"
        )
        return Tabular(
            ["step", "name", "seconds", "status", "aws answered", "fix"],
            rows,
            title=f"netfleet cloud selftest — {self.region}, campaign {self.campaign}",
            notes=[verdict],
            decimals=1,
        )


class _Stop(Exception):
    """A step failed: the steps after it are skipped."""


class _Steps:
    """The report as it grows; each step timed and handed to ``on_step`` as it ends."""

    def __init__(self, report: Selftest, on_step: Callable[[Step], None] | None) -> None:
        self.report, self.on_step = report, on_step

    def add(self, step: Step) -> Step:
        self.report.steps.append(step)
        if self.on_step is not None:
            self.on_step(step)
        return step

    @contextmanager
    def timed(self, name: str, fix: str, cls: str = "account") -> Iterator[dict[str, Any]]:
        """Run a step: the block sets ``answered`` (and ``status``/``fix``); an AWS or netfleet
        error fails it with ``fix`` (or the error's own hint) and stops the selftest."""
        from botocore.exceptions import BotoCoreError, ClientError

        got: dict[str, Any] = {"answered": "", "status": OK, "fix": ""}
        t0 = time.monotonic()
        try:
            yield got
        except (BotoCoreError, ClientError) as exc:
            self.add(
                Step(
                    name,
                    FAIL,
                    time.monotonic() - t0,
                    _first_line(exc),
                    fix,
                    int(EXIT_STATUSES[cls]),
                )
            )
            raise _Stop from None
        except NetfleetError as exc:
            status = int(EXIT_STATUSES[cls] if cls == "left" else exc.exit_status)
            self.add(Step(name, FAIL, time.monotonic() - t0, exc.message, exc.hint or fix, status))
            raise _Stop from None
        code = int(EXIT_STATUSES[cls]) if got["status"] == FAIL else 0
        self.add(
            Step(name, got["status"], time.monotonic() - t0, got["answered"], got["fix"], code)
        )
        if got["status"] == FAIL:
            raise _Stop

    def skip_rest(self) -> None:
        """The steps not reached, as skipped; every step in :data:`STEPS` order."""
        done = {s.name for s in self.report.steps}
        for name in STEPS:
            if name not in done:
                self.add(Step(name, SKIPPED, None, "not reached"))
        self.report.steps.sort(key=lambda s: STEPS.index(s.name))


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0][:300]


def selftest_spec(
    region: str, instance_type: str, seconds: float, backing: str, controller_cidr: str | None
) -> dict[str, Any]:
    """The selftest's campaign: one server and one client of ``instance_type`` in one zone of
    ``region``, on-demand, one iperf3 run of ``seconds`` from the client to the server."""
    cloud: dict[str, Any] = {
        "region": region,
        "placement": "same-az",
        "market": "on-demand",
        "backing": backing,
        "expires_after_minutes": 30,
        "fleets": [
            {"name": SERVER, "instance_type": instance_type, "role": "server"},
            {"name": CLIENT, "instance_type": instance_type, "role": "client"},
        ],
    }
    if controller_cidr is not None:
        cloud["controller_cidr"] = controller_cidr
    return {
        "campaign": CAMPAIGN,
        "description": "netfleet cloud selftest: every call a study makes, on two small instances",
        "cooldown": 0,
        "cloud": cloud,
        "tests": [
            {
                "name": "selftest",
                "engine": "iperf3",
                "server": SERVER,
                "subject": "client",
                "params": {"duration": seconds, "omit": 0, "interval": 1},
                "matrix": {"client": [CLIENT]},
            }
        ],
    }


def _check_options(
    region: str, instance_type: str, seconds: float, backing: str, controller_cidr: str | None
) -> None:
    import re

    from netfleet.spec.cloud import REGION_RE, TYPE_RE, ssh_reach_problem

    if not REGION_RE.match(region):
        raise InputError(f"--region {region!r} is not an AWS region name", hint="e.g. us-east-1")
    if not re.match(TYPE_RE, instance_type):
        raise InputError(
            f"--instance-type {instance_type!r} is not an EC2 instance type", hint="e.g. t3.micro"
        )
    if not 1 <= seconds <= 60:
        raise InputError(f"--seconds {seconds:g} is outside 1-60", hint="the selftest runs 10 s")
    if backing not in ("ssh", "sim"):
        raise InputError(f"--backing {backing!r}: ssh or sim", hint="ssh measures the instances")
    if backing == "ssh":
        problem = ssh_reach_problem(controller_cidr)
        if problem is not None:
            raise InputError(
                problem.replace("cloud.controller_cidr", "--controller-cidr"),
                hint="give --controller-cidr ADDRESS/32, the public address this machine "
                "connects from",
            )


def cloud_selftest(
    *,
    region: str = "us-east-1",
    instance_type: str = "t3.micro",
    seconds: float = 10.0,
    results: str | None = None,
    backing: str = "ssh",
    controller_cidr: str | None = None,
    max_cost: float = 0.10,
    yes: bool = False,
    reporter: Reporter | None = None,
    say: Callable[[str], None] | None = None,
    ask: Callable[[str], bool] | None = None,
    on_step: Callable[[Step], None] | None = None,
) -> Selftest:
    """Run the selftest campaign (:data:`CAMPAIGN`: a server and a client of
    ``instance_type`` in ``region``, one iperf3 run of ``seconds``, its result to ``results``)
    on the account the credentials name, each step checked and timed (:data:`STEPS`), and give
    everything back — also after a failure, Ctrl-C or SIGTERM (then re-raised). ``backing``:
    ``ssh`` measures the instances (needs ``controller_cidr``, this machine's public
    address/32); ``sim`` stands lab namespaces in for them (root; loopback endpoints only, as
    every ``backing: sim`` campaign). ``max_cost`` bounds the estimate, ``yes`` confirms the
    launch on real AWS (else ``ask``), ``say`` gets the confirmation's lines, ``reporter`` the
    run's progress, ``on_step`` each step as it ends. A failed step does not raise:
    :attr:`Selftest.exit_status` says which class failed."""
    import yaml

    from netfleet.api._paths import results_url
    from netfleet.cloud.aws.plan import safety
    from netfleet.cloud.aws.runs import cloud_spec
    from netfleet.spec import load_spec

    _check_options(region, instance_type, seconds, backing, controller_cidr)
    report = Selftest(region, CAMPAIGN)
    steps = _Steps(report, on_step)
    doc = selftest_spec(region, instance_type, seconds, backing, controller_cidr)
    with _sigterm_as_ctrl_c(), _campaign_file(yaml.safe_dump(doc, sort_keys=False)) as spec_path:
        spec = load_spec(spec_path)
        safety.check_campaign(spec, safety.PLAN_SERVICES)  # sim: loopback endpoints only
        cs = cloud_spec(spec)
        assert cs is not None
        try:
            _before(steps, cs)
            _campaign(
                steps,
                spec_path,
                results_url(results, None),
                cs,
                backing,
                max_cost=max_cost,
                yes=yes,
                reporter=reporter,
                say=say,
                ask=ask,
            )
        except _Stop:
            pass
        finally:
            steps.skip_rest()
    return report


#: the generated campaign file, in the campaign's own directory of the cloud state
SPEC_FILE = "selftest.yaml"


@contextmanager
def _campaign_file(text: str) -> Iterator[Path]:
    """The selftest's campaign file, written (atomically: whatever is at the name, a link
    included, is replaced) into the campaign's directory of the cloud state, not a temporary
    directory: a selftest killed with ``kill -9`` leaves it where the next selftest replaces it,
    nothing in ``/tmp``. Removed when the selftest ends."""
    from netfleet.api._cloud import state_root
    from netfleet.cloud.aws.journal import Journal
    from netfleet.durable import atomic_write

    folder = Journal(state_root(), CAMPAIGN).dir
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = atomic_write(folder / SPEC_FILE, text.encode())
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)


@contextmanager
def _sigterm_as_ctrl_c() -> Iterator[None]:
    """SIGTERM stops the selftest as Ctrl-C does (what it made is given back, exit 130), in
    the main thread; the caller's handler is back afterwards."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


# -- before the campaign -----------------------------------------------------------------------
CREDENTIALS_FIX = (
    "give netfleet AWS credentials (aws configure, AWS_PROFILE, or an instance role): the "
    "standard boto3 chain"
)


def _before(steps: _Steps, cs: CloudSpec) -> None:
    """The checks a study's plan and first acquire make, each a step of its own."""
    from netfleet.cloud.aws.plan import permissions, quotas, safety

    with steps.timed("credentials", CREDENTIALS_FIX) as got:
        got["answered"] = f"sts:GetCallerIdentity: account {safety.account(cs.region)}"
    with steps.timed("leftovers", _destroy_fix(cs.region), "left") as got:
        got["answered"] = _leftovers(cs.region)
    with steps.timed("permissions", "allow them (docs/iam-policy.json)") as got:
        found = permissions.check(cs)
        got.update(_permission_answer(found))
    who = _caller(cs.region)
    with steps.timed("service-linked roles", "") as got:
        spot = cs.model_copy(update={"market": "spot"})
        roles = permissions.service_linked_roles(spot, fargate=True, who=who)
        got.update(_role_answer(roles))
    with steps.timed("quotas", "request an increase (Service Quotas) of the quota named") as got:
        found_q = quotas.check_campaign(cs)
        got.update(_quota_answer(found_q))
    with steps.timed(
        "image",
        "allow ssm:GetParameter on the AL2023 public parameter "
        "(docs/iam-policy.json), or choose another --instance-type",
    ) as got:
        got["answered"] = _image(cs)


def _destroy_fix(region: str) -> str:
    return f"netfleet cloud destroy {CAMPAIGN} --region {region} (again, until it says 0)"


def _leftovers(region: str) -> str:
    """What an earlier selftest left (killed: ``kill -9``), given back through the one release
    path (as ``cloud destroy`` does)."""
    made, unsure = _live()
    gone = {k: made.get(k, 0) + unsure.get(k, 0) for k in {*made, *unsure}}
    _give_back_all(region)
    if not gone:
        return "none: no earlier selftest left anything"
    return "an earlier selftest's resources deleted: " + ", ".join(
        f"{k}={n}" for k, n in sorted(gone.items())
    )


def _caller(region: str) -> str | None:
    from botocore.exceptions import BotoCoreError, ClientError

    from netfleet import aws
    from netfleet.cloud.aws.plan import permissions

    try:
        return permissions.caller_arn(aws.client("sts", region))
    except (BotoCoreError, ClientError, KeyError):
        return None


def _permission_answer(found: list[Any]) -> dict[str, str]:
    denied = [c for c in found if c.outcome == "denied"]
    unchecked = [c for c in found if c.outcome == "unchecked"]
    allowed = len(found) - len(denied) - len(unchecked)
    text = f"{allowed} of {len(found)} actions allowed (dry runs, reads, IAM policy simulator)"
    if unchecked:
        text += "; not checked: " + ", ".join(sorted({c.action for c in unchecked}))
    if denied:
        names = ", ".join(f"{c.action} ({c.detail})" for c in denied)
        return {
            "status": FAIL,
            "answered": f"denied: {names}",
            "fix": "allow "
            + ", ".join(sorted({c.action for c in denied}))
            + " (docs/iam-policy.json is the policy netfleet needs)",
        }
    return {"status": WARN if unchecked else OK, "answered": text}


def _role_answer(roles: list[Any]) -> dict[str, str]:
    """Spot and Fargate studies create AWS's service-linked roles on first use: the selftest's
    on-demand instances need neither, so a role that is missing and may not (or could not be
    shown to) be created warns, with the one-line fix."""
    from netfleet.cloud.aws.plan.permissions import SERVICE_LINKED

    services = dict(SERVICE_LINKED.values())
    parts, fixes = [], []
    for c in roles:
        role = c.action.split("(")[-1].rstrip(")")
        parts.append(f"{role}: {_role_state(c)}")
        if c.outcome != "allowed":
            fixes.append(f"aws iam create-service-linked-role --aws-service-name {services[role]}")
    if not fixes:
        return {"answered": "; ".join(parts)}
    return {
        "status": WARN,
        "answered": "; ".join(parts) + " — a spot or Fargate study needs them (this selftest "
        "does not)",
        "fix": "have an administrator run once: " + "; ".join(fixes) + " (or allow "
        "iam:CreateServiceLinkedRole for those services: docs/iam-policy.json)",
    }


def _role_state(check: Any) -> str:
    """One service-linked role's check in a few words (its detail holds the fix)."""
    if check.outcome == "allowed":
        return "exists" if "exists" in check.detail else "missing; may be created at first use"
    if check.outcome == "denied":
        return "missing, and these credentials may not create it"
    if "does not exist" in check.detail:
        return "missing; whether it may be created is not known (no IAM policy simulator answer)"
    return f"not checked ({check.detail.split(': ', 1)[-1][:80]})"


def _quota_answer(found: Any) -> dict[str, str]:
    rows = "; ".join(
        f"{code} in {region}: needs {need} vCPUs, {running} running, quota {quota:g}"
        if quota is not None
        else f"{code} in {region}: needs {need} vCPUs; the quota could not be read"
        for region, code, need, running, quota in found.rows
    )
    if found.over:
        return {
            "status": FAIL,
            "answered": "; ".join(found.over),
            "fix": "request an increase of the quota named (Service Quotas), or stop "
            "instances that hold it",
        }
    unread = [r for r in found.rows if r[4] is None]
    notes = "; ".join(found.notes)
    return {
        "status": WARN if unread or not found.rows else OK,
        "answered": "; ".join(x for x in (rows, notes) if x),
    }


def _image(cs: CloudSpec) -> str:
    """The AMI a launch of the selftest's type would use (the provisioner's own lookup)."""
    from netfleet import aws
    from netfleet.cloud.aws.acquire import images
    from netfleet.cloud.aws.plan import catalogue

    ec2 = aws.client("ec2", cs.region)
    itype = cs.fleets[0].instance_type
    info = catalogue.describe(ec2, [itype]).get(itype)
    if info is None:
        raise EnvironmentProblem(
            f"{itype} is not offered in {cs.region} (DescribeInstanceTypes)",
            hint="choose another --instance-type or --region",
        )
    if cs.ami:
        return f"{cs.ami} (given)"
    arch = images.architecture(info.architectures)
    ami = images.resolve(ec2, cs.image_family, arch)
    return f"{ami} ({cs.image_family}, {arch}) for {itype}"


# -- the campaign ------------------------------------------------------------------------------
def _campaign(
    steps: _Steps,
    spec_path: Path,
    results: str,
    cs: CloudSpec,
    backing: str,
    **run_kw: Any,
) -> None:
    """The campaign through :func:`netfleet.api.run`; its steps read back from its journal,
    then what AWS still counts of it (given back again if anything is), then the bill."""
    from netfleet.api._campaign import run
    from netfleet.runner.journal import journal_path, read_records
    from netfleet.store import open_root

    root = open_root(results)
    journal = journal_path(root.journal_root, CAMPAIGN)
    before = len(read_records(journal)) if journal.exists() else 0
    cloud_before = len(_cloud_records())
    shown: dict[str, Any] = {}
    t0 = _now()

    def show(table: Tabular) -> None:
        shown.update(table=table, at=_now())

    from botocore.exceptions import BotoCoreError, ClientError

    outcome = None
    error: NetfleetError | None = None
    try:
        outcome = run(spec_path, results=results, max_instances=2, show=show, **run_kw)
    except (BotoCoreError, ClientError) as exc:  # AWS's answer, raw: the step that met it fails
        error = aws_answer(exc)
    except NetfleetError as exc:
        from netfleet.runner.campaign import CampaignInterrupted

        if isinstance(exc, CampaignInterrupted):
            _give_back_all(cs.region)
            raise
        error = exc
    except BaseException:  # Ctrl-C, SIGTERM: nothing stays behind, then stop
        _give_back_all(cs.region)
        raise
    records = read_records(journal)[before:] if journal.exists() else []
    try:
        made = _created(_cloud_records()[cloud_before:])
        _from_journal(steps, records, t0, shown, outcome, error, root, made, cs.region, backing)
    finally:
        _nothing_left(steps, cs.region)
    if outcome is not None:
        with steps.timed("bill", "") as got:
            got["answered"] = _bill(outcome.cloud_cost)


#: AWS error codes → the fix the selftest names (others: AWS's own message)
AWS_FIXES = {
    "RequestLimitExceeded": "AWS throttled this account's EC2 API calls past netfleet's retries: "
    "run the selftest again later, and look for what else calls EC2 on this account",
    "ThrottlingException": "AWS throttled this account's API calls past netfleet's retries: run "
    "the selftest again later",
    "InsufficientInstanceCapacity": "no capacity for the type in the zones tried: another "
    "--instance-type (t3.micro, t2.micro) or --region",
    "VcpuLimitExceeded": "request an increase of the vCPU quota (Service Quotas, L-1216C47A)",
    "UnauthorizedOperation": "allow the action (docs/iam-policy.json is the policy netfleet needs)",
    "AccessDenied": "allow the action (docs/iam-policy.json is the policy netfleet needs)",
}


def aws_answer(exc: Exception) -> EnvironmentProblem:
    """An AWS error no step turned into its own as the account's problem (exit 4), with the
    fix its code calls for."""
    code = str((getattr(exc, "response", None) or {}).get("Error", {}).get("Code", ""))
    return EnvironmentProblem(
        f"AWS answered: {_first_line(exc)}",
        hint=AWS_FIXES.get(
            code,
            "AWS's answer above says what is wrong; run again with --debug "
            "for the call that met it",
        ),
    )


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _at(rec: dict[str, Any]) -> dt.datetime:
    return dt.datetime.fromisoformat(str(rec["at"]).replace("Z", "+00:00"))


def _span(spans: list[tuple[dt.datetime, dt.datetime]]) -> float:
    """Seconds covered by ``spans`` (overlaps counted once)."""
    total, end = 0.0, None
    for a, b in sorted(spans):
        if end is not None and a < end:
            a = end
        if b > a:
            total += (b - a).total_seconds()
            end = b if end is None else max(end, b)
    return total


def _from_journal(
    steps: _Steps,
    records: list[dict[str, Any]],
    t0: dt.datetime,
    shown: dict[str, Any],
    outcome: Any,
    error: NetfleetError | None,
    root: Any,
    made: str,
    region: str,
    backing: str,
) -> None:
    """The campaign's steps from its journal records (this session's): each lease's intent
    and acquired, the session and run records, the releases. ``error``: what ``run`` raised —
    it failed the first step whose record is missing."""
    leases: dict[str, dict[str, Any]] = {}
    for rec in records:
        lid = str(rec.get("lease", ""))
        if rec.get("event") == "host_intent":
            leases[lid] = {
                "kind": rec["resource"].get("kind"),
                "host": rec.get("host"),
                "intent": _at(rec),
            }
        elif rec.get("event") == "host_acquired" and lid in leases:
            leases[lid].update(acquired=_at(rec), id=rec["resource"].get("id"))
        elif rec.get("event") == "host_released" and lid in leases:
            leases[lid].update(
                released=_at(rec), outcome=rec.get("outcome"), detail=rec.get("detail")
            )
    network = [x for x in leases.values() if x["kind"] == "network"]
    instances = [x for x in leases.values() if x["kind"] == "instance"]
    started = [r for r in records if r.get("event") == "run_started"]
    finished = [r for r in records if r.get("event") == "run_finished"]

    def fail(name: str, start: dt.datetime) -> None:
        assert error is not None
        seconds = max(0.0, (_now() - start).total_seconds())
        steps.add(
            Step(name, FAIL, seconds, error.message, error.hint or "", int(error.exit_status))
        )
        raise _Stop

    # plan and guards: the estimate, --max-cost, the quota per wave, the confirmation, the
    # results root's write probe — until the network's lease
    first = network[0]["intent"] if network else None
    estimate = _estimate(shown.get("table"))
    if first is None:
        if error is not None:
            fail("plan and guards", t0)
        steps.add(
            Step(
                "plan and guards",
                FAIL,
                None,
                "run made no network",
                "report this with --debug output",
                int(ExitStatus.ERROR),
            )
        )
        raise _Stop
    steps.add(Step("plan and guards", OK, (first - t0).total_seconds(), estimate))
    net = network[0]
    if "acquired" not in net:
        fail("network", net["intent"])
    steps.add(
        Step(
            "network",
            OK,
            (net["acquired"] - net["intent"]).total_seconds(),
            made or "made (vpc, subnet, gateway, route table, security group, key pair)",
        )
    )
    waiting = [x for x in instances if "acquired" not in x]
    if waiting or not instances:
        fail("launch", waiting[0]["intent"] if waiting else net["acquired"])
    spans = [(x["intent"], x["acquired"]) for x in instances]
    launched = ", ".join(f"{x['host']} {x.get('id')}" for x in instances)
    steps.add(Step("launch", OK, _span(spans), f"RunInstances, running: {launched}"))
    # readiness: from each instance's launch to the runner's next step with it (the session
    # after the first wave's preflight, or its run)
    marks = sorted(_at(r) for r in records if r.get("event") in ("session", "run_started"))
    ready = []
    for x in instances:
        after = [m for m in marks if m >= x["acquired"]]
        if not after:
            fail("user-data and readiness", x["acquired"])
        ready.append((x["acquired"], after[0]))
    steps.add(Step("user-data and readiness", OK, _span(ready), READY[backing]))
    if not started:
        fail("iperf3", max(b for _, b in ready))
    if not finished:
        fail("iperf3", _at(started[0]))
    run_s = (_at(finished[0]) - _at(started[0])).total_seconds()
    env = outcome.result.envelopes[0] if outcome is not None and outcome.result.envelopes else None
    status = str(finished[0].get("status"))
    if status != "ok" or env is None:
        reason = env.reason if env is not None else status
        steps.add(
            Step(
                "iperf3",
                FAIL,
                run_s,
                f"{status}: {reason}",
                "the run's reason above; the instances came up, so the account is fine "
                "for launching",
                int(EXIT_STATUSES["measurement"]),
            )
        )
        raise _Stop
    from netfleet.api._campaign import run_summary

    rate = f"received (goodput, client → server): {run_summary(env)}"
    steps.add(Step("iperf3", OK, run_s, f"{rate} ({env.run_id})"))
    with steps.timed("result", "check that the results root is writable and readable") as got:
        path = outcome.result.paths[0]
        back = root.read(path)
        if back.get("run_id") != env.run_id:
            raise EnvironmentProblem(f"{path} reads back another run ({back.get('run_id')})")
        got["answered"] = f"stored and read back: {path}"
    releases = [x for x in leases.values() if "released" in x]
    if error is not None:
        fail("release", _at(finished[0]))
    bad = [x for x in releases if x.get("outcome") not in ("released", "gone")]
    span = (max(x["released"] for x in releases) - _at(finished[0])).total_seconds()
    text = ", ".join(f"{x['host']} {x.get('outcome')}" for x in releases)
    if bad or len(releases) < len(leases):
        steps.add(
            Step(
                "release",
                FAIL,
                span,
                text or "nothing released",
                _destroy_fix(region),
                int(EXIT_STATUSES["left"]),
            )
        )
        raise _Stop
    steps.add(Step("release", OK, span, text))


#: what readiness means, by backing
READY = {
    "ssh": "each instance's sshd answered with its pinned host key, cloud-init finished "
    "(user-data), iperf3 found",
    "sim": "backing sim: lab namespaces up in place of the instances (no user-data ran), "
    "iperf3 found",
}


def _bill(cost: str | None) -> str:
    """The cost line's what-was-held, its total and the estimate before launch."""
    if not cost:
        return "no bill: nothing was launched"
    keep = ("cost:", "total", "estimated before launch")
    return "; ".join(p for p in cost.split("; ") if p.startswith(keep)) or cost


def _estimate(table: Tabular | None) -> str:
    if table is None:
        return "no estimate shown"
    notes = [n for n in table.notes if n.startswith(("estimated cost", "2 instances"))]
    return "; ".join(notes) or (table.title or "estimated")


def _cloud_records() -> list[dict[str, Any]]:
    """The records of the campaign's intent journal (``netfleet.cloud.aws.journal``), raw."""
    from netfleet.api._cloud import state_root
    from netfleet.cloud.aws.journal import Journal
    from netfleet.journalfile import read_journal

    path = Journal(state_root(), CAMPAIGN).path
    return read_journal(path).records if path.exists() else []


def _created(records: list[dict[str, Any]]) -> str:
    """What AWS answered to each network create of this session (kind and id), from the
    campaign's intent journal."""
    from netfleet.cloud.aws.journal import KINDS

    network = set(KINDS) - {"instance", "iam-role", "log-group"}
    made = [
        f"{r['kind']} {r['id']}"
        for r in records
        if r.get("op") == "created" and r.get("kind") in network
    ]
    return ", ".join(made)


def _nothing_left(steps: _Steps, region: str) -> None:
    """``cloud destroy`` of the campaign, through the one release path: what AWS still holds of
    it (this installation's, by its journal and tags) is deleted and counted again — every kind
    must read 0. Anything the run's own release left makes this step warn."""
    with steps.timed("nothing left", _destroy_fix(region), "left") as got:
        made, unsure = _live()
        done = _give_back_all(region)
        kinds = ", ".join(sorted(done))
        held = {k: made.get(k, 0) + unsure.get(k, 0) for k in {*made, *unsure}}
        if held:
            got["answered"] = (
                f"the campaign's journal still held {_counts(held)}"
                + (
                    f" ({_counts(unsure)} a create whose answer was never recorded)"
                    if unsure
                    else ""
                )
                + ": found by journal and tags and given back; 0 of every kind remain"
            )
            got["status"] = WARN if made else OK
            return
        got["answered"] = f"0 of every kind ({kinds})"


def _live() -> tuple[dict[str, int], dict[str, int]]:
    """The campaign's resources its intent journal holds as not deleted, by kind: those AWS
    answered with an id, and those whose create was never answered (killed, or it failed)."""
    from collections import Counter

    from netfleet.api._cloud import state_root
    from netfleet.cloud.aws.journal import Journal

    journal = Journal(state_root(), CAMPAIGN)
    live = journal.read().live() if journal.exists() else []
    made = Counter(r.kind for r in live if r.id)
    return dict(made), dict(Counter(r.kind for r in live if not r.id))


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k}={n}" for k, n in sorted(counts.items()) if n)


def _give_back_all(region: str) -> dict[str, int]:
    """Everything of the campaign in ``region``, given back and counted: ``cloud destroy``
    (it raises when anything remains)."""
    from netfleet.api._cloud import cloud_destroy

    return cloud_destroy(CAMPAIGN, region=[region])
