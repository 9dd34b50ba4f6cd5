"""``cloud plan``, ``up``, ``destroy``, ``reap`` and ``prices``: AWS resources of a campaign,
tag-verified, with the cost and quota guards before anything is launched."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from netfleet.cloud.aws.acquire.fargate import FargateCampaign
    from netfleet.cloud.aws.campaign import CloudSpec
    from netfleet.cloud.aws.release.teardown import Expired
    from netfleet.cloud.seam import Cloud, Machine, Released, Scope
    from netfleet.hosts.provider import HostRequest, MemoryLeaseLog
    from netfleet.pricetable import PriceTable
    from netfleet.tabular import Tabular

#: where intent journals and keys live unless ``state_dir`` says (``netfleet.cloud.journal``)
CLOUD_DIR_ENV = "NETFLEET_CLOUD_DIR"


def state_root(state_dir: str | os.PathLike[str] | None = None) -> Path:
    """The cloud state directory: ``state_dir``, else ``$NETFLEET_CLOUD_DIR``, else
    ``~/.local/state/netfleet/cloud``."""
    from netfleet.cloud.journal import default_root

    return Path(state_dir) if state_dir is not None else default_root()


def load_cloud_spec(spec: str | os.PathLike[str]) -> CloudSpec:
    """A cloud campaign file (YAML), validated: errors name the file, line and field."""
    from netfleet.cloud.aws.campaign import CloudSpec
    from netfleet.spec.yamlsrc import load_model

    return load_model(CloudSpec, Path(spec), what="cloud campaign")


def cloud_plan(spec: str | os.PathLike[str], *, state_dir: Path | None = None) -> Tabular:
    """Estimated cost and instance count of a cloud campaign file (nothing is launched); a
    file with a ``fargate:`` block (``examples/fargate-tiers.cloud.yaml``) gets its tiers'
    Fargate price in a note."""
    from netfleet.cloud.aws.plan import costs, prices
    from netfleet.spec.yamlsrc import load_yaml, validate_model

    data, lines = load_yaml(Path(spec))
    if not (isinstance(data, dict) and "fargate" in data):
        return costs.priced_plan(load_cloud_spec(spec), state_root(state_dir)).table
    from netfleet.cloud.aws.acquire.fargate import FargateCampaign

    cs = validate_model(FargateCampaign, data, lines, Path(spec), what="cloud campaign")
    root = state_root(state_dir)
    table = costs.priced_plan(cs, root).table
    table.notes.append(fargate_note(cs, prices.load(root)))
    return table


def fargate_note(cs: FargateCampaign, table: PriceTable) -> str:
    """The Fargate tiers of a campaign priced at its region's Fargate rates (per vCPU-hour and
    GB-hour of the price table), over its ``duration_minutes``; not in the EC2 total."""
    tiers = cs.fargate.tiers
    vcpus = sum(t.cpu for t in tiers) / 1024
    gb = sum(t.memory for t in tiers) / 1024
    what = f"fargate: {len(tiers)} tier task(s), {vcpus:g} vCPU and {gb:g} GB in all"
    rates = table.fargate.get(cs.region)
    if not rates:
        return f"{what}: no Fargate price for {cs.region} in the table (netfleet cloud prices)"
    hourly = vcpus * rates["vcpu_hour"] + gb * rates["gb_hour"]
    text = f"{what}: ${hourly:.4f}/hour at {cs.region}'s Fargate price (table of {table.as_of})"
    if cs.duration_minutes:
        text += f", ${hourly * cs.duration_minutes / 60:.2f} over {cs.duration_minutes:g} min"
    return text + " if all run at once — not in the EC2 total above"


@dataclass
class CloudUp:
    """The machines :func:`cloud_up` launched, one per host request (the seam's ``Machine``:
    request, lease, and the cloud's own record — an EC2 instance for AWS)."""

    campaign: str
    machines: list[Machine]
    #: when the machines power themselves off (the dead-man switch); None: the cloud has none
    expires_at: dt.datetime | None = None
    #: torn down again (``release``)
    released: bool = False

    @property
    def hosts(self) -> list[Any]:
        """Each machine's record, as its cloud keeps it (AWS: ``CloudHost``)."""
        return [m.detail for m in self.machines]

    def table(self) -> Tabular:
        """One row per machine: an EC2 instance's id, type, place and addresses; another
        cloud's machine by host, cloud, lease and record."""
        from netfleet.cloud.aws.acquire.provision import CloudHost
        from netfleet.tabular import Tabular

        notes = (
            [] if self.expires_at is None else [f"expires at {self.expires_at:%Y-%m-%dT%H:%M:%SZ}"]
        )
        ec2 = [h for h in self.hosts if isinstance(h, CloudHost)]
        if ec2 and len(ec2) == len(self.machines):
            rows = [[h.name, h.instance_id, h.instance_type, h.region, h.az, h.private_ip,
                     h.public_ip] for h in ec2]  # fmt: skip
            return Tabular(
                ["host", "instance", "type", "region", "zone", "private_ip", "public_ip"],
                rows,
                title=f"campaign {self.campaign}",
                notes=[f"known_hosts pinned: {ec2[0].known_hosts}", *notes],
            )
        rows = [
            [m.request.name, m.lease.provider, m.lease.id, str(m.detail)] for m in self.machines
        ]
        return Tabular(
            ["host", "cloud", "lease", "machine"],
            rows,
            title=f"campaign {self.campaign}",
            notes=notes,
        )


def _sigterm_as_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def cloud_up(
    spec: str | os.PathLike[str],
    *,
    state_dir: Path | None = None,
    max_cost: float = 5.0,
    max_instances: int = 10,
    yes: bool = False,
    release: bool = False,
    say: Callable[[str], None] | None = None,
    show: Callable[[Tabular], None] | None = None,
    ask: Callable[[str], bool] | None = None,
) -> CloudUp:
    """Launch a campaign's machines through its cloud's ``acquire`` (the provider seam,
    :mod:`netfleet.cloud.seam`: each machine journalled before it exists), after the guards —
    torn down, lease by lease through :func:`netfleet.cloud.release.give_back`, on any error,
    Ctrl-C or SIGTERM. Nothing is bootstrapped or measured.

    ``spec`` is an AWS launch-only file (``*.cloud.yaml``): the estimate goes to ``show``
    before anything exists; refused above ``max_cost`` USD / ``max_instances``, with an unknown
    price or a plan longer than the dead-man switch (AWS's plan reaches
    :func:`netfleet.cloud.guard.limits`), or over the account's vCPU quota
    (:func:`netfleet.cloud.guard.quota`); on a real AWS endpoint the account, regions,
    resources and estimate go to ``say`` and the launch needs ``yes`` or ``ask(question)``
    answering True (:mod:`netfleet.cloud.aws.plan.safety`). Or ``spec`` is a campaign spec
    whose hosts are another cloud's machines: :func:`netfleet.cloud.guard.campaign`, the guard
    ``run`` applies, asks that cloud for its price over the plan's wall time and its quota (a
    cloud that cannot price does not launch). ``yes`` confirms, it never lifts a limit.
    ``release``: tear down right after (a check that the account can launch and clean up)."""
    from netfleet.cloud import faults
    from netfleet.hosts.provider import MemoryLeaseLog

    tell = say or (lambda _line: None)
    root = state_root(state_dir)
    if _launch_only(Path(spec)):
        cloud, requests, campaign = _aws_launch(
            Path(spec), root, max_cost, max_instances, yes, tell, show, ask
        )
    else:
        cloud, requests, campaign = _cloud_launch(Path(spec), max_cost, max_instances, tell)
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _sigterm_as_interrupt) if main else None
    log = MemoryLeaseLog()
    try:
        machines = asyncio.run(cloud.acquire(requests, log))
        faults.point("after:acquire")
    except BaseException:
        # error, Ctrl-C or SIGTERM: tear down before going; a SIGKILL skips this, and then
        # `cloud destroy` / `cloud reap` / the instances' own shutdown timer finish the job
        _release_leases(cloud, log)
        raise
    finally:
        if main:
            signal.signal(signal.SIGTERM, previous)
    up = CloudUp(campaign, machines, getattr(cloud, "expires_at", None))
    if release:
        _release_leases(cloud, log)
        up.released = True
    return up


