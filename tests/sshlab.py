"""An SSH fleet on this machine, for tests: a lab with a controller host ``ctl`` and a real
OpenSSH server (own config, host key, authorized_keys in tmp, ``UsePAM no``) in every other host.

Reachability: the lab's hosts are only reachable from other lab namespaces, and nothing may be
created in the root namespace. So the *controller* runs inside the lab's ``ctl`` namespace:
in-process (a thread that ``setns()``-es into it and runs its own event loop — network
namespaces are per thread, so every socket asyncssh opens lives there) or as a subprocess
(``ip netns exec nf-<lab>-ctl python -m netfleet …``). SSH traffic then crosses the lab's bridge
like any other, and killing a host's sshd makes it "die" for the controller.

Everything is undone in ``finally``: sshd stopped by PID, then the lab taken down.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import secrets
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml

from netfleet import lab
from tests.sshdkit import KeyPair, Sshd, make_key, start_sshd

T = TypeVar("T")
CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def in_netns(namespace: str, make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run the coroutine ``make()`` on a fresh event loop in a thread inside ``namespace``."""
    box: dict[str, Any] = {}

    def body() -> None:
        fd = os.open(f"/run/netns/{namespace}", os.O_RDONLY)
        try:
            if _libc.setns(fd, CLONE_NEWNET) != 0:
                err = ctypes.get_errno()
                raise OSError(err, f"setns({namespace}): {os.strerror(err)}")
        finally:
            os.close(fd)
        try:
            box["value"] = asyncio.run(make())
        except BaseException as exc:  # handed to the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=body, name=f"in-{namespace}")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


@dataclass
class SshLab:
    name: str
    state: Path
    dir: Path
    client_key: KeyPair
    known_hosts: Path
    addresses: dict[str, str]
    host_keys: dict[str, KeyPair] = field(default_factory=dict)
    sshd: dict[str, Sshd] = field(default_factory=dict)

    @property
    def ctl(self) -> str:
        return f"nf-{self.name}-ctl"

    def namespace(self, host: str) -> str:
        return f"nf-{self.name}-{host}"

    def start(self, host: str) -> Sshd:
        """(Re)start a host's sshd with its own host key."""
        self.sshd[host] = start_sshd(
            self.namespace(host),
            self.addresses[host],
            self.dir / f"sshd-{host}",
            self.host_keys[host],
            [self.client_key.public_text],
        )
        return self.sshd[host]

    def stop(self, host: str) -> None:
        sshd = self.sshd.pop(host, None)
        if sshd is not None:
            sshd.stop()

    def host(self, name: str, **extra: Any) -> dict[str, Any]:
        """The spec of lab host ``name`` as an SSH host (labels: instance_type = name)."""
        return {
            "kind": "ssh",
            "address": self.addresses[name],
            "user": "root",
            "key": str(self.client_key.private),
            "known_hosts": str(self.known_hosts),
            "connect_timeout": 5,
            "labels": {"instance_type": f"lab.{name}"},
            **extra,
        }

    def spec_file(self, path: Path, campaign: str, hosts: list[str], body: str) -> Path:
        head = {"campaign": campaign, "hosts": {h: self.host(h) for h in hosts}}
        path.write_text(yaml.safe_dump(head, sort_keys=False) + textwrap.dedent(body))
        return path

    def run(self, make: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """Run a coroutine as the controller, inside ``ctl``."""
        return in_netns(self.ctl, make)

    def netfleet(self, *args: str) -> list[str]:
        """argv of a `netfleet` command run as the controller, inside ``ctl``."""
        return ["ip", "netns", "exec", self.ctl, sys.executable, "-m", "netfleet", *args]


@contextlib.contextmanager
def ssh_lab(
    tmp_path: Path, hosts: list[str], shaped: dict[str, str] | None = None
) -> Iterator[SshLab]:
    """A lab ``ctl`` + ``hosts``, each host with a running sshd. ``shaped`` maps a host to a
    steady rate for both directions (e.g. ``{"h2": "50mbit"}``)."""
    name = "s" + secrets.token_hex(3)
    state = tmp_path / "labstate"
    spec: dict[str, Any] = {"name": name, "subnet": "198.18.60.0/24", "hosts": {"ctl": {}}}
    for h in hosts:
        rate = (shaped or {}).get(h)
        spec["hosts"][h] = {"out": {"rate": rate}, "in": {"rate": rate}} if rate else {}
    lab_file = tmp_path / "lab.yaml"
    lab_file.write_text(yaml.safe_dump(spec))
    made = lab.up(lab.load_lab(lab_file), state_dir=state)
    fleet = SshLab(
        name=name,
        state=state,
        dir=tmp_path,
        client_key=KeyPair(Path(), ""),
        known_hosts=tmp_path / "known_hosts",
        addresses={h: made.hosts[h].address for h in hosts},
    )
    try:
        fleet.client_key = make_key(tmp_path / "client_key")
        lines = []
        for h in hosts:
            fleet.host_keys[h] = make_key(tmp_path / f"host_key_{h}")
            lines.append(fleet.start(h).known_hosts_line)
        fleet.known_hosts.write_text("".join(lines))
        yield fleet
    finally:
        for h in list(fleet.sshd):
            fleet.stop(h)
        lab.down(name, state_dir=state)
        left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        assert name not in left, "the lab left a namespace behind"
