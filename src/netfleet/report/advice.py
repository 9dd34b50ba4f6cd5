"""Advice as a table: severity, code, finding, fix, evidence and the runs it rests on.

The rules speak per run, so two runs over the same gateway give the same finding twice; a table
lists each finding once, with every run it rests on (:func:`merged`)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import replace

from netfleet.advice.model import Advice
from netfleet.tabular import Tabular


def merged(items: Iterable[Advice]) -> list[Advice]:
    """Items with the same code, severity, message, fix and evidence as one, their runs joined
    (first-seen order)."""
    out: dict[tuple[str, ...], Advice] = {}
    for a in items:
        evidence = json.dumps(a.evidence, sort_keys=True, default=str)
        key = (a.code, a.severity, a.message, a.fix, evidence)
        if key in out:
            seen = out[key]
            runs = (*seen.run_ids, *(r for r in a.run_ids if r not in seen.run_ids))
            out[key] = replace(seen, run_ids=runs)
        else:
            out[key] = a
    return list(out.values())


def advice_table(items: list[Advice]) -> Tabular:
    rows = [
        [a.severity, a.code, a.message, a.fix, a.evidence, ", ".join(a.run_ids)]
        for a in merged(items)
    ]
    return Tabular(
        ["severity", "code", "finding", "fix", "evidence", "runs"],
        rows,
        title="Advice",
        notes=[] if rows else ["nothing to report: no limit other than the network was seen"],
    )
