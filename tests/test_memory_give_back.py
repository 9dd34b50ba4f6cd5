"""``netfleet.catalog.memory.give_back``: what an import freed is handed back, and what comes
after it (the one-process cheat sheet's query) allocates as a fresh process would (issue 34:
the first sheet from 100,000 files in one process under 500 MB of peak RSS)."""

from __future__ import annotations

import ctypes
import ctypes.util

import pytest

from netfleet.catalog.memory import give_back


class _Mallinfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
            "fordblks", "keepcost",
        )
    ]  # fmt: skip


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    if not hasattr(libc, "mallinfo2") or not hasattr(libc, "gnu_get_libc_version"):
        pytest.skip("glibc ≥ 2.33 only (mallinfo2)")
    libc.mallinfo2.restype = _Mallinfo2
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    return libc


def _mapped_alone(libc: ctypes.CDLL, size: int) -> bool:
    """Whether a block of ``size`` bytes gets a mapping of its own (freed: back to the system
    at once) rather than a place in the heap (freed: kept by the process)."""
    before = libc.mallinfo2().hblks
    block = libc.malloc(size)
    try:
        return bool(libc.mallinfo2().hblks > before)
    finally:
        libc.free(block)


def test_after_give_back_large_blocks_are_mapped_again_as_in_a_fresh_process() -> None:
    libc = _libc()
    # an import frees large blocks (a task's tables): glibc then raises its mmap threshold
    # to the freed block's size, and the next 1 MB blocks go to the heap and stay there
    big = libc.malloc(16 << 20)
    libc.free(big)
    assert not _mapped_alone(libc, 1 << 20)
    give_back()
    # what the sheet's query allocates next: a mapping of its own, given back when freed
    assert _mapped_alone(libc, 1 << 20)
    # and the threshold stays where it was put (glibc no longer raises it)
    big = libc.malloc(16 << 20)
    libc.free(big)
    assert _mapped_alone(libc, 1 << 20)
