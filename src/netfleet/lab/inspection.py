"""Look at labs that are up: which exist, how each host is doing, where a host lives."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from netfleet.errors import LabError
from netfleet.lab import delayline, netns
from netfleet.lab.commands import tc
from netfleet.lab.models import LabelValue
from netfleet.lab.state import LabHost, LabState, lab_names, read_state, state_path


class QdiscStats(BaseModel):
    """The root qdisc of one device, live from ``tc -j -s qdisc show``."""

    namespace: str
    device: str
    kind: str
    handle: str
    sent_bytes: int = 0
    sent_packets: int = 0
    drops: int = 0
    overlimits: int = 0
    backlog_bytes: int = 0
    options: dict[str, Any] = Field(default_factory=dict)


class HostStatus(BaseModel):
    host: LabHost
    namespace_exists: bool
    processes: int | None = Field(
        description="processes running in the host's namespace (None: not read, needs root)"
    )
    out_qdisc: QdiscStats | None = Field(
        default=None, description="on the host's eth0 (what it sends)"
    )
    in_qdisc: QdiscStats | None = Field(
        default=None, description="on the switch port (what it receives)"
    )
    delay_line: bool | None = Field(
        default=None,
        description="is the link's delay line running? None: the host has no delay line",
    )

    # Shortcuts to the host's own fields, for tables.
    @property
    def name(self) -> str:
        return self.host.name

    @property
    def namespace(self) -> str:
        return self.host.namespace

    @property
    def address(self) -> str:
        return self.host.address

    @property
    def mtu(self) -> int:
        return self.host.mtu

    @property
    def labels(self) -> dict[str, LabelValue]:
        return self.host.labels

    @property
    def exists(self) -> bool:
        return self.namespace_exists

    @property
    def shaping(self) -> str:
        """One line: each direction's shaper and its live counters, e.g. for `lab status`."""
        parts = []
        for direction, shaper, qdisc in (
            ("out", self.host.out, self.out_qdisc),
            ("in", self.host.in_, self.in_qdisc),
        ):
            if shaper is None:
                continue
            live = ""
            if qdisc is not None:
                live = f" [sent {qdisc.sent_bytes / 1e6:.1f} MB, {qdisc.drops} drops]"
            parts.append(f"{direction}: {shaper.describe()}{live}")
        if self.host.flow_cap is not None:
            parts.append(f"per-flow cap {self.host.flow_cap / 1e6:g} Mbit/s")
        if self.host.link is not None:
            stopped = "" if self.delay_line is not False else " [NOT RUNNING: link down]"
            parts.append(self.host.link.describe() + stopped)
        return "; ".join(parts) or "unshaped"


class LabStatus(BaseModel):
    name: str
    state_file: str
    created_at: str
    source: str | None
    complete: bool = Field(description="false: `up` was interrupted; run `netfleet lab down`")
    switch: str
    switch_exists: bool
    namespaces: list[str] = Field(description="every namespace the lab recorded")
    hosts: list[HostStatus]
    live: bool = Field(
        default=True,
        description="processes and shaper counters were read (false when not root: they need it)",
    )

    @property
    def healthy(self) -> bool:
        return (
            self.complete
            and self.switch_exists
            and all(h.namespace_exists and h.delay_line is not False for h in self.hosts)
        )


def labs(state_dir: str | Path | None = None) -> list[str]:
    """Names of the labs that have a state file (up, or interrupted while coming up)."""
    return lab_names(state_dir)


def root_qdisc(ns: str, device: str) -> QdiscStats | None:
    """The device's root qdisc with its counters, or None if the namespace is gone."""
    if not netns.exists(ns):
        return None
    try:
        entries = json.loads(tc("-j", "-s", "qdisc", "show", "dev", device, ns=ns) or "[]")
    except LabError:
        return None  # the device vanished (a partial `up`): status should still answer
    for entry in entries:
        if entry.get("root"):
            return QdiscStats(
                namespace=ns,
                device=device,
                kind=entry.get("kind", "?"),
                handle=entry.get("handle", ""),
                sent_bytes=entry.get("bytes", 0),
                sent_packets=entry.get("packets", 0),
                drops=entry.get("drops", 0),
                overlimits=entry.get("overlimits", 0),
                backlog_bytes=entry.get("backlog", 0),
                options=entry.get("options", {}),
            )
    return None


def _host_status(state: LabState, host: LabHost, live: bool = True) -> HostStatus:
    exists = netns.exists(host.namespace)
    if not live:
        return HostStatus(host=host, namespace_exists=exists, processes=None)
    return HostStatus(
        host=host,
        namespace_exists=exists,
        processes=len(netns.pids(host.namespace)),
        out_qdisc=root_qdisc(host.namespace, host.interface),
        in_qdisc=root_qdisc(state.switch, host.port),
        delay_line=None
        if host.link is None
        else host.delayline is not None and delayline.is_ours(state, host.delayline),
    )


def status(name: str | None = None, state_dir: str | Path | None = None) -> list[LabStatus]:
    """Every lab (or just ``name``): recorded hosts and shapers plus live namespaces and qdiscs.
    Without root it only reads: the state files and which namespaces exist (the processes and
    shaper counters need root, and are left out: ``live`` false)."""
    live = os.geteuid() == 0
    names = [name] if name is not None else labs(state_dir)
    out = []
    for lab in names:
        state = read_state(lab, state_dir)
        if state is None:
            raise _not_up(lab, state_dir)
        out.append(
            LabStatus(
                name=state.name,
                state_file=str(state_path(lab, state_dir)),
                created_at=state.created_at,
                source=state.source,
                complete=state.complete,
                switch=state.switch,
                switch_exists=netns.exists(state.switch),
                namespaces=state.namespaces,
                hosts=[_host_status(state, h, live) for h in state.hosts.values()],
                live=live,
            )
        )
    return out


def _not_up(lab: str, state_dir: str | Path | None) -> LabError:
    up_now = ", ".join(labs(state_dir)) or "none"
    return LabError(
        f"lab {lab!r} is not up (labs up: {up_now})",
        hint=f"bring it up: netfleet lab up {lab} (a profile name or a lab file)",
    )


def resolve_host(lab: str, host: str, state_dir: str | Path | None = None) -> LabHost:
    """Where ``host`` of lab ``lab`` lives: namespace, interface, address, MTU, labels.

    Turns a campaign's ``{kind: netns, lab: demo, host: big}`` into something to run commands in.
    """
    state = read_state(lab, state_dir)
    if state is None:
        raise _not_up(lab, state_dir)
    if host not in state.hosts:
        raise LabError(
            f"lab {lab!r} has no host {host!r}", hint=f"use one of: {', '.join(state.hosts)}"
        )
    found = state.hosts[host]
    if not state.complete or not netns.exists(found.namespace):
        raise LabError(
            f"lab {lab!r} is broken: `up` was interrupted or {found.namespace} is gone",
            hint=f"recreate it: netfleet lab down {lab} && netfleet lab up {lab}",
        )
    return found