def _launch_only(spec: Path) -> bool:
    """An AWS launch-only file (``campaign``, ``fleets``, …), not a campaign spec (``hosts``,
    ``tests``, a ``cloud:`` block)."""
    from netfleet.spec.yamlsrc import load_yaml

    data, _ = load_yaml(spec)
    return not (isinstance(data, dict) and {"hosts", "tests", "cloud"} & set(data))


def _aws_launch(
    spec: Path,
    root: Path,
    max_cost: float,
    max_instances: int,
    yes: bool,
    say: Callable[[str], None],
    show: Callable[[Tabular], None] | None,
    ask: Callable[[str], bool] | None,
) -> tuple[Cloud, list[HostRequest], str]:
    """AWS's guards on a launch-only file (its fuller plan: spot, the bill's other lines, the
    dead-man switch; the limits and quota of :mod:`netfleet.cloud.guard`), then AWS behind the
    seam and one ``kind: aws`` request per instance."""
    from netfleet.cloud.aws.campaign import host_requests
    from netfleet.cloud.aws.plan import costs, quotas, safety
    from netfleet.cloud.aws.provider import AwsCloud

    cs = load_cloud_spec(spec)
    priced = costs.priced_plan(cs, root)
    if show is not None:
        show(priced.table)  # the estimate, before any resource exists
    costs.guard(priced.estimate, max_cost, max_instances, yes)
    quotas.enforce(cs, say)
    safety.confirm(cs, priced.estimate, yes=yes, ask=ask, say=say)
    return AwsCloud(root), host_requests(cs), cs.campaign


