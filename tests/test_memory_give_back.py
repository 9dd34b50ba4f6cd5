"""``netfleet.catalog.memory.give_back``: what an import freed is handed back, and what comes
after it (the one-process cheat sheet's query) allocates as a fresh process would (issue 34:
the first sheet from 100,000 files in one process under 500 MB of peak RSS)."""

from __future__ import annotations

import subprocess
import sys

import pytest

#: the check, in a fresh interpreter: glibc serves a request from any free chunk of the heap
#: before it considers a mapping, and a test worker's heap (hours of other tests) holds free
#: chunks of every size — in CI's worker a 1 MB block was served from one after give_back()
CHECK = r"""
import ctypes, ctypes.util, sys

from netfleet.catalog.memory import give_back


class Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


libc = ctypes.CDLL(ctypes.util.find_library("c"))
if not hasattr(libc, "mallinfo2") or not hasattr(libc, "gnu_get_libc_version"):
    sys.exit(77)  # not glibc >= 2.33
libc.mallinfo2.restype = Mallinfo2
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]


def mapped_alone(size):
    # whether a block of size bytes gets a mapping of its own (freed: back to the system at
    # once) rather than a place in the heap (freed: kept by the process)
    before = libc.mallinfo2().hblks
    block = libc.malloc(size)
    try:
        return libc.mallinfo2().hblks > before
    finally:
        libc.free(block)


# an import frees large blocks (a task's tables): glibc then raises its mmap threshold to the
# freed block's size, and the next 1 MB blocks go to the heap and stay there
libc.free(libc.malloc(16 << 20))
print(int(mapped_alone(1 << 20)))
give_back()
# what the sheet's query allocates next: a mapping of its own, given back when freed (2 MB:
# larger than what the heap was handed above, so no free chunk of it can serve the request)
print(int(mapped_alone(2 << 20)))
# and the threshold stays where it was put (glibc no longer raises it)
libc.free(libc.malloc(16 << 20))
print(int(mapped_alone(3 << 20)))
"""


def test_after_give_back_large_blocks_are_mapped_again_as_in_a_fresh_process() -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=120
    )
    if done.returncode == 77:
        pytest.skip("glibc >= 2.33 only (mallinfo2)")
    assert done.returncode == 0, done.stderr
    # mapped alone: before give_back (no: the heap), after it (yes), after another large free
    assert done.stdout.split() == ["0", "1", "1"]
