"""``netns``: a named Linux network namespace on this machine (a lab's, or one you built)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from netfleet.errors import HostError
from netfleet.hosts.base import Host, Process, read_net_dev


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
