"""``netns``: a named Linux network namespace on this machine (a lab's, or one you built)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from netfleet.errors import HostError
from netfleet.hosts.base import Host, Process, read_net_dev


@dataclass
class NetnsHost(Host):
    namespace: str = field(default="")

    kind = "netns"

    def wrap(self, argv: list[str]) -> list[str]:
        # `ip netns exec` setns()es then execs: the process keeps the PID we started.
        return ["ip", "netns", "exec", self.namespace, *argv]

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

    def live_bytes(self, proc: Process) -> int | None:
        return read_net_dev(f"/proc/{proc.pid}/net/dev")
