"""The ``netfleet`` command: :func:`main`.

A command line that :mod:`netfleet.cli.quick` parses completely (``--version``; ``cheatsheet``
with its options written out plainly) is answered before the Typer app loads: Typer, Click and
Rich cost more than a no-op import and a cached cheat sheet together (issue 26). Every other
command line — and any that one would parse differently — goes to the Typer app
(:mod:`netfleet.cli.app`), which is also what ``app``, ``LAZY_COMMANDS`` and ``load_command``
of this module are.
"""

from __future__ import annotations

import gc
import importlib
import sys

from netfleet.children import reap_own_children
from netfleet.cli.boundary import guarded

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (2.5 ms a command)
if TYPE_CHECKING:
    from typing import Any

#: True once :func:`main` runs: this process is the ``netfleet`` command's own, not a library
#: user's or a test's calling the Typer app (:func:`netfleet.cli.sheet.numpy_kept_out`)
COMMAND = False

#: the Typer app's names, loaded on first use (tests and scripts import them from here)
_APP_NAMES = frozenset({"app", "LAZY_COMMANDS", "load_command", "LazyGroup"})


def __getattr__(name: str) -> Any:
    if name not in _APP_NAMES:
        raise AttributeError(f"module 'netfleet.cli.main' has no attribute {name!r}")
    return getattr(importlib.import_module("netfleet.cli.app"), name)


def main() -> None:
    global COMMAND
    COMMAND = True
    # Python's cycle collector every 10,000 new containers, not 700: a command makes its
    # modules' objects once, and a no-op's 12-16 collections walking them were 1.5-2 ms of
    # its 0.08 s (issue 26); cycles are still collected
    gc.set_threshold(10_000, *gc.get_threshold()[1:])
    reap_own_children()
    from netfleet.cli.quick import quick_command

    quick = quick_command(sys.argv[1:])
    if quick is not None:
        sys.exit(guarded(quick))
    from netfleet.cli.app import app

    sys.exit(guarded(lambda: app(standalone_mode=False)))