def _cloud_launch(
    spec: Path, max_cost: float, max_instances: int, say: Callable[[str], None]
) -> tuple[Cloud, list[HostRequest], str]:
    """A campaign spec's machines on one owning cloud, held to :func:`netfleet.cloud.guard.campaign`
    (``run``'s guard) over the plan's wall time."""
    from netfleet.api._spec import plan_of
    from netfleet.cloud import guard
    from netfleet.cloud.lifecycle import CloudProvider
    from netfleet.errors import InputError
    from netfleet.hosts.provider import HostRequest
    from netfleet.hosts.registry import get_provider
    from netfleet.spec import load_spec

    campaign = load_spec(spec)
    kinds = sorted({h.kind for h in campaign.hosts.values()})
    owning = [k for k in kinds if isinstance(get_provider(k), CloudProvider)]
    if "aws" in owning:
        raise InputError(
            f"{spec}: cloud up takes AWS machines from a launch-only file",
            hint="give its *.cloud.yaml (examples/aws-cheatsheet.cloud.yaml), or `netfleet run` "
            "the campaign (it launches, measures and releases)",
        )
    if len(owning) != 1:
        found = ", ".join(owning) or f"none (kinds: {', '.join(kinds)})"
        raise InputError(
            f"{spec}: cloud up launches the machines of one cloud; the campaign's clouds: {found}",
            hint="hosts of a kind whose provider owns machines (a cloud: docs/extending.md)",
        )
    guard.campaign(
        campaign,
        lambda: plan_of(campaign).estimated_seconds,
        max_cost=max_cost,
        max_instances=max_instances,
        say=say,
    )
    provider = get_provider(owning[0])
    assert isinstance(provider, CloudProvider)
    requests = [HostRequest(n, h) for n, h in campaign.hosts.items() if h.kind == owning[0]]
    return provider.cloud, requests, campaign.campaign


