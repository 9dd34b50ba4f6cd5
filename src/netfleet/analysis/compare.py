"""``netfleet compare A B``: two groups of runs (two campaigns, or any two selections), per metric
and group, the difference B − A with a seeded bootstrap confidence interval, an effect size and a
verdict — or, when the runs are too few, the honest "too few for a verdict".

::

    cmp = compare("catalog/", "campaign=before", "campaign=after", by=("instance_type",))
    cmp.table()                                  # a Tabular, one row per group and metric
    [r.verdict for r in cmp.rows]                # "better" | "worse" | "no significant difference"
                                                 # | "too few runs"

A selector is a campaign name, or ``KEY=VALUE[,KEY=VALUE…]`` over runs columns and labels
(``client=a``, ``instance_type=m5.large,direction=out``). Keys used by a selector are left out of
the group keys (they differ between A and B by construction).

Method (docs/report.md): the sample unit is the run (intervals of one run are not independent).
The run's value is its receiver goodput (mean of the non-omitted ``sum`` intervals, the cheat
sheet's rule) or its latency summary. The interval is the percentile bootstrap of the difference
of means (A and B resampled independently, ``resamples`` times, seeded), widened to at least the
Welch t interval while a side has fewer than :data:`SMALL` runs — the percentile bootstrap is
too narrow with few samples. Effect size: Hedges' g (pooled standard deviation, small-sample
corrected). The verdict needs :data:`MIN_RUNS` runs per side.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import duckdb
import numpy as np

from netfleet.analysis.stats import FloatArray, t_quantile
from netfleet.catalog import connect
from netfleet.catalog.cheatsheet import STUB_FRACTION
from netfleet.catalog.views import impossible_count, impossible_text
from netfleet.errors import CatalogError, InputError
from netfleet.tabular import Tabular

#: fewer runs than this on a side: no verdict
MIN_RUNS = 3
#: below this many runs on a side the bootstrap interval is widened to at least Welch's t
SMALL = 10
SELECTOR_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:-]*$")


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str
    scale: float
    higher_is_better: bool
    sql: str


#: per-run values: each SELECT yields (run_id, value) over the runs CTE ``r``
METRICS: dict[str, Metric] = {
    "goodput": Metric(
        "goodput",
        "Mbit/s",
        1e6,
        True,
        "SELECT i.run_id, avg(i.bits_per_second) FROM intervals i JOIN r USING (run_id) "  # noqa: S608
        "WHERE i.kind = 'sum' AND i.role = 'receiver' AND NOT coalesce(i.omitted, false) "
        f"AND i.seconds >= {STUB_FRACTION} * coalesce(r.interval, 1.0) GROUP BY i.run_id",
    ),
    "rr_p50": Metric(
        "rr_p50",
        "µs",
        1.0,
        False,
        "SELECT l.run_id, l.p50_us FROM latency l JOIN r USING (run_id) "
        "WHERE l.kind = 'request_response'",
    ),
    "rr_p99": Metric(
        "rr_p99",
        "µs",
        1.0,
        False,
        "SELECT l.run_id, l.p99_us FROM latency l JOIN r USING (run_id) "
        "WHERE l.kind = 'request_response'",
    ),
    "ping_mean": Metric(
        "ping_mean",
        "µs",
        1.0,
        False,
        "SELECT l.run_id, l.mean_us FROM latency l JOIN r USING (run_id) WHERE l.kind = 'icmp'",
    ),
}


@dataclass(frozen=True)
class Selector:
    """Which runs form one side: ``campaign`` or key → value pairs (compared as text)."""

    text: str
    match: dict[str, str]

    @classmethod
    def parse(cls, text: str) -> Selector:
        text = text.strip()
        if not text:
            raise InputError("an empty selector", hint="give a campaign name or KEY=VALUE")
        if "=" not in text:
            return cls(text, {"campaign": text})
        match: dict[str, str] = {}
        for part in text.split(","):
            key, sep, value = part.partition("=")
            key = key.strip()
            if not sep or not SELECTOR_KEY.match(key):
                raise InputError(
                    f"selector {text!r}: {part!r} is not KEY=VALUE",
                    hint="e.g. campaign=before or instance_type=m5.large,direction=out",
                )
            match[key] = value.strip()
        return cls(text, match)


@dataclass(frozen=True)
class Difference:
    """One group and metric: B − A."""

    group: dict[str, Any]
    metric: str
    unit: str
    n_a: int
    n_b: int
    mean_a: float | None
    mean_b: float | None
    diff: float | None
    diff_percent: float | None
    ci_low: float | None
    ci_high: float | None
    effect_size: float | None
    verdict: str
    reason: str = ""

    @property
    def different(self) -> bool | None:
        """Whether the interval excludes 0 (None when there is no verdict)."""
        if self.verdict == "too few runs" or self.ci_low is None or self.ci_high is None:
            return None
        return not (self.ci_low <= 0 <= self.ci_high)


@dataclass
class Comparison:
    a: Selector
    b: Selector
    by: tuple[str, ...]
    level: float
    resamples: int
    seed: int
    rows: list[Difference] = field(default_factory=list)
    #: group keys left out because A and B share none of their values
    dropped: list[str] = field(default_factory=list)
    #: interval rows left out for a rate no link can carry (the catalog's ``intervals`` view)
    impossible: int = 0

    def table(self) -> Tabular:
        columns = [
            *self.by, "metric", "unit", "runs_a", "runs_b", "mean_a", "mean_b", "diff",
            "diff_percent", "ci_low", "ci_high", "hedges_g", "verdict", "reason",
        ]  # fmt: skip
        rows = [
            [
                *(d.group.get(k) for k in self.by),
                d.metric,
                d.unit,
                d.n_a,
                d.n_b,
                d.mean_a,
                d.mean_b,
                d.diff,
                d.diff_percent,
                d.ci_low,
                d.ci_high,
                d.effect_size,
                d.verdict,
                d.reason,
            ]
            for d in self.rows
        ]
        pct = f"{self.level:.0%}"
        return Tabular(
            columns,
            rows,
            title=f"B = {self.b.text} compared with A = {self.a.text}",
            notes=[
                f"diff = mean B − mean A per run; ci = {pct} percentile bootstrap "
                f"({self.resamples} resamples, seed {self.seed}), widened to Welch's t while a "
                f"side has < {SMALL} runs; hedges_g = effect size (pooled sd).",
                f"verdict: better/worse when the interval excludes 0 (goodput: higher is better; "
                f"latency: lower), needs ≥ {MIN_RUNS} runs per side.",
                "goodput = receiver's mean of non-omitted sum intervals (Mbit/s) per complete run.",
                *(
                    [f"not grouped by {', '.join(self.dropped)}: A and B share no value of it."]
                    if self.dropped
                    else []
                ),
                *([impossible_text(self.impossible)] if self.impossible else []),
            ],
            decimals=2,
        )

    def records(self) -> dict[str, Any]:
        """JSON: every difference in full, with the table's title and notes word for word."""
        out = []
        for d in self.rows:
            rec = asdict(d)
            rec["different"] = d.different
            out.append(rec)
        table = self.table()
        return {"title": table.title, "rows": out, "notes": table.notes}


