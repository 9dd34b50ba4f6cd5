"""Run ``ip`` and ``tc`` as argument lists (never through a shell).

Every failure becomes a :class:`~netfleet.errors.LabError` that quotes the command and its stderr.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Sequence

from netfleet.errors import LabError

TIMEOUT = 30.0


def require_root() -> None:
    """Namespaces, veths and qdiscs need root (CAP_SYS_ADMIN and CAP_NET_ADMIN)."""
    if os.geteuid() != 0:
        raise LabError(
            "the lab needs root to create namespaces and shape links", hint="run as root (sudo)"
        )


def run(argv: Sequence[str], *, timeout: float = TIMEOUT) -> str:
    """Run ``argv`` and return its stdout; raise LabError with the command and stderr."""
    args = list(argv)
    shown = shlex.join(args)
    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError as exc:
        raise LabError(
            f"{args[0]} is not installed (running `{shown}`)",
            hint="install iproute2: apt-get install iproute2",
        ) from exc
    except subprocess.TimeoutExpired as exc:
        raise LabError(f"`{shown}` did not finish within {timeout:.0f} s") from exc
    if proc.returncode != 0:
        stderr = proc.stderr.strip() or "(no error message)"
        raise LabError(f"`{shown}` failed with exit status {proc.returncode}: {stderr}")
    return proc.stdout


def ip(*args: str, ns: str | None = None) -> str:
    """``ip [-n NS] ARGS...``"""
    return run(["ip", *(["-n", ns] if ns else []), *args])


def tc(*args: str, ns: str | None = None) -> str:
    """``tc [-n NS] ARGS...``"""
    return run(["tc", *(["-n", ns] if ns else []), *args])


def in_netns(ns: str, *argv: str) -> str:
    """``ip netns exec NS ARGV...``: run a program inside a namespace."""
    return run(["ip", "netns", "exec", ns, *argv])
