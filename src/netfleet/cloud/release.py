"""Release: the one path by which cloud resources are given back — :func:`give_back`.

Every way a campaign's machines and networks go back goes through it, for every cloud:

* a host whose last run ended (``HostPool.release_early``), every host when the campaign ends,
  fails or is interrupted (``HostPool.release``), and an earlier session's leases on
  ``netfleet run`` / ``--resume`` after ``kill -9`` (``release_leftovers``) — all via
  :meth:`netfleet.cloud.lifecycle.CloudProvider.release_lease` → ``give_back(cloud,
  Scope.of_lease(lease))``;
* ``netfleet cloud destroy`` and a ``cloud up`` that failed or was asked to ``--release``:
  ``give_back(cloud, Scope.of_campaign(...))``;
* ``netfleet cloud reap --delete`` and the reap before every acquire:
  ``give_back(cloud, Scope.expired_before(...))``.

``give_back`` asks the cloud (the seam's ``release``) and then holds it to its answer: the
outcome must be ``released`` or ``gone``, and whatever the cloud still counts afterwards is an
error naming it — a release is verified, never assumed (PerfKitBenchmarker's ``_Delete`` then
``_Exists``).
"""

from __future__ import annotations

from netfleet.cloud.seam import Cloud, Released, Scope
from netfleet.errors import EnvironmentProblem
from netfleet.hosts.provider import SETTLED


async def give_back(cloud: Cloud, scope: Scope) -> Released:
    """Release what ``scope`` names through ``cloud``, then verify nothing of it remains."""
    done = await cloud.release(scope)
    if done.outcome not in SETTLED:
        raise EnvironmentProblem(
            f"{cloud.name}: release of {_what(scope)} ended {done.outcome!r}",
            hint="run it again; the journal keeps what is left for a later session",
        )
    left = {kind: n for kind, n in done.remaining.items() if n}
    if left:
        raise EnvironmentProblem(
            f"{cloud.name}: release of {_what(scope)} left resources behind: "
            + ", ".join(f"{kind}={n}" for kind, n in sorted(left.items())),
            hint="run `netfleet cloud destroy CAMPAIGN` again; check the console if it persists",
        )
    return done


def _what(scope: Scope) -> str:
    if scope.lease is not None:
        return f"lease {scope.lease.id} (host {scope.lease.host})"
    if scope.campaign is not None:
        return f"campaign {scope.campaign!r}"
    return "the expired campaigns"
