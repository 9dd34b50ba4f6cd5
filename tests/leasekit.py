"""A test host provider whose acquire creates something real and whose release is observable.

``TmpdirProvider`` serves ``kind: local`` hosts, and for each one it owns a fresh directory
under ``$NETFLEET_TEST_LEASE_DIR``: it journals the intent, creates the directory with an
``owner`` file holding the lease id, and on release removes it (only if ``owner`` proves it is
its own) and appends the lease id to ``released.log`` there — so a test counts releases.

``python -m tests.leasekit run SPEC …`` is ``netfleet`` with this provider registered (as
``local`` and ``tmpdir``); ``NETFLEET_TEST_FAIL_ACQUIRE=HOST`` makes acquiring HOST fail right
after its directory was created.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from netfleet.errors import HostError
from netfleet.hosts.local import LocalProvider
from netfleet.hosts.provider import Acquired, HostRequest, Lease, LeaseLog
from netfleet.hosts.registry import register_provider

ENV_DIR = "NETFLEET_TEST_LEASE_DIR"
ENV_FAIL = "NETFLEET_TEST_FAIL_ACQUIRE"


class TmpdirProvider(LocalProvider):
    name = "tmpdir"
    owns_resources = True

    def __init__(self, base: Path | None = None, batch_size: int = 0) -> None:
        self.base = Path(base or os.environ[ENV_DIR])
        self.batch_size = batch_size  # type: ignore[misc]
        self.calls: list[list[str]] = []

    async def acquire(self, requests: list[HostRequest], log: LeaseLog) -> list[Acquired]:
        self.calls.append([r.name for r in requests])
        got = []
        for req in requests:
            path = self.base / f"{req.name}-{os.urandom(4).hex()}"
            lease = log.intent(self.name, req.name, {"path": str(path)})  # before creating
            path.mkdir()
            (path / "owner").write_text(lease.id)
            log.acquired(lease)
            if os.environ.get(ENV_FAIL) == req.name:
                raise HostError(f"host {req.name}: acquire failed on purpose (test)")
            got.append(Acquired(self.build(req), self, lease))
        return got

    async def release_lease(self, lease: Lease) -> str:
        path = Path(lease.resource["path"])
        if not path.exists():
            return "gone"
        if (path / "owner").read_text() != lease.id:
            raise HostError(f"{path} is not lease {lease.id}'s: left alone")
        shutil.rmtree(path)
        with open(path.parent / "released.log", "a", encoding="ascii") as fh:
            fh.write(lease.id + "\n")
        return "released"


def released(base: Path) -> list[str]:
    log = base / "released.log"
    return log.read_text().split() if log.exists() else []


def owned(base: Path) -> list[Path]:
    return sorted(p for p in base.iterdir() if p.is_dir())


if __name__ == "__main__":
    register_provider("local", TmpdirProvider)
    register_provider("tmpdir", TmpdirProvider)
    from netfleet.cli.main import main

    main()
