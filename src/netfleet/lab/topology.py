"""Bring a lab up and take it down.

Topology: one switch namespace ``nf-<lab>-sw`` holding a bridge ``br0`` (STP off), one namespace
``nf-<lab>-<host>`` per host with a veth ``eth0`` whose peer ``to-<host>`` is a bridge port. Veths
are created with both ends already in their namespaces: nothing is ever made in the root namespace.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path

from netfleet.errors import InputError, LabError
from netfleet.lab import delayline, netns
from netfleet.lab.commands import ip, require_root, run, tc
from netfleet.lab.models import LabSpec, Scale
from netfleet.lab.profiles import load_lab
from netfleet.lab.shaping import tbf_args
from netfleet.lab.state import (
    BRIDGE,
    INTERFACE,
    LabHost,
    LabState,
    claim_state,
    host_namespace,
    lab_names,
    port_name,
    read_state,
    remove_state,
    state_path,
    switch_namespace,
    write_state,
)

log = logging.getLogger(__name__)


def scale_labels(scale: Scale | None) -> dict[str, float | str]:
    """The labels a scaled lab puts on its hosts (so on every run they take part in):
    ``lab_scale`` = lab rate ÷ cloud rate, ``lab_time_scale`` = lab duration ÷ cloud duration,
    and ``lab_rate_basis: goodput`` when its rates are a seed's goodput used as shaper rates.
    None for a lab at the cloud's own figures."""
    if scale is None or (scale.rate == 1.0 and scale.time == 1.0):
        return {}
    basis = {"lab_rate_basis": "goodput"} if scale.basis == "goodput" else {}
    return {"lab_scale": scale.rate, "lab_time_scale": scale.time, **basis}


def plan(spec: LabSpec, source: str | None = None) -> LabState:
    """The state a lab will have once up: names, addresses, MTUs, shapers. Creates nothing."""
    addresses = spec.addresses()
    public = spec.public_addresses()
    hosts = {}
    for name, host in spec.hosts.items():
        hosts[name] = LabHost.model_validate(
            {
                "lab": spec.name,
                "name": name,
                "namespace": host_namespace(spec.name, name),
                "port": port_name(name),
                "address": addresses[name],
                "prefix": spec.subnet.prefixlen,
                "mtu": host.mtu or spec.mtu,
                "labels": {**scale_labels(spec.scale), **host.labels},
                "out": host.out,
                "in": host.in_,
                "public_address": str(public[name]) if name in public else None,
                "flow_cap": host.flow_cap,
                "link": host.link,
            }
        )
    gateway = None
    if spec.gateway is not None:
        from netfleet.lab.gateway import router_namespace

        gateway = {
            "namespace": router_namespace(spec.name),
            "address": str(spec.gateway_address()),
            "prefix": spec.subnet.prefixlen,
            "subnet": str(spec.gateway.subnet),
            "mtu": spec.gateway.mtu,
            "link_mtu": spec.mtu,
            "rate": spec.gateway.rate,
        }
    return LabState(
        name=spec.name,
        subnet=str(spec.subnet),
        switch=switch_namespace(spec.name),
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        source=source,
        hosts=hosts,
        gateway=gateway,
        scale=spec.scale,
    )


def up(spec: LabSpec | str | Path, state_dir: str | Path | None = None) -> LabState:
    """Create the lab's namespaces, links and shapers; return its recorded state.

    ``spec`` is a :class:`LabSpec`, a lab file path or a shipped profile name (``demo``).

    Refuses when the lab is already up or one of its namespace names is taken. If anything fails
    midway, everything made so far is torn down and the error re-raised.
    """
    source = None
    if not isinstance(spec, LabSpec):
        source = str(spec)
        spec = load_lab(spec)
    require_root()
    state = plan(spec, source)
    existing = read_state(spec.name, state_dir)
    if existing is not None:
        how = "" if existing.complete else " (incompletely: an earlier `up` was interrupted)"
        raise LabError(
            f"lab {spec.name!r} is already up{how}",
            hint=f"take it down first: netfleet lab down {spec.name}",
        )
    wanted = [state.switch, *(h.namespace for h in state.hosts.values())]
    if state.gateway is not None:
        wanted.append(state.gateway["namespace"])
    taken = [ns for ns in wanted if netns.exists(ns)]
    if taken:
        raise LabError(
            f"namespace {', '.join(taken)} already exists and does not belong to lab {spec.name!r}",
            hint="rename the lab, or if it is a leftover you own: ip netns delete "
            + " ".join(taken),
        )
    claim_state(state, state_dir)
    try:
        _build(state, state_dir)
    except BaseException as exc:
        try:
            down(spec.name, state_dir)
        except Exception as cleanup:  # keep the original error; say what is left
            exc.add_note(f"cleaning up after this failure also failed: {cleanup}")
        raise
    return state


