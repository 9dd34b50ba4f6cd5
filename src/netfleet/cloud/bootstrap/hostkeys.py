"""SSH keys netfleet generates itself: the campaign's client key pair and one host key per
instance, injected through user-data and pinned in the campaign's known_hosts (no TOFU)."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from netfleet import durable


@dataclass(frozen=True)
class KeyPair:
    private_openssh: str  #: secret: goes only to a 0600 file or into the instance's user-data
    public_openssh: str  #: "ssh-ed25519 AAAA..."


def generate(comment: str) -> KeyPair:
    import asyncssh  # heavy: only when keys are made

    key = asyncssh.generate_private_key("ssh-ed25519", comment=comment)
    return KeyPair(
        key.export_private_key().decode(),
        key.export_public_key().decode().strip(),
    )


def write_private(path: Path, pair: KeyPair) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(pair.private_openssh)
    path.with_suffix(".pub").write_text(pair.public_openssh + "\n")


def known_hosts_line(address: str, host_public: str) -> str:
    key_type, blob = host_public.split()[:2]
    return f"{address} {key_type} {blob}"


@dataclass
class KnownHosts:
    """The campaign's known_hosts, rewritten whole (atomically) as each instance of a session
    comes up — under a lock: the instances of a wave come up together, each from its own
    thread, and two unlocked rewrites lost the lines of the one that wrote first."""

    path: Path
    lines: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def reset(self) -> None:
        """A new session: the earlier instances' keys are not trusted any more."""
        with self._lock:
            self.lines = []

    def pin(self, addresses: list[str], host_public: str) -> None:
        """The instance's host key for each of its ``addresses``, then the file rewritten."""
        with self._lock:
            self.lines += [known_hosts_line(a, host_public) for a in addresses if a]
            durable.atomic_write(self.path, ("\n".join(self.lines) + "\n").encode())
