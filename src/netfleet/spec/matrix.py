"""A test's matrix: the product of its values in written order, less excludes, plus includes.

Part of the spec (the loader checks every combination validates); the plan layer turns the
combinations into runs (:mod:`netfleet.plan.matrix`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

from netfleet.spec.models import TestBase


def combinations(test: TestBase) -> Iterator[dict[str, Any]]:
    """The test's matrix product in written order, less excludes, plus includes."""
    keys = list(test.matrix)
    seen: list[dict[str, Any]] = []
    for values in itertools.product(*(test.matrix[k] for k in keys)):
        combo = dict(zip(keys, values, strict=True))
        if any(all(combo.get(k) == v for k, v in ex.items()) for ex in test.exclude):
            continue
        seen.append(combo)
        yield combo
    for inc in test.include:
        if inc not in seen:
            seen.append(inc)
            yield dict(inc)
