"""Host leases in the campaign journal: what owning providers created, so it is released even
after the controller died.

Three record types, in their own section here (``runner/journal.py`` ignores them):

- ``host_intent`` — ``lease``, ``provider``, ``host``, ``resource``: a provider is about to
  create ``resource``. Written (and fsynced) BEFORE anything is created.
- ``host_acquired`` — ``lease``, ``resource``: what was created (e.g. with an instance id).
- ``host_released`` — ``lease``, ``outcome`` (``released``/``gone`` settle it; ``failed`` and
  anything else keep it open), ``detail``.

A lease is open from its intent until a settling release. Every session — ``--resume`` or
not — releases the open leases of earlier sessions before it acquires its own hosts.
"""

from __future__ import annotations

from typing import Any

from netfleet.hosts.provider import SETTLED, Lease, new_lease_id
from netfleet.runner.journal import Journal, read_records


def open_leases(records: list[dict[str, Any]]) -> dict[str, Lease]:
    """Leases recorded and not settled, by id, in the order they were recorded. A record of the
    wrong shape (the journal may be forged) is skipped."""
    leases: dict[str, Lease] = {}
    for rec in records:
        try:
            _apply_lease(leases, rec)
        except (TypeError, ValueError):
            continue
    return leases


def _apply_lease(leases: dict[str, Lease], rec: dict[str, Any]) -> None:
    event, lid = rec.get("event"), str(rec.get("lease", ""))
    if event == "host_intent" and lid:
        resource = dict(rec.get("resource", {}))
        leases[lid] = Lease(lid, str(rec.get("provider")), str(rec.get("host")), resource)
    elif event == "host_acquired" and lid in leases:
        old = leases[lid]
        leases[lid] = Lease(lid, old.provider, old.host, dict(rec.get("resource", {})))
    elif event == "host_released" and rec.get("outcome") in SETTLED:
        leases.pop(lid, None)


class JournalLeases:
    """The campaign journal as a LeaseLog."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal

    def open_leases(self) -> dict[str, Lease]:
        return open_leases(read_records(self.journal.path))

    def intent(self, provider: str, host: str, resource: dict[str, Any]) -> Lease:
        lease = Lease(new_lease_id(), provider, host, dict(resource))
        self.journal.append(
            "host_intent", lease=lease.id, provider=provider, host=host, resource=lease.resource
        )
        return lease

    def acquired(self, lease: Lease) -> None:
        self.journal.append("host_acquired", lease=lease.id, resource=lease.resource)

    def released(self, lease: Lease, outcome: str, detail: str | None = None) -> None:
        self.journal.append(
            "host_released", lease=lease.id, host=lease.host, outcome=outcome, detail=detail
        )
