"""One piece of advice and its table form."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from netfleet.tabular import Tabular


@dataclass(frozen=True)
class Advice:
    code: str
    severity: Literal["info", "warn", "error"]
    message: str
    fix: str
    evidence: dict[str, Any] = field(default_factory=dict)
    run_ids: tuple[str, ...] = ()


def advice_table(items: list[Advice]) -> Tabular:
    rows = [[a.severity, a.code, a.message, a.fix, a.evidence, ", ".join(a.run_ids)] for a in items]
    return Tabular(
        ["severity", "code", "finding", "fix", "evidence", "runs"],
        rows,
        title="Advice",
        notes=[] if rows else ["nothing to report: no limit other than the network was seen"],
    )
