"""Kill points for the teardown guarantee: with ``NETFLEET_PLUGINS=netfleet_sim.faults``,
``NETFLEET_FAULT_AT=<step>`` makes the process SIGKILL itself when it reaches that step of
acquire or release (:func:`netfleet.cloud.faults.point`) — no ``finally``, no atexit, like
``kill -9``."""

from __future__ import annotations

import os
import signal

from netfleet.plugins import Registry

FAULT_ENV = "NETFLEET_FAULT_AT"
#: ``TERM`` sends SIGTERM instead (the orderly-stop path); default KILL
SIGNAL_ENV = "NETFLEET_FAULT_SIGNAL"


def point(name: str) -> None:
    """Kill this process if ``NETFLEET_FAULT_AT`` names step ``name``."""
    if os.environ.get(FAULT_ENV) == name:
        sig = signal.SIGTERM if os.environ.get(SIGNAL_ENV) == "TERM" else signal.SIGKILL
        os.kill(os.getpid(), sig)


def install(registry: Registry) -> None:
    registry.steps.append(point)
