"""A test's topology: which hosts meet which, instead of naming one client and one server.

- ``pairs``: consecutive hosts form pairs, client then server: ``[a, b, c, d]`` → a→b, c→d.
- ``star``: ``center`` is the server, every other host a client (one big server, many clients).
- ``mesh``: every ordered pair of hosts, a→b and b→a, scheduled in rounds of the circle method.

The plan layer (``netfleet.plan.topology``) turns a topology into client/server pairs.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from pydantic import Field, model_validator

from netfleet.spec.common import _Strict


class Topology(_Strict):
    """Which hosts a test runs between."""

    kind: Literal["pairs", "star", "mesh"] = Field(
        description="pairs: consecutive hosts pair up (client, server); star: center serves every "
        "other host; mesh: every ordered pair, in rounds"
    )
    hosts: list[str] | Literal["all"] = Field(
        description="host names, or 'all' for every host of the campaign (in the order written)"
    )
    center: str | None = Field(None, description="star only: the server every client tests with")

    @model_validator(mode="after")
    def _shape(self) -> Topology:
        named = self.hosts if isinstance(self.hosts, list) else []
        twice = sorted({h for h in named if named.count(h) > 1})
        if twice:
            raise ValueError(f"topology lists {twice} more than once: list each host once")
        if self.kind == "star" and self.center is None:
            raise ValueError("a star needs 'center': the host that serves every client")
        if self.kind != "star" and self.center is not None:
            raise ValueError(f"'center' is for a star, not {self.kind}: remove it")
        if self.kind == "pairs":
            if self.hosts == "all":
                raise ValueError("pairs need an explicit order: list the hosts, client then server")
            if len(named) < 2 or len(named) % 2:
                raise ValueError(
                    f"pairs take an even number of hosts (client, server, client, server…), "
                    f"got {len(named)}"
                )
        if self.kind == "mesh" and self.hosts != "all" and len(named) < 2:
            raise ValueError("a mesh needs at least two hosts")
        if self.kind == "star" and self.hosts != "all" and not set(named) - {self.center}:
            raise ValueError("a star needs at least one client besides its center")
        return self

    def members(self, campaign_hosts: list[str]) -> list[str]:
        """The hosts taking part, in order (for a star: the clients, without the center)."""
        names = list(campaign_hosts) if self.hosts == "all" else list(self.hosts)
        return [h for h in names if h != self.center]


class _RoleFields(Protocol):
    @property
    def client(self) -> str | None: ...
    @property
    def server(self) -> str | None: ...
    @property
    def matrix(self) -> dict[str, list[Any]]: ...
    @property
    def include(self) -> list[dict[str, Any]]: ...
    @property
    def exclude(self) -> list[dict[str, Any]]: ...


def check_topology(test: str, topology: Topology, fields: _RoleFields, hosts: list[str]) -> None:
    """A test with a topology names no client or server elsewhere, and only known hosts."""
    for role in ("client", "server"):
        where = [
            place
            for place, present in (
                (f"'{role}:'", getattr(fields, role) is not None),
                (f"matrix.{role}", role in fields.matrix),
                (f"include ({role})", any(role in c for c in fields.include)),
                (f"exclude ({role})", any(role in c for c in fields.exclude)),
            )
            if present
        ]
        if where:
            raise ValueError(
                f"test {test!r} has a topology, which decides the {role}s: remove "
                + ", ".join(where)
            )
    named = [] if topology.hosts == "all" else list(topology.hosts)
    for h in [*named, *([topology.center] if topology.center else [])]:
        if h not in hosts:
            raise ValueError(
                f"test {test!r}: topology host {h!r} is not in hosts "
                f"(known: {', '.join(sorted(hosts))})"
            )
    members = topology.members(hosts)
    if topology.kind == "mesh" and len(members) < 2:
        raise ValueError(f"test {test!r}: a mesh needs at least two hosts")
    if topology.kind == "star" and not members:
        raise ValueError(f"test {test!r}: the star has no client besides its center")
