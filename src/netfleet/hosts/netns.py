"""``netns``: a named Linux network namespace on this machine (a lab's, or one you built)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from netfleet.errors import HostError, NetfleetError
from netfleet.hosts.base import Host, Process, read_net_dev
from netfleet.hosts.provider import AttachProvider, HostRequest

if TYPE_CHECKING:
    from netfleet.lab.state import LabHost
    from netfleet.spec.models import HostSpec


@dataclass
class NetnsHost(Host):
    namespace: str = field(default="")
    #: run commands inside this root directory (another distribution's userland)
    chroot: str | None = field(default=None)

    kind = "netns"

    def wrap(self, argv: list[str]) -> list[str]:
        # `ip netns exec` setns()es then execs (as does chroot): the process keeps our PID.
        inner = ["chroot", self.chroot, *argv] if self.chroot else list(argv)
        return ["ip", "netns", "exec", self.namespace, *inner]

    async def check(self) -> None:
        if os.geteuid() != 0:
            raise HostError(
                f"host {self.name}: entering namespace {self.namespace!r} needs root",
                hint="run netfleet as root (sudo)",
            )
        if not os.path.exists(f"/run/netns/{self.namespace}"):
            raise HostError(
                f"host {self.name}: network namespace {self.namespace!r} does not exist",
                hint="create it (ip netns add …) or bring its lab up: netfleet lab up",
            )
        if self.chroot and not os.path.isdir(self.chroot):
            raise HostError(
                f"host {self.name}: chroot directory {self.chroot!r} does not exist",
                hint="build it: python -c 'from netfleet.lab.chroot import ensure_root; "
                "print(ensure_root())'",
            )

    def live_bytes(self, proc: Process) -> int | None:
        return read_net_dev(f"/proc/{proc.pid}/net/dev")


def shaper_labels(lh: LabHost) -> dict[str, Any]:
    """What a lab host's shapers say: ``burstable`` (a credit shaper bursts, anything else does
    not), and for a credit shaper ``lab_refill_s`` (σ/ρ, from empty, idle) and
    ``lab_burst_s`` (σ / (C − ρ), a full bucket at the peak) — lab seconds, the longest of its
    two directions."""
    shaped = [x for x in (lh.out, lh.in_) if x is not None]
    known: dict[str, Any] = {"burstable": any(x.peak is not None for x in shaped)}
    credit = [(x.rate, x.peak, x.bucket * 8) for x in shaped if x.peak and x.bucket]
    if credit:
        known["lab_refill_s"] = round(max(sigma / rho for rho, _, sigma in credit), 1)
        known["lab_burst_s"] = round(max(sigma / (c - rho) for rho, c, sigma in credit), 1)
    return known


def planned_labels(spec: HostSpec, state_dir: str | Path | None) -> dict[str, Any]:
    """A host's labels as far as they are known before anything is started: a lab host's from
    the lab's state when it is up, else from the shipped profile of the same name (its shapers
    and labels), then the spec's. Never fails: a lab that is neither up nor shipped adds
    nothing."""
    lab, host = getattr(spec, "lab", None), getattr(spec, "host", None)
    if spec.kind != "netns" or lab is None or host is None:
        return dict(spec.labels)
    from netfleet.lab import load_lab, plan, profiles
    from netfleet.lab.state import read_state

    try:
        state = read_state(lab, state_dir)
        if state is None and lab in profiles():
            state = plan(load_lab(lab))
    except (NetfleetError, OSError, ValueError):
        state = None
    lh = state.hosts.get(host) if state is not None else None
    if lh is None:
        return dict(spec.labels)
    return {**shaper_labels(lh), **lh.labels, **spec.labels}


class NetnsProvider(AttachProvider):
    """Attach: a named namespace, or a lab host resolved through the lab's state (LabError if
    the lab is down). Release closes nothing; the lab stays up for the next campaign."""

    name = "netns"

    def build(self, request: HostRequest) -> Host:
        name, spec, state_dir = request.name, request.spec, request.lab_state_dir
        if spec.lab is not None and spec.host is not None:
            from netfleet.lab import resolve_host

            lh = resolve_host(spec.lab, spec.host, state_dir=state_dir)
            labels = {**shaper_labels(lh), **lh.labels, **spec.labels}
            address = lh.address
            if spec.via == "gateway":
                from netfleet.lab.gateway import gateway_label, public_address

                address = public_address(spec.lab, lh, state_dir=state_dir)
                labels = {**labels, **gateway_label(spec.lab, state_dir)}
            return NetnsHost(
                name=name,
                address=address,
                labels=labels,
                namespace=lh.namespace,
                chroot=spec.chroot,
            )
        assert spec.namespace is not None and spec.address is not None
        return NetnsHost(
            name=name,
            address=spec.address,
            labels=dict(spec.labels),
            namespace=spec.namespace,
            chroot=spec.chroot,
        )
