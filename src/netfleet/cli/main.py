"""The ``netfleet`` command: :func:`main`, the Typer app (:mod:`netfleet.cli.app`) behind the one
error boundary (:mod:`netfleet.cli.boundary`). ``app``, ``LAZY_COMMANDS`` and ``load_command``
are the app's, loaded on first use (tests and scripts import them from here)."""

from __future__ import annotations

import gc
import importlib
import sys
from typing import Any

from netfleet.children import reap_own_children
from netfleet.cli.boundary import guarded

#: the Typer app's names, loaded on first use
_APP_NAMES = frozenset({"app", "LAZY_COMMANDS", "load_command", "LazyGroup"})


def __getattr__(name: str) -> Any:
    if name not in _APP_NAMES:
        raise AttributeError(f"module 'netfleet.cli.main' has no attribute {name!r}")
    return getattr(importlib.import_module("netfleet.cli.app"), name)


def main() -> None:
    # Python's cycle collector every 10,000 new containers, not 700: a command makes its
    # modules' objects once, and walking them a dozen times is time spent for nothing; cycles
    # are still collected
    gc.set_threshold(10_000, *gc.get_threshold()[1:])
    reap_own_children()
    from netfleet.cli.app import app

    sys.exit(guarded(lambda: app(standalone_mode=False)))
