"""``local``: this machine, over loopback."""

from __future__ import annotations

from dataclasses import dataclass

from netfleet.hosts.base import Host, Process, read_net_dev
from netfleet.hosts.provider import AttachProvider, HostRequest


@dataclass
class LocalHost(Host):
    kind = "local"

    def wrap(self, argv: list[str]) -> list[str]:
        return list(argv)

    def live_bytes(self, proc: Process) -> int | None:
        return read_net_dev(f"/proc/{proc.pid}/net/dev")


class LocalProvider(AttachProvider):
    """Attach: this machine is always there; release closes nothing."""

    name = "local"

    def build(self, request: HostRequest) -> Host:
        spec = request.spec
        return LocalHost(name=request.name, address=spec.address, labels=dict(spec.labels))
