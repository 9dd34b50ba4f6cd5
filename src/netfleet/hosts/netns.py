"""``netns``: a named Linux network namespace on this machine (a lab's, or one you built)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from netfleet.errors import HostError
from netfleet.hosts.base import Host, Process, read_net_dev
from netfleet.hosts.provider import AttachProvider, HostRequest


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


class NetnsProvider(AttachProvider):
    """Attach: a named namespace, or a lab host resolved through the lab's state (LabError if
    the lab is down). Release closes nothing; the lab stays up for the next campaign."""

    name = "netns"

    def build(self, request: HostRequest) -> Host:
        name, spec, state_dir = request.name, request.spec, request.lab_state_dir
        if spec.lab is not None and spec.host is not None:
            from netfleet.lab import resolve_host

            lh = resolve_host(spec.lab, spec.host, state_dir=state_dir)
            # a lab knows its shapers: a credit shaper bursts, anything else does not
            shaped = [x for x in (lh.out, lh.in_) if x is not None]
            known: dict[str, Any] = {"burstable": any(x.peak is not None for x in shaped)}
            refills = [x.bucket * 8 / x.rate for x in shaped if x.peak and x.bucket]
            if refills:  # from empty, idle: the lab's σ/ρ (lab seconds)
                known["lab_refill_s"] = round(max(refills), 1)
            labels = {**known, **lh.labels, **spec.labels}
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
