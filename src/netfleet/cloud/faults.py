"""Fault injection for the teardown guarantee: ``NETFLEET_FAULT_AT=<point>`` makes the process
SIGKILL itself when it reaches that point (no ``finally``, no atexit — like ``kill -9``)."""

from __future__ import annotations

import os
import signal

FAULT_ENV = "NETFLEET_FAULT_AT"
#: ``TERM`` sends SIGTERM instead (the orderly-stop path); default KILL
SIGNAL_ENV = "NETFLEET_FAULT_SIGNAL"


def point(name: str) -> None:
    """A named step boundary; kills this process if ``NETFLEET_FAULT_AT`` names it."""
    if os.environ.get(FAULT_ENV) == name:
        sig = signal.SIGTERM if os.environ.get(SIGNAL_ENV) == "TERM" else signal.SIGKILL
        os.kill(os.getpid(), sig)
