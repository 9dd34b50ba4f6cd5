"""Named step boundaries of acquire and release (``before:vpc``, ``teardown:after-terminate``…).

A seam, nothing more: netfleet does nothing at a step. Its test tooling (``netfleet_sim.faults``,
loaded through :mod:`netfleet.plugins`) kills the process at a named one to prove that a killed
run leaves nothing behind.
"""

from __future__ import annotations

from netfleet.plugins import step


def point(name: str) -> None:
    """A named step boundary (see :func:`netfleet.plugins.step`)."""
    step(name)
