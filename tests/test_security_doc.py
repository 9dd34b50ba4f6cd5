"""docs/security.md names the test of each guarantee it states: every name it gives must be a
test that exists (a renamed or deleted test would leave a claim nothing checks)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parent.parent


def test_every_test_named_in_security_md_exists() -> None:
    doc = (ROOT / "docs" / "security.md").read_text()
    named = set(re.findall(r"\btest_\w+(?=`|::)", doc))
    files = set(re.findall(r"tests/(test_\w+)\.py", doc))
    defined = {
        m
        for path in (ROOT / "tests").glob("test_*.py")
        for m in re.findall(r"^(?:async )?def (test_\w+)", path.read_text(), re.MULTILINE)
    }
    existing = {p.stem for p in (ROOT / "tests").glob("test_*.py")}
    assert named, "security.md names no test"
    assert sorted(named - defined - existing) == []
    assert sorted(files - existing) == []
