"""The ``sim`` backing lives outside the product: the separate package ``netfleet_sim``.

netfleet's wheel ships only ``netfleet``; the simulation (lab namespaces shaped like instance
types and Fargate tiers, and their labs on disk) is imported from here, lazily, only when a
campaign says ``backing: sim`` or a state directory holds a sim lab to take down.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

from netfleet.errors import EnvironmentProblem

PACKAGE = "netfleet_sim"


def sim(part: str) -> ModuleType:
    """``netfleet_sim.<part>`` (``instances``, ``fargate``, ``labs``), or a clear error."""
    try:
        return importlib.import_module(f"{PACKAGE}.{part}")
    except ModuleNotFoundError as exc:
        if exc.name not in (PACKAGE, f"{PACKAGE}.{part}"):
            raise
        raise EnvironmentProblem(
            f"backing: sim needs the package {PACKAGE}, which is not installed (the simulation "
            "is development tooling, not part of netfleet)",
            hint=f"install it from netfleet's source tree (src/{PACKAGE}), or use backing: ssh",
        ) from None


def sim_labs(state_root: Path, campaign: str | None = None) -> ModuleType | None:
    """``netfleet_sim.labs`` when ``state_root`` holds a sim lab directory (of ``campaign``, or
    of any campaign); None when there is none. A lab on disk without the package is an error
    for one campaign (``cloud destroy``) and skipped when sweeping all of them (``reap``)."""
    if campaign is not None:
        found = (state_root / campaign / "sim").is_dir()
    else:
        found = state_root.is_dir() and any(p.is_dir() for p in state_root.glob("*/sim"))
    if not found:
        return None
    try:
        return sim("labs")
    except EnvironmentProblem:
        if campaign is None:
            return None
        raise
