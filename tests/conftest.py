"""Suite-wide ordering: the files that hold a ``slow`` test are collected first.

``scripts/test.sh`` runs pytest in two xdist workers, ``--dist loadfile --no-loadscope-reorder``:
a worker takes one file at a time, in collection order. Starting with the long files (real labs,
the demo, the cloud's kill-9 walks) keeps one of them from starting last and running alone.
The order of tests inside a file, and of the other files, is unchanged.
"""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    slow_files = {item.path for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: item.path not in slow_files)  # a stable sort: order kept within
