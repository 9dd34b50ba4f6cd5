"""``cloud plan``, ``up``, ``destroy``, ``reap`` and ``prices``: AWS resources of a campaign,
tag-verified, with the cost and quota guards before anything is launched."""

from __future__ import annotations

import datetime as dt
import os
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from netfleet.cloud.aws.acquire.fargate import FargateCampaign
    from netfleet.cloud.aws.acquire.provision import CloudHost
    from netfleet.cloud.aws.campaign import CloudSpec
    from netfleet.cloud.aws.release.teardown import Expired
    from netfleet.cloud.seam import Released, Scope
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
    """The machines :func:`cloud_up` launched."""

    campaign: str
    hosts: list[CloudHost]
    known_hosts: Path
    expires_at: dt.datetime
    #: torn down again (``release``)
    released: bool = False


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
    """Show the estimate (``show``) before anything exists, refuse above ``max_cost`` USD /
    ``max_instances``, an unknown price, a plan longer than the dead-man switch, or the
    account's vCPU quota — ``yes`` confirms, it never lifts a limit — reap expired leftovers,
    then launch the campaign's machines — torn down on any error, Ctrl-C or SIGTERM.
    ``release``: tear down right after (a check that the account can launch and clean up).
    ``say`` gets the quota notes; on a real AWS endpoint also the account, regions, resources
    and estimate, and the launch needs ``yes`` or ``ask(question)`` answering True
    (:mod:`netfleet.cloud.aws.plan.safety`)."""
    from netfleet.cloud.aws.acquire.provision import Provisioner
    from netfleet.cloud.aws.plan import costs, quotas, safety
    from netfleet.cloud.seam import Scope

    cs = load_cloud_spec(spec)
    root = state_root(state_dir)
    priced = costs.priced_plan(cs, root)
    if show is not None:
        show(priced.table)  # the estimate, before any resource exists
    costs.guard(priced.estimate, max_cost, max_instances, yes)
    quotas.enforce(cs, say or (lambda _line: None))
    safety.confirm(cs, priced.estimate, yes=yes, ask=ask, say=say or (lambda _line: None))
    _give_back(root, Scope.expired_before(dt.datetime.now(dt.UTC), cs.regions), poll_s=1.0)
    prov = Provisioner(cs, root)
    campaign = Scope.of_campaign(cs.campaign, cs.regions)
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _sigterm_as_interrupt) if main else None
    try:
        hosts = prov.acquire()
    except BaseException:
        # error, Ctrl-C or SIGTERM: tear down before going; a SIGKILL skips this, and then
        # `cloud destroy` / `cloud reap` / the instances' own shutdown timer finish the job
        _give_back(root, campaign)
        raise
    finally:
        if main:
            signal.signal(signal.SIGTERM, previous)
    up = CloudUp(cs.campaign, hosts, prov.journal.dir / "known_hosts", prov.expires_at)
    if release:
        _give_back(root, campaign)
        up.released = True
    return up


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
