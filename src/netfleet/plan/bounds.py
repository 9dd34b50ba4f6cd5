"""Stop bounds: an adaptive run's maximum bounded per host (issue 25.2).

An adaptive run (``until_steady``) stops once its level is steady with evidence, and at the
latest after ``duration``. Where more is known about a host before the run — for a cloud
instance its catalogue figures (:mod:`netfleet.cloud.plan.stopbound`) — the run's maximum is
lowered to what that evidence needs: a steady type does not run its whole ``duration``. The
run keeps its ``run_key`` (the spec's identity of the run); only the controller's maximum
changes, so ``--resume`` finds it again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from netfleet.plan.matrix import PlannedRun

#: a bounded maximum is never below this many steady windows (the stop needs one full window)
MIN_WINDOWS = 2


def bounded(run: PlannedRun, max_s: Mapping[str, float]) -> PlannedRun:
    """``run`` with its ``duration`` lowered to its subject host's bound when it is adaptive
    and the bound is shorter; else ``run`` itself."""
    limit = max_s.get(run.subject_host)
    steady = getattr(run.params, "until_steady", None)
    duration = getattr(run.params, "duration", None)
    if limit is None or steady is None or duration is None:
        return run
    limit = max(limit, MIN_WINDOWS * float(steady))
    if limit >= duration:
        return run
    return run._replace(params=run.params.model_copy(update={"duration": limit}))


def bound_runs(runs: Sequence[PlannedRun], max_s: Mapping[str, float]) -> list[PlannedRun]:
    """:func:`bounded` of every run (runs sharing params share the bounded copy)."""
    if not max_s:
        return list(runs)
    cache: dict[tuple[int, str], PlannedRun] = {}
    out = []
    for run in runs:
        key = (id(run.params), run.subject_host)
        first = cache.get(key)
        if first is None:
            cache[key] = first = bounded(run, max_s)
        out.append(run if first.params is run.params else run._replace(params=first.params))
    return out