def _mean_diff(a: FloatArray, b: FloatArray, axis: int = -1) -> FloatArray:
    return np.asarray(np.mean(b, axis=axis) - np.mean(a, axis=axis), dtype=np.float64)


#: resampled values a side one vectorised bootstrap batch holds at most (8 bytes each, and as
#: many indices: 2 × 8 MB; the 20,000-runs probe peaked at 190 MiB, at 4 million 260-540 MiB)
BOOTSTRAP_CELLS = 1_000_000


def bootstrap_diff(
    a: Sequence[float], b: Sequence[float], level: float, resamples: int, seed: int
) -> tuple[float, float]:
    """Percentile bootstrap interval of mean(b) − mean(a), A and B resampled independently:
    ``scipy.stats.bootstrap`` (``method="percentile"``, ``paired=False``) seeded with
    ``numpy.random.default_rng(seed)``. Resamples are drawn in batches of at most
    :data:`BOOTSTRAP_CELLS` values a side (100,000 runs × 10,000 resamples at once peaked at
    12 GB); a batch smaller than ``resamples`` only when a side has more than
    ``BOOTSTRAP_CELLS / resamples`` runs (then the draws come in another order: the same
    interval to within the bootstrap's own noise)."""
    from scipy.stats import bootstrap

    va, vb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if np.all(va == va[0]) and np.all(vb == vb[0]):  # every resample gives the same difference
        d = float(vb[0] - va[0])
        return d, d
    batch = max(1, BOOTSTRAP_CELLS // max(va.size, vb.size))
    res = bootstrap(
        (va, vb),
        _mean_diff,
        n_resamples=resamples,
        confidence_level=level,
        method="percentile",
        paired=False,
        vectorized=True,
        batch=batch if batch < resamples else None,
        rng=np.random.default_rng(seed),
    )
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def welch_interval(a: Sequence[float], b: Sequence[float], level: float) -> tuple[float, float]:
    """Welch's t interval of mean(b) − mean(a): Welch–Satterthwaite degrees of freedom (not
    rounded) and the t quantile of ``level`` (:func:`~netfleet.analysis.stats.t_quantile`,
    scipy) — what ``scipy.stats.ttest_ind(b, a, equal_var=False).confidence_interval(level)``
    gives."""
    va, vb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    sa, sb = va.var(ddof=1) / va.size, vb.var(ddof=1) / vb.size
    se = math.sqrt(sa + sb)
    d = float(vb.mean() - va.mean())
    if se == 0:
        return d, d
    dof = (sa + sb) ** 2 / (sa**2 / (va.size - 1) + sb**2 / (vb.size - 1))
    t = t_quantile(dof, level)
    return d - t * se, d + t * se


def hedges_g(a: Sequence[float], b: Sequence[float]) -> float | None:
    va, vb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    na, nb = va.size, vb.size
    if na < 2 or nb < 2:
        return None
    pooled = math.sqrt(((na - 1) * va.var(ddof=1) + (nb - 1) * vb.var(ddof=1)) / (na + nb - 2))
    if pooled == 0:
        return None
    correction = 1 - 3 / (4 * (na + nb) - 9)
    return float((vb.mean() - va.mean()) / pooled * correction)


def difference(
    group: Mapping[str, Any],
    metric: Metric,
    a: Sequence[float],
    b: Sequence[float],
    level: float = 0.95,
    resamples: int = 10_000,
    seed: int = 0,
) -> Difference:
    """The comparison of one group and metric from the runs' values (in the metric's unit)."""
    na, nb = len(a), len(b)
    mean_a = float(np.mean(a)) if na else None
    mean_b = float(np.mean(b)) if nb else None
    diff = mean_b - mean_a if mean_a is not None and mean_b is not None else None
    pct = diff / mean_a * 100 if diff is not None and mean_a else None
    if na < MIN_RUNS or nb < MIN_RUNS:
        counts = f"{na} run{'s' if na != 1 else ''} in A, {nb} in B"
        if na == nb:
            counts = f"{na} run{'s' if na != 1 else ''} each"
        return Difference(
            dict(group), metric.name, metric.unit, na, nb, mean_a, mean_b, diff, pct,
            None, None, hedges_g(a, b), "too few runs",
            f"{counts}: too few for a verdict (needs ≥ {MIN_RUNS} per side)",
        )  # fmt: skip
    lo, hi = bootstrap_diff(a, b, level, resamples, seed)
    reason = ""
    if min(na, nb) < SMALL:
        wlo, whi = welch_interval(a, b, level)
        if wlo < lo or whi > hi:
            reason = f"interval widened to Welch's t (< {SMALL} runs per side)"
        lo, hi = min(lo, wlo), max(hi, whi)
    if lo <= 0 <= hi:
        verdict = "no significant difference"
    else:
        up = lo > 0
        verdict = "better" if up == metric.higher_is_better else "worse"
    return Difference(
        dict(group), metric.name, metric.unit, na, nb, mean_a, mean_b, diff, pct, lo, hi,
        hedges_g(a, b), verdict, reason,
    )  # fmt: skip


def _run_values(
    con: duckdb.DuckDBPyConnection, metric: Metric, keys: Sequence[str]
) -> list[dict[str, Any]]:
    """Per complete run: its keys (runs columns or labels, as text) and the metric's value."""
    from netfleet.catalog.cheatsheet import _Keys

    resolver = _Keys(con)
    exprs, params = [], []
    for n, key in enumerate(keys):
        expr, p = resolver.resolve(key)
        exprs.append(f", CAST({expr} AS VARCHAR) AS k{n}")
        params.extend(p)
    sql = (
        f"WITH r AS (SELECT r.run_id, r.interval{''.join(exprs)} FROM runs r "  # noqa: S608
        f"WHERE r.status = 'ok'), v AS ({metric.sql}) "
        f"SELECT r.*, v.* EXCLUDE (run_id) FROM r JOIN v USING (run_id)"
    )
    out = []
    for row in con.execute(sql, params).fetchall():
        rec = {k: row[2 + n] for n, k in enumerate(keys)}
        value = row[2 + len(keys)]
        if value is not None and math.isfinite(float(value)):
            rec["_value"] = float(value) / metric.scale
            out.append(rec)
    return out


def run_values(
    catalog_dir: str | os.PathLike[str], metrics: Sequence[str], keys: Sequence[str]
) -> dict[str, list[dict[str, Any]]]:
    """Per metric, one record per complete run: ``keys`` (runs columns or labels, as text) and
    ``_value`` in the metric's unit — the values :func:`compare` compares (``netfleet watch``
    reads its rounds with it). A key that is neither a column nor a label of any run is None."""
    from netfleet.catalog.cheatsheet import _Keys

    con = connect(catalog_dir)
    try:
        resolver = _Keys(con)  # a label no run carries (instance_type in a bare lab) is None
        present = [k for k in keys if k in resolver.columns or k in resolver.labels]
        out = {m: _run_values(con, METRICS[m], present) for m in metrics}
        for recs in out.values():
            for rec in recs:
                for k in keys:
                    rec.setdefault(k, None)
        return out
    except duckdb.Error as exc:
        raise CatalogError(f"reading run values failed: {exc}") from exc
    finally:
        con.close()


def compare(
    catalog_dir: str | os.PathLike[str],
    a: str,
    b: str,
    by: Sequence[str] = ("instance_type", "direction"),
    metrics: Sequence[str] = ("goodput", "rr_p50", "rr_p99", "ping_mean"),
    level: float = 0.95,
    resamples: int = 10_000,
    seed: int = 0,
) -> Comparison:
    """Compare the runs selected by ``b`` with those selected by ``a``, per group of ``by``."""
    if not 0.5 <= level < 1:
        raise InputError(f"confidence level {level} out of range", hint="e.g. --level 0.95")
    if resamples < 100:
        raise InputError(f"{resamples} bootstrap resamples are too few", hint="use ≥ 1000")
    unknown = [m for m in metrics if m not in METRICS]
    if unknown:
        raise InputError(f"unknown metric {unknown[0]!r}", hint=f"one of {', '.join(METRICS)}")
    sa, sb = Selector.parse(a), Selector.parse(b)
    chosen = {*sa.match, *sb.match}
    group_keys = tuple(k for k in dict.fromkeys(by) if k not in chosen)
    keys = [*group_keys, *sorted(chosen)]
    result = Comparison(sa, sb, group_keys, level, resamples, seed)
    con = connect(catalog_dir)
    try:
        values = {m: _run_values(con, METRICS[m], keys) for m in metrics}
        result.impossible = impossible_count(con)
    except CatalogError as exc:
        raise CatalogError(f"compare: {exc.args[0]}", hint=getattr(exc, "hint", None)) from exc
    except duckdb.Error as exc:
        raise CatalogError(f"compare query failed: {exc}") from exc
    finally:
        con.close()

    def side(rec: Mapping[str, Any], sel: Selector) -> bool:
        return all(str(rec.get(k)) == v for k, v in sel.match.items())

    # a group key with no value common to A and B describes the selection, not a group (e.g.
    # instance_type when A and B are two hosts): it is left out, and said so
    every = [rec for name in metrics for rec in values[name]]
    kept = []
    for key in group_keys:
        seen_a = {rec[key] for rec in every if side(rec, sa) and not side(rec, sb)}
        seen_b = {rec[key] for rec in every if side(rec, sb) and not side(rec, sa)}
        if seen_a & seen_b or not (seen_a and seen_b):
            kept.append(key)
        else:
            result.dropped.append(key)
    group_keys = tuple(kept)
    result.by = group_keys

    found_a = found_b = False
    for name in metrics:
        per_group: dict[tuple[Any, ...], tuple[list[float], list[float]]] = {}
        for rec in values[name]:
            in_a, in_b = side(rec, sa), side(rec, sb)
            found_a, found_b = found_a or in_a, found_b or in_b
            if in_a == in_b:  # neither, or both (overlapping selectors): not comparable
                continue
            va, vb = per_group.setdefault(tuple(rec[k] for k in group_keys), ([], []))
            (va if in_a else vb).append(rec["_value"])
        for gkey in sorted(per_group, key=lambda t: tuple(str(x) for x in t)):
            va, vb = per_group[gkey]
            if not va or not vb:  # only one side measured this: nothing to compare
                continue
            result.rows.append(
                difference(
                    dict(zip(group_keys, gkey, strict=True)),
                    METRICS[name],
                    va,
                    vb,
                    level,
                    resamples,
                    seed,
                )
            )
    for sel, found in ((sa, found_a), (sb, found_b)):
        if not found:
            raise InputError(
                f"no complete run matches {sel.text!r}",
                hint="a selector is a campaign name or KEY=VALUE over runs columns and labels "
                "(netfleet sql 'SELECT DISTINCT campaign FROM runs' lists campaigns)",
            )
    return result
