"""A newer userland for lab hosts: a debootstrapped Debian root, built once into a cache.

Debian 12 ships iperf3 3.12; the version-dependent paths (one thread per stream from 3.16,
``--json-stream`` from 3.17) need a newer one. Its .deb will not run on Debian 12 (glibc), but a
whole Debian 13 root does: ``chroot DIR iperf3 ...`` inside a lab namespace (FIELD-NOTES). A netns
host takes it as ``chroot: DIR`` in the campaign spec.

``ensure_root()`` returns the cached root, building it on demand with ``debootstrap`` (about a
minute, ~220 MB) under a lock, into a temp directory renamed into place only when complete, so a
crash never leaves a half-built root that looks usable.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from pathlib import Path

from netfleet.durable import open_in
from netfleet.errors import LabError

DEFAULT_CACHE = Path(os.environ.get("NETFLEET_CACHE", "/var/cache/netfleet"))
MARKER = ".netfleet-root.json"
#: iproute2 and ethtool: netfleet reads facts, readiness and NIC counters with ip/ss/tc/ethtool
DEFAULT_INCLUDE = ("iperf3", "iproute2", "ethtool")
MIRROR = "http://deb.debian.org/debian"
BUILD_TIMEOUT = 900.0


def _wanted(suite: str, include: tuple[str, ...]) -> dict[str, object]:
    return {"suite": suite, "variant": "minbase", "include": sorted(include)}


def root_ready(
    root: Path, suite: str = "trixie", include: tuple[str, ...] = DEFAULT_INCLUDE
) -> bool:
    """Whether ``root`` is a complete root built with these settings."""
    try:
        found = json.loads((root / MARKER).read_text())
    except (OSError, ValueError):
        return False
    return bool(found == _wanted(suite, include))


def ensure_root(
    cache: Path | None = None,
    suite: str = "trixie",
    include: tuple[str, ...] = DEFAULT_INCLUDE,
    mirror: str = MIRROR,
) -> Path:
    """The Debian ``suite`` root under ``cache`` (default /var/cache/netfleet), built if missing.

    Raises :class:`LabError` with the fix when debootstrap is missing or fails.
    """
    base = cache or DEFAULT_CACHE
    root = base / suite
    if root_ready(root, suite, include):
        return root
    if os.geteuid() != 0:
        raise LabError(
            f"building the {suite} root in {base} needs root (debootstrap)", hint="run as root"
        )
    if shutil.which("debootstrap") is None:
        raise LabError(
            "debootstrap is not installed",
            hint="apt-get install debootstrap (scripts/bootstrap.sh)",
        )
    base.mkdir(parents=True, exist_ok=True)
    lock_fd = open_in(base, f".{suite}.lock", os.O_RDWR | os.O_CREAT, 0o644)  # no link followed
    with os.fdopen(lock_fd, "r+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be building it: wait for it
        if root_ready(root, suite, include):
            return root
        building = base / f".{suite}-build"
        for stale in (building, root):
            if stale.exists():
                shutil.rmtree(stale)
        argv = [
            "debootstrap",
            "--variant=minbase",
            f"--include={','.join(include)}",
            suite,
            str(building),
            mirror,
        ]
        try:
            proc = subprocess.run(
                argv, capture_output=True, text=True, timeout=BUILD_TIMEOUT, check=False
            )
        except subprocess.TimeoutExpired as exc:
            shutil.rmtree(building, ignore_errors=True)
            raise LabError(f"debootstrap {suite} took over {BUILD_TIMEOUT:.0f} s") from exc
        if proc.returncode != 0:
            shutil.rmtree(building, ignore_errors=True)
            tail = (proc.stderr or proc.stdout).strip()[-400:]
            raise LabError(
                f"debootstrap {suite} failed (exit {proc.returncode}): {tail}",
                hint=f"check that {mirror} is reachable, then retry",
            )
        (building / MARKER).write_text(json.dumps(_wanted(suite, include)) + "\n")
        os.replace(building, root)
    return root
