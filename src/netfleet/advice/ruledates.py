"""``rule-changed``: a provider rule (:mod:`netfleet.providerrules`) was revised after a result
relied on it — its verdicts (credits, per-flow caps, gateway limits...) may no longer hold.

Reads the ``state.rules`` record of raw envelopes (dicts, as stored). Results written before
netfleet recorded rule dates get one ``rules-unrecorded`` note instead of a warning per rule.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from netfleet import providerrules
from netfleet.advice.model import Advice
from netfleet.values import obj


def rules_changed(envelopes: Iterable[Mapping[str, Any]]) -> list[Advice]:
    """One warning per rule revised since some results were taken, naming the rule, its new
    date, the oldest recorded date and the runs; one note for results with no record."""
    stale: dict[str, list[tuple[str | None, str]]] = defaultdict(list)
    unrecorded: list[str] = []
    for env in envelopes:
        run_id = str(env.get("run_id"))
        state = obj(env.get("state"))
        if not state:
            unrecorded.append(run_id)
            continue
        for rule, seen in providerrules.changed_since(obj(state.get("rules"))):
            stale[rule.name].append((seen, run_id))
    items: list[Advice] = []
    for name, hits in sorted(stale.items()):
        rule = providerrules.BY_NAME[name]
        dates = sorted({seen for seen, _ in hits if seen is not None})
        then = f"as of {dates[0]}" if dates else "before the rule was in netfleet's table"
        items.append(
            Advice(
                "rule-changed",
                "warn",
                f"provider rule {name!r} changed on {rule.as_of} since {len(hits)} result(s) "
                f"relied on it ({then}): {rule.text}",
                "re-run the affected tests, or re-read their verdicts against the revised rule",
                {
                    "rule": name,
                    "rule_as_of": rule.as_of.isoformat(),
                    "recorded": dates[0] if dates else None,
                    "results": len(hits),
                },
                tuple(run_id for _, run_id in hits),
            )
        )
    if unrecorded:
        items.append(
            Advice(
                "rules-unrecorded",
                "info",
                f"{len(unrecorded)} result(s) were taken before netfleet recorded the provider "
                f"rules' dates (rules table as of {providerrules.AS_OF})",
                "re-run them to record the configuration state and the rules' dates",
                {"results": len(unrecorded)},
                tuple(unrecorded),
            )
        )
    return items