def _release_leases(cloud: Cloud, log: MemoryLeaseLog) -> None:
    """Give back every lease ``cloud.acquire`` recorded, the last first (machines, then the
    network they joined), each through :func:`netfleet.cloud.release.give_back`; the first
    failure is raised after every lease was tried."""
    from netfleet.cloud.release import give_back
    from netfleet.cloud.seam import Scope

    async def every() -> None:
        failed: list[BaseException] = []
        for lease in reversed(list(log.leases.values())):
            try:
                await give_back(cloud, Scope.of_lease(lease))
            except Exception as exc:  # the others are still given back
                failed.append(exc)
        if failed:
            raise failed[0]

    asyncio.run(every())


def cloud_destroy(
    campaign: str, *, state_dir: Path | None = None, region: list[str] | None = None
) -> dict[str, int]:
    """Delete everything of ``campaign``, from its intent journal alone (``region``: also
    sweep these by tag); fails if anything remains. Returns what remains afterwards, by kind
    (every count 0). Like every release, through :func:`netfleet.cloud.release.give_back`."""
    from netfleet.cloud.seam import Scope

    return _give_back(state_root(state_dir), Scope.of_campaign(campaign, region or ())).remaining


def cloud_reap(
    *,
    state_dir: Path | None = None,
    region: list[str] | None = None,
    delete: bool = False,
    all_owners: bool = False,
) -> list[Expired]:
    """This installation's resources whose expires-at tag has passed, in every region used
    (and ``region``); removed only with ``delete`` (through
    :func:`netfleet.cloud.release.give_back`, as every release); ``all_owners``: every
    installation's."""
    from netfleet.cloud.aws.release import teardown
    from netfleet.cloud.seam import Scope

    now = dt.datetime.now(dt.UTC)
    root = state_root(state_dir)
    if not delete:  # a look, not a release
        return teardown.reap(root, region or [], now, delete=False, all_owners=all_owners)
    scope = Scope.expired_before(now, region or (), all_owners=all_owners)
    return list(_give_back(root, scope, poll_s=1.0).found)


def _give_back(root: Path, scope: Scope, poll_s: float = 0.2) -> Released:
    """Release ``scope`` on AWS through the one release path
    (:func:`netfleet.cloud.release.give_back`), from synchronous code."""
    import asyncio

    from netfleet.cloud.aws.provider import AwsCloud
    from netfleet.cloud.release import give_back

    return asyncio.run(give_back(AwsCloud(root, poll_s=poll_s), scope))


@dataclass
class CloudPrices:
    """The price table in use, and a warning when it is old."""

    table: PriceTable
    stale: str | None


def cloud_prices(*, state_dir: Path | None = None) -> CloudPrices:
    """The dated EC2/Fargate price table in use (a refreshed copy, else the shipped one)."""
    from netfleet.cloud.aws.plan import prices

    t = prices.load(state_root(state_dir))
    return CloudPrices(t, prices.stale_warning(t))


@dataclass
class PricesRefreshed:
    """What :func:`cloud_prices_refresh` wrote, and the prices it did not find."""

    table: PriceTable
    path: Path
    missing: list[str]


def cloud_prices_refresh(
    *,
    state_dir: Path | None = None,
    region: list[str] | None = None,
    instance_type: list[str] | None = None,
) -> PricesRefreshed:
    """Update the price table from the AWS Pricing API (needs network and
    pricing:GetProducts); ``region``: default the table's; ``instance_type``: also price these
    (any type, not only the table's), each price dated."""
    from netfleet import aws
    from netfleet.cloud.aws.plan import prices

    root = state_root(state_dir)
    t = prices.load(root)
    regions = region or sorted(t.ec2)
    wanted = sorted({ty for r in t.ec2.values() for ty in r} | set(instance_type or []))
    new, missing = prices.refresh(
        aws.client("pricing", "us-east-1"), t, regions, wanted, dt.date.today()
    )
    return PricesRefreshed(new, prices.save(new, root), missing)
