"""One piece of advice and its table form."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(frozen=True)
class Advice:
    code: str
    severity: Literal["info", "warn", "error"]
    message: str
    fix: str
    evidence: dict[str, Any] = field(default_factory=dict)
    run_ids: tuple[str, ...] = ()
