"""The guards every launch passes before anything exists, on any cloud: ``netfleet run`` and
``netfleet cloud up`` call them for every provider that owns billable machines.

* :func:`limits` — refuse a launch whose cost is unknown (a cloud that cannot price, or a
  machine type without a price: the priced part is named), above ``--max-cost``, or holding
  more than ``--max-instances`` at once. ``--yes`` never lifts a limit.
* :func:`quota` — refuse a launch the account's limits would stop half-way.
* :func:`campaign` — both, for each cloud of a campaign whose provider is a
  :class:`~netfleet.cloud.lifecycle.CloudProvider`, from the cloud's own ``price`` and ``quota``
  (:mod:`netfleet.cloud.seam`): ``netfleet run`` of every cloud, AWS's included (its price is
  the plan the run follows: waves, spot, the bill's other lines), and ``cloud up`` of another
  cloud's campaign. A launch-only AWS file (``cloud up``) reaches the same :func:`limits`
  through ``netfleet.cloud.aws.plan.costs.guard``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from netfleet.cloud.seam import Price, Quota
from netfleet.errors import EnvironmentProblem, InputError

if TYPE_CHECKING:
    from netfleet.spec.models import CampaignSpec


def _usd(amount: float) -> str:
    return f"${amount:.2f}" if amount >= 0.01 or amount == 0 else f"${amount:.6f}"


def limits(price: Price, instances: int, *, max_cost: float, max_instances: int) -> None:
    """Refuse (InputError, exit 2) above ``max_instances`` (``instances``: held at once), with
    an unknown price, or above ``max_cost`` USD."""
    if instances > max_instances:
        at_once = "" if price.machines is None else " at once"
        raise InputError(
            f"{instances} instances{at_once} exceed --max-instances {max_instances}",
            hint="raise --max-instances (--yes confirms a launch; it does not lift a limit)",
        )
    if price.usd is None:
        what = ", ".join(price.unknown) or "the machines"
        part = "" if price.subtotal is None else f" (the priced part: {_usd(price.subtotal)})"
        raise InputError(
            f"no price for {what}: the cost cannot be bounded{part}",
            hint=f"give the price ({price.source}); a cloud that cannot price does not launch; "
            "--yes does not lift the limit",
        )
    if price.usd > max_cost:
        raise InputError(
            f"estimated {_usd(price.usd)} exceeds --max-cost ${max_cost:.2f}",
            hint="raise --max-cost (--yes confirms a launch; it does not lift a limit)",
        )


def quota(found: Quota) -> None:
    """Refuse (EnvironmentProblem, exit 4) a launch that would break an account limit."""
    if found.over:
        raise EnvironmentProblem(
            "the machines would exceed the account's quota: " + "; ".join(found.over),
            hint="request an increase of the quota named (AWS: Service Quotas), or launch fewer "
            "or smaller machines",
        )


def campaign(
    spec: CampaignSpec,
    seconds: Callable[[], float],
    *,
    max_cost: float,
    max_instances: int,
    say: Callable[[str], None],
) -> None:
    """:func:`limits` and :func:`quota` for each cloud the campaign's hosts use (a host kind
    whose provider is a ``CloudProvider``), the machines held for ``seconds()`` (the plan's wall
    time, asked only when a cloud is there) — or as the cloud's own plan holds them
    (``Price.machines`` at once); the price and the quota's notes go to ``say``. Hosts of other
    kinds (local, netns, lab, ssh) cost nothing here."""
    from netfleet.cloud.lifecycle import CloudProvider
    from netfleet.hosts.provider import HostRequest
    from netfleet.hosts.registry import get_provider

    kinds: dict[str, list[HostRequest]] = {}
    for name, host in spec.hosts.items():
        kinds.setdefault(host.kind, []).append(HostRequest(name, host))
    held: float | None = None
    for kind, requests in sorted(kinds.items()):
        provider = get_provider(kind)
        if not isinstance(provider, CloudProvider):
            continue
        cloud = provider.cloud
        held = seconds() if held is None else held
        price = cloud.price(requests, held / 3600)
        cost = "unknown" if price.usd is None else _usd(price.usd)
        at_once = len(requests) if price.machines is None else price.machines
        how = (
            f"for {held / 60:.1f} min"
            if price.machines is None
            else f"in turns ({at_once} at once) within {held / 60:.1f} min"
        )
        say(f"{cloud.name}: {len(requests)} machines {how}: {cost} ({price.source})")
        found = cloud.quota(requests)
        for note in found.notes:
            say(f"note: {note}")
        limits(price, at_once, max_cost=max_cost, max_instances=max_instances)
        quota(found)
