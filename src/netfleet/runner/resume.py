"""``netfleet run --resume``: which runs are left, after a crash, a Ctrl-C or failures.

A run is identified by its deterministic ``run_key``, so the same spec — even edited — tells
what is done. Completed (``ok``) runs are skipped; failed and interrupted ones run again as the
spec's ``retry`` policy says, up to ``retry.max_attempts`` attempts in all; a run started but
never finished (the controller was killed) runs again too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from netfleet.plan.matrix import PlannedRun
from netfleet.runner.journal import Journal
from netfleet.spec.scheduling import RetryPolicy
from netfleet.store.root import RawStore


@dataclass
class Selection:
    todo: list[PlannedRun]
    #: run keys already ok
    done: list[str] = field(default_factory=list)
    #: run keys whose last outcome was not ok and that are not run again (policy or attempts)
    kept_failed: list[str] = field(default_factory=list)


def select(runs: list[PlannedRun], journal: Journal, policy: RetryPolicy) -> Selection:
    """Split the plan into what to run now and what earlier sessions settled."""
    history = journal.history
    todo: list[PlannedRun] = []
    sel = Selection(todo)
    for run in runs:
        key = run.run_key
        status = history.outcomes.get(key)
        if status == "ok":
            sel.done.append(key)
            continue
        retryable = key in history.unfinished or status is None or status in policy.on
        if retryable and history.attempts[key] < policy.max_attempts:
            todo.append(run)
        else:
            sel.kept_failed.append(key)
    return sel


def recover(journal: Journal, root: RawStore, campaign: str) -> list[str]:
    """Runs the journal saw start but not finish whose result file was written anyway (the
    controller died between the two): their outcome is taken from the file and journaled.
    Returns the run keys recovered."""
    recovered = []
    history = journal.history
    for key in sorted(history.unfinished):
        since = history.started_at.get(key, "")
        for path in root.glob(f"d=*/campaign={campaign}/{key}-*.json.gz"):
            doc = root.read(path)
            if str(doc.get("started_at", "")) >= since:  # this attempt's, not an older one's
                status, run_id = str(doc.get("status")), str(doc.get("run_id"))
                journal.run_finished(key, status, run_id, str(path), stopped=[])
                recovered.append(key)
                break
    return recovered
