"""The configuration state recorded with every run (``Envelope.state``, docs/format.md).

Zone ID and bandwidth weighting come from the host's labels (``zone_id``,
``bandwidth_weighting``: a cloud host gets them from EC2 at launch, an ssh/netns host from its
spec); ENA Express from the host's ``ena_srd_*`` counters around the run; MTU from the facts
measured before the campaign; the rules' dates from :mod:`netfleet.providerrules`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from netfleet import providerrules
from netfleet.hosts import srd
from netfleet.hosts.base import Host
from netfleet.store.envelope import ConfigState, HostState
from netfleet.values import as_int


async def srd_snapshot(
    hosts: list[Host], facts: Mapping[str, Mapping[str, Any]]
) -> dict[str, dict[str, int]]:
    """The ``ena_srd_*`` values of every host, by name ({} for a host without them)."""
    return {h.name: await srd.read_srd(h, facts.get(h.name, {}).get("interface")) for h in hosts}


def _label(host: Host, key: str) -> str | None:
    value = host.labels.get(key)
    return None if value is None or value == "" else str(value)


def host_state(
    host: Host, facts: Mapping[str, Any], before: dict[str, int], after: dict[str, int]
) -> HostState:
    values = srd.over_run(before, after)
    return HostState(
        zone_id=_label(host, "zone_id") or "unknown",
        ena_express=srd.express_on({**before, **after}),
        ena_srd=values,
        bandwidth_weighting=_label(host, "bandwidth_weighting"),
        mtu=as_int(facts.get("mtu")),
    )


def config_state(
    client: Host,
    server: Host,
    facts: Mapping[str, Mapping[str, Any]],
    before: Mapping[str, dict[str, int]],
    after: Mapping[str, dict[str, int]],
) -> ConfigState:
    def one(host: Host) -> HostState:
        name = host.name
        return host_state(host, facts.get(name, {}), before.get(name, {}), after.get(name, {}))

    return ConfigState(
        client=one(client),
        server=one(server),
        rules_as_of=providerrules.AS_OF.isoformat(),
        rules=providerrules.recorded(),
    )