def _create_namespace(state: LabState, ns: str, state_dir: str | Path | None) -> None:
    state.namespaces.append(ns)
    write_state(state, state_dir)  # recorded before it exists: a crash now is still cleaned
    try:
        netns.add(ns)
    except LabError:
        state.namespaces.remove(ns)  # not ours after all: down must never delete it
        write_state(state, state_dir)
        raise
    found = netns.identity(ns)
    if found is not None:
        state.inodes[ns] = found
        write_state(state, state_dir)
    netns.disable_ipv6(ns)


def _build(state: LabState, state_dir: str | Path | None) -> None:
    sw = state.switch
    _create_namespace(state, sw, state_dir)
    ip("link", "add", BRIDGE, "type", "bridge", "stp_state", "0", "mcast_snooping", "0", ns=sw)
    ip("link", "set", BRIDGE, "up", ns=sw)
    for host in state.hosts.values():
        _create_namespace(state, host.namespace, state_dir)
        mtu = str(host.mtu)
        if host.link is not None:
            delayline.create_taps(state, host)  # a delay line will join them (below)
        else:
            run(["ip", "link", "add", INTERFACE, "netns", host.namespace, "mtu", mtu,
                 "type", "veth", "peer", "name", host.port, "netns", sw, "mtu", mtu])  # fmt: skip
        ip("address", "add", host.cidr, "dev", INTERFACE, ns=host.namespace)
        ip("link", "set", "lo", "up", ns=host.namespace)
        ip("link", "set", INTERFACE, "up", ns=host.namespace)
        ip("link", "set", host.port, "master", BRIDGE, "up", ns=sw)
        if host.out is not None:
            tc("qdisc", "add", "dev", INTERFACE, "root", *tbf_args(host.out), ns=host.namespace)
        if host.in_ is not None:
            tc("qdisc", "add", "dev", host.port, "root", *tbf_args(host.in_), ns=sw)
        if host.flow_cap is not None:
            from netfleet.lab import flowcap

            flowcap.apply(host.namespace, INTERFACE, host.flow_cap)
            flowcap.apply(sw, host.port, host.flow_cap)
        if host.link is not None:
            delayline.start(state, host, state_dir,
                            lambda: write_state(state, state_dir))  # fmt: skip
    if state.gateway is not None:
        from netfleet.lab import gateway

        gateway.build(state, lambda ns: _create_namespace(state, ns, state_dir))
    state.complete = True
    write_state(state, state_dir)


def down(name: str, state_dir: str | Path | None = None, *, missing_ok: bool = True) -> list[str]:
    """Stop the lab's processes and delete exactly the namespaces its state file records.

    Idempotent: a lab that is not up gives ``[]``. Works after a crash or a partial ``up``. A
    namespace whose identity changed since ``up`` (someone else's, same name) is left alone.
    Returns the namespaces deleted.
    """
    state = read_state(name, state_dir)
    if state is None:
        if missing_ok:
            return []
        known = lab_names(state_dir)
        raise InputError(
            f"no lab named {name!r} is up",
            hint=f"labs up: {', '.join(known)}" if known else "no lab is up (netfleet lab status)",
        )
    require_root()
    for host in state.hosts.values():
        delayline.stop(state, host, state_dir)  # by PID, if still the process `up` started
    removed: list[str] = []
    failed: list[str] = []
    for ns in reversed(state.namespaces):
        if not netns.exists(ns):
            continue
        recorded = state.inodes.get(ns)
        if recorded is not None and not netns.matches(recorded, ns):
            log.warning("namespace %s is not the one lab %s created: left alone", ns, name)
            continue
        try:
            netns.stop_processes(ns)
            netns.delete(ns)
        except LabError as exc:
            failed.append(f"{ns}: {exc}")
            continue
        removed.append(ns)
    if failed:
        state.namespaces = [ns for ns in state.namespaces if ns not in removed]
        write_state(state, state_dir)
        raise LabError(
            f"lab {name!r} is only partly down:\n  " + "\n  ".join(failed),
            hint=f"fix the cause, then run again: netfleet lab down {name}",
        )
    remove_state(name, state_dir)
    log.info("lab %s down (%s)", name, state_path(name, state_dir))
    return removed
