"""Advice as a table: severity, code, finding, fix, evidence and the runs it rests on."""

from __future__ import annotations

from netfleet.advice.model import Advice
from netfleet.tabular import Tabular


def advice_table(items: list[Advice]) -> Tabular:
    rows = [[a.severity, a.code, a.message, a.fix, a.evidence, ", ".join(a.run_ids)] for a in items]
    return Tabular(
        ["severity", "code", "finding", "fix", "evidence", "runs"],
        rows,
        title="Advice",
        notes=[] if rows else ["nothing to report: no limit other than the network was seen"],
    )
