#!/usr/bin/env python3
"""Write docs/api-reference.md from the docstrings and signatures of ``netfleet.api``.

Run from the repository root after changing the facade::

    .venv/bin/python scripts/api_reference.py

``tests/test_api_docs.py`` fails when the page differs from what this script writes.
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "api-reference.md"

HEADER = """# `netfleet.api` reference

Generated from the code by `scripts/api_reference.py` (do not edit by hand; a test checks it is
current). How to use it: [api.md](api.md).
"""


def _doc(obj: object) -> str:
    return inspect.cleandoc(obj.__doc__ or "").strip()


def _function(name: str, fn: object) -> str:
    sig = str(inspect.signature(fn))  # type: ignore[arg-type]
    return f"### `{name}{sig}`\n\n{_doc(fn)}\n"


def _class(name: str, cls: type) -> str:
    lines = [f"### class `{name}`", "", _doc(cls), ""]
    if dataclasses.is_dataclass(cls):
        for f in dataclasses.fields(cls):
            lines.append(f"- `{f.name}: {f.type}`")
        props = [n for n, v in vars(cls).items() if isinstance(v, property)]
        lines += [f"- `{n}` (property): {_doc(vars(cls)[n])}" for n in props]
        lines.append("")
    return "\n".join(lines)


def reference() -> str:
    sys.path.insert(0, str(ROOT / "src"))
    import netfleet.api as api

    parts = [HEADER, "## Module\n", _doc(api), ""]
    constants, classes, functions = [], [], []
    for name in sorted(api.__all__, key=str.lower):
        obj = getattr(api, name)
        if inspect.isclass(obj):
            classes.append(_class(name, obj))
        elif callable(obj):
            functions.append(_function(name, obj))
        else:
            constants.append(f"- `{name} = {obj!r}`")
    parts += ["## Functions\n", *functions, "## Results\n", *classes, "## Constants\n", *constants]
    return "\n".join(parts).rstrip() + "\n"


if __name__ == "__main__":
    PAGE.write_text(reference())
    print(f"wrote {PAGE.relative_to(ROOT)}")
