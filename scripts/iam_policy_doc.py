#!/usr/bin/env python3
"""Write docs/cloud.md's "Least IAM policy" section from docs/iam-policy.json.

The JSON is the one policy (the IAM-enforced tests run with it); the page shows it verbatim,
preceded by one line per statement. Run from the repository root after changing the JSON::

    .venv/bin/python scripts/iam_policy_doc.py

``tests/test_iam_policy.py`` fails when the page differs from what this script writes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
POLICY = ROOT / "docs" / "iam-policy.json"
PAGE = ROOT / "docs" / "cloud.md"
BEGIN = "<!-- BEGIN iam-policy.json: written by scripts/iam_policy_doc.py, do not edit -->"
END = "<!-- END iam-policy.json -->"


def _list(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def _condition(cond: dict[str, dict[str, Any]]) -> str:
    parts = []
    for op, keys in cond.items():
        for key, want in keys.items():
            parts.append(f"`{key}` {op} {', '.join(f'`{w}`' for w in _list(want))}")
    return "; when " + " and ".join(parts) if parts else ""


def block(policy_text: str) -> str:
    """The generated part of the page: a line per statement, then the JSON as it is."""
    doc = json.loads(policy_text)
    lines = [BEGIN, ""]
    for st in doc["Statement"]:
        acts = _list(st["Action"])
        res = _list(st["Resource"])
        on = "any resource" if res == ["*"] else ", ".join(f"`{r}`" for r in res)
        lines.append(
            f"* **{st['Sid']}** ({st['Effect']}): {', '.join(f'`{a}`' for a in acts)} on {on}"
            f"{_condition(st.get('Condition', {}))}"
        )
    lines += ["", "```json", policy_text.rstrip("\n"), "```", "", END]
    return "\n".join(lines)


def page(current: str, policy_text: str) -> str:
    """``current`` with the generated part replaced."""
    head, sep, rest = current.partition(BEGIN)
    _, sep2, tail = rest.partition(END)
    if not sep or not sep2:
        raise SystemExit(f"{PAGE}: the markers {BEGIN!r} … {END!r} are missing")
    return head + block(policy_text) + tail


def main() -> int:
    new = page(PAGE.read_text(), POLICY.read_text())
    if new != PAGE.read_text():
        PAGE.write_text(new)
        print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
