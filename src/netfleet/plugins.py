"""The one seam through which test and development tooling reaches into a running netfleet.

netfleet itself does nothing here. ``NETFLEET_PLUGINS`` (comma-separated module names, each in
the separate ``netfleet_sim`` package — any other name is refused) is read when a hook fires;
each named module is imported once and its ``install(registry)`` registers callables:

* ``registry.steps`` — called with the name of every step boundary of acquire and release
  (:func:`step`; ``netfleet_sim.faults`` kills the process at one, like ``kill -9``);
* ``registry.sessions`` — called with every new botocore session :mod:`netfleet.aws` builds,
  before any client exists (``netfleet_sim.awsfaults`` registers its fault-injecting event
  handlers there).

The product wheel does not contain ``netfleet_sim``: without it, setting the variable is an
error (exit 4), never silently ignored.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from netfleet.errors import EnvironmentProblem

PLUGINS_ENV = "NETFLEET_PLUGINS"
ALLOWED_PACKAGE = "netfleet_sim"


@dataclass
class Registry:
    steps: list[Callable[[str], None]] = field(default_factory=list)
    sessions: list[Callable[[Any], None]] = field(default_factory=list)


_loaded: dict[str, Registry] = {}
_lock = threading.Lock()


def registry() -> Registry:
    """The hooks of the plugins ``NETFLEET_PLUGINS`` names now (empty when it is unset)."""
    names = os.environ.get(PLUGINS_ENV, "").strip()
    with _lock:
        if names not in _loaded:
            _loaded[names] = _load(names)
        return _loaded[names]


def _load(names: str) -> Registry:
    reg = Registry()
    for name in (n.strip() for n in names.split(",")):
        if not name:
            continue
        if name.split(".")[0] != ALLOWED_PACKAGE:
            raise EnvironmentProblem(
                f"{PLUGINS_ENV} names {name!r}: only modules of {ALLOWED_PACKAGE} are loaded",
                hint=f"unset {PLUGINS_ENV} (it is for netfleet's own test tooling)",
            )
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            raise EnvironmentProblem(
                f"{PLUGINS_ENV} names {name!r}, which is not installed ({exc})",
                hint=f"install netfleet's development tooling ({ALLOWED_PACKAGE}) or unset "
                f"{PLUGINS_ENV}",
            ) from None
        module.install(reg)
    return reg


def step(name: str) -> None:
    """A named step boundary of acquire or release; the plugins' step hooks see it."""
    for hook in registry().steps:
        hook(name)


def session_created(session: Any) -> None:
    """A new botocore session: the plugins' session hooks may register event handlers on it."""
    for hook in registry().sessions:
        hook(session)
