"""Memory a process freed, handed back to the system; the cycle collector paused where it
would only walk objects that hold no cycle (issue 26).

Freed, it stays the process's — glibc's heap, Arrow's mimalloc pages — and what is allocated
next goes beside it: an import of 100,000 files kept a written batch's worth more than it used
(510-580 MB between batches; handed back, 170-250 MB), and the one-process cheat sheet's
query would add its peak to the import's. Under 5 ms.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cycle collector off for the block, on again after it if it was (nested blocks
    leave it to the outermost). For work that makes many objects and no cycles: an import's
    listing (a tuple a file: 1.5-4 ms of collections in a no-op import of 10,000 files) and a
    worker's task (its decoded documents: 5 % of a worker's CPU)."""
    import gc

    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def give_back() -> None:
    """Arrow's pool's unused pages (when pyarrow is loaded) and glibc's free heap pages back to
    the system (another C library keeps what it keeps). ``ctypes`` is loaded here, not by a
    no-op import."""
    import contextlib
    import ctypes

    # no gc.collect(): the import leaves no cycles (it found none, and cost 0.01-0.03 s)
    pyarrow = sys.modules.get("pyarrow")
    if pyarrow is not None:
        pyarrow.default_memory_pool().release_unused()
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None)
        # glibc raises its mmap threshold (up to 32 MB) each time a block above it is freed —
        # a task's tables are — and its trim threshold to twice that: what is allocated next
        # (the sheet's query) then comes from the heap and stays there when freed. Both fixed
        # at glibc's defaults (M_MMAP_THRESHOLD -3, M_TRIM_THRESHOLD -1: 128 kB), as in a fresh
        # process; fixed, they are raised no more
        for param in (-3, -1):
            libc.mallopt(param, 128 * 1024)
        libc.malloc_trim(0)
