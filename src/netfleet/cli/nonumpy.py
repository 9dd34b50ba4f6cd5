"""NumPy kept out of one CLI command's process (issue 26): pyarrow imports NumPy whenever it is
installed (``pyarrow.lib``, ``pyarrow._compute``: ``try: import numpy``), 0.08-0.1 s of CPU of
the 0.6 s an import of 100 new files and its cheat sheet take — and neither the import by
reference nor the sheet uses a single NumPy array.

Only here, in the command line's own process, and only around the work of a command that
provably never needs NumPy (:func:`netfleet.cli.sheet.show_cheatsheet` with ``--import-from``
and no results root): while it runs, ``sys.modules["numpy"]`` is None, so ``import numpy``
raises ImportError, which pyarrow takes as "NumPy is not installed". Afterwards the entry is
removed again: a later ``import numpy`` in the same process loads NumPy as always — but a
pyarrow loaded meanwhile keeps not knowing it (``Array.to_numpy`` raises ImportError,
``pyarrow.array(ndarray)`` refuses the array), which is why the library (``netfleet.api``: a
notebook's pyarrow needs NumPy) never does this.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def numpy_kept_out() -> Iterator[None]:
    """``import numpy`` fails inside the block (as if NumPy were not installed), unless NumPy
    is loaded already; the process's modules are as before afterwards."""
    if "numpy" in sys.modules:  # loaded (or kept out by an outer block): nothing to do
        yield
        return
    sys.modules["numpy"] = None  # type: ignore[assignment]  # the import system's "not found"
    try:
        yield
    finally:
        if "numpy" in sys.modules and sys.modules["numpy"] is None:
            del sys.modules["numpy"]
