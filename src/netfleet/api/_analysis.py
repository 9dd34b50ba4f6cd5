"""``analyze``, ``calc`` (``credit calc``) and ``compare``: burst vs baseline, what a bucket
lets you do, and two selections of runs side by side."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from netfleet.api._catalog import keys
from netfleet.api._paths import catalog_dir, results_url

if TYPE_CHECKING:
    from netfleet.analysis import GroupAnalysis, RunAnalysis
    from netfleet.analysis.calculator import Answer
    from netfleet.analysis.compare import Comparison
    from netfleet.analysis.estimate import Estimate
    from netfleet.report.labscale import LabScale

#: a group the credit calculator measures its bucket from is one instance type in one direction
CALC_GROUP_KEYS = ("instance_type", "direction")
#: the metrics ``compare`` knows (``netfleet.analysis.compare.METRICS``; a test keeps them equal)
COMPARE_METRICS = ("goodput", "rr_p50", "rr_p99", "ping_mean")

Rate = Literal["goodput", "wire"]
#: ``--match``: ``{"direction": "out"}`` or ``["direction=out", ...]``
Match = Mapping[str, str] | Sequence[str] | None
_BARE = re.compile(r"^\s*[0-9.]+\s*$")


def match_of(items: Match) -> dict[str, str]:
    """``--match KEY=VALUE`` items (or a mapping) as a dict."""
    from netfleet.errors import InputError

    if items is None:
        return {}
    if isinstance(items, Mapping):
        return {str(k): str(v) for k, v in items.items()}
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(
                f"--match {item!r} is not KEY=VALUE", hint="e.g. --match direction=out"
            )
        out[key.strip()] = value.strip()
    return out


@dataclass
class Analysis:
    """What :func:`analyze` found: every run analysed, and the groups of ``by`` (None for one
    run)."""

    by: tuple[str, ...]
    runs: list[RunAnalysis]
    groups: list[GroupAnalysis] | None = None
    #: e.g. raw results not yet in the catalog
    notes: list[str] = field(default_factory=list)


def analyze(
    run_id: str | None = None,
    *,
    results: str | None = None,
    catalog: str | os.PathLike[str] | None = None,
    campaign: str | None = None,
    by: str | Sequence[str] = CALC_GROUP_KEYS,
    match: Match = None,
    rate: Rate = "goodput",
    unit: str = "auto",
    plot: str | os.PathLike[str] | None = None,
) -> Analysis:
    """Segment each run's receiver series (steady, burst-then-baseline, erratic, inconclusive)
    and estimate the credit bucket: peak, baseline, time at peak, credit, each with ±.

    One run (``run_id``: its id under ``results`` or in the catalog — a run imported by
    reference is read from its file, checked against the manifest's SHA-256 — or a raw
    ``.json.gz`` file), or every group of ``by`` in the catalog (``campaign`` and ``match``
    narrow it). ``plot``: also write a plot of the series, levels and burst end there (.svg or
    .png, in ``rate``/``unit``)."""
    from netfleet.analysis import analyze_catalog, analyze_run
    from netfleet.errors import InputError

    group_keys = keys(by)
    if run_id is not None:
        one = analyze_run(results_url(results), run_id, catalog_dir=catalog_dir(catalog))
        found = Analysis(group_keys, [one])
    else:
        from netfleet.catalog.pending import catalog_notes

        cat = catalog_dir(catalog)
        groups = analyze_catalog(cat, group_keys, campaign, match_of(match))
        found = Analysis(
            group_keys,
            [a for g in groups for a in g.runs],
            list(groups),
            catalog_notes(results_url(results), cat),
        )
    if plot is not None:
        plot = Path(plot)
        try:
            from netfleet.report.plots import analysis_figure

            fmt_: Literal["svg", "png"] = "png" if plot.suffix.lower() == ".png" else "svg"
            plot.write_bytes(analysis_figure(found.runs, rate, unit, fmt=fmt_))
        except OSError as exc:
            raise InputError(f"cannot write the plot to {plot}: {exc}") from exc
    return found


def measured_bucket(
    run_id: str | None,
    results: str | None,
    catalog: str | os.PathLike[str] | None,
    campaign: str | None,
    match: Mapping[str, str],
    rate: Rate,
) -> tuple[Estimate | None, Estimate | None, Estimate | None]:
    """(baseline, peak, bucket) measured from one run, or from the one group of catalog runs
    matching ``campaign``/``match``; (None, None, None) when neither is asked for. An input
    error when no burst was measured or several groups match."""
    return _measured(run_id, results, catalog, campaign, match, rate)[:3]


def _measured(
    run_id: str | None,
    results: str | None,
    catalog: str | os.PathLike[str] | None,
    campaign: str | None,
    match: Mapping[str, str],
    rate: Rate,
) -> tuple[Estimate | None, Estimate | None, Estimate | None, LabScale | None]:
    """:func:`measured_bucket` and the lab scale of the runs it measured (issue 27)."""
    from netfleet.analysis import analyze_catalog, analyze_run
    from netfleet.errors import InputError
    from netfleet.report.labscale import common_scale, scale_of

    if run_id is not None:
        found = analyze_run(results_url(results), run_id, catalog_dir=catalog_dir(catalog))
        est = found.estimate(rate)
        lab = scale_of(found.run.labels)
        what = f"run {run_id}"
        peak, base, bucket = est.peak, est.baseline, est.bucket
        kind, reason = est.kind, est.reason
    elif campaign is not None or match:
        groups = analyze_catalog(catalog_dir(catalog), CALC_GROUP_KEYS, campaign, match)
        if len(groups) != 1:
            raise InputError(
                f"{len(groups)} groups match ("
                + "; ".join("/".join(str(v) for v in g.keys.values()) for g in groups)
                + "): the calculator needs one",
                hint="narrow it with --match KEY=VALUE (e.g. --match instance_type=r4.large "
                "--match direction=out)",
            )
        c = groups[0].combined(rate)
        lab = common_scale(a.run.labels for a in groups[0].runs)
        what = "the matching runs"
        peak, base, bucket, kind, reason = c.peak, c.baseline, c.bucket, c.kind, ""
    else:
        return None, None, None, None
    if kind not in ("burst", "burst-unfinished"):
        raise InputError(
            f"{what}: no burst measured ({kind}{': ' + reason if reason else ''})",
            hint="give the numbers instead: --baseline 0.75gbit --peak 10gbit --bucket 2700gbit",
        )
    return base, peak, bucket, lab


def rate_of(option: str, value: float | str | None) -> float | None:
    """A rate in bits/s: a number is bits/s already, text needs a unit (``0.75gbit``)."""
    from netfleet.errors import InputError
    from netfleet.units import parse_rate

    if value is None or isinstance(value, (int, float)):
        return value
    if _BARE.match(value):
        raise InputError(f"{option} {value}: give a unit", hint=f"e.g. {option} {value}gbit")
    try:
        return parse_rate(value)
    except ValueError as exc:
        raise InputError(f"{option}: {exc}") from None


def bucket_of(value: float | str | None) -> float | None:
    """A bucket in bits: a number is bits already, text needs a unit (``2700gbit``)."""
    from netfleet.errors import InputError
    from netfleet.units import parse_credit

    if value is None or isinstance(value, (int, float)):
        return value
    try:
        return parse_credit(value)
    except ValueError as exc:
        raise InputError(
            f"--bucket: {exc}", hint="credits are Gbit: e.g. --bucket 2700gbit"
        ) from None


def calc(
    run_id: str | None = None,
    *,
    results: str | None = None,
    catalog: str | os.PathLike[str] | None = None,
    campaign: str | None = None,
    match: Match = None,
    rate: Rate = "goodput",
    baseline: float | str | None = None,
    peak: float | str | None = None,
    bucket: float | str | None = None,
    use: float | str | None = None,
    burst_rate: float | str | None = None,
    burst_seconds: float | None = None,
    duty: float | None = None,
) -> list[Answer]:
    """The credit calculator: how long can I burst at X if my average use is u, how long does a
    refill take, what rate does a duty cycle sustain.

    The bucket model: given numbers win over measured ones, each missing number is measured
    from ``run_id`` (under ``results``) or from the one catalog group ``campaign``/``match``
    select. Rates are bits/s as numbers or text with a unit (``"0.75gbit"``); the bucket is
    bits as a number or text (``"2700gbit"``: 1 credit = 1 Gbit).

    Measured from a scaled lab's runs (label ``lab_scale``), each answer also carries the
    cloud figure it stands for (``Answer.cloud``, ``Answer.lab_scale``); given numbers (use,
    burst rate and length, baseline, peak, bucket) are then the cloud's, scaled to the lab's.
    A use at or above the baseline answers "never" (:func:`netfleet.analysis.calculator.plan`)."""
    from netfleet.analysis import BucketModel
    from netfleet.analysis.calculator import plan as calculate
    from netfleet.analysis.estimate import Estimate as Est
    from netfleet.errors import InputError
    from netfleet.report.labscale import cloud_answer

    given = {
        "baseline": rate_of("--baseline", baseline),
        "peak": rate_of("--peak", peak),
        "bucket": bucket_of(bucket),
    }
    u = rate_of("--use", use) or 0.0
    x = rate_of("--burst-rate", burst_rate)
    m_base, m_peak, m_bucket, lab = _measured(
        run_id, results, catalog, campaign, match_of(match), rate
    )
    if lab is not None:  # given figures are the cloud's the lab's stand for: scale them down
        given = {k: None if v is None else v * lab.rate for k, v in given.items()}
        if given["bucket"] is not None:
            given["bucket"] *= lab.time
        u *= lab.rate
        x = None if x is None else x * lab.rate
        burst_seconds = None if burst_seconds is None else burst_seconds * lab.time
    values = {
        "baseline": Est(given["baseline"]) if given["baseline"] else m_base,
        "peak": Est(given["peak"]) if given["peak"] else m_peak,
        "bucket": Est(given["bucket"]) if given["bucket"] else m_bucket,
    }
    missing = [k for k, v in values.items() if v is None]
    if missing:
        raise InputError(
            f"missing {', '.join(missing)}",
            hint="give --baseline, --peak and --bucket, or a RUN_ID / --campaign / --match to "
            "measure them",
        )
    model = BucketModel(values["baseline"], values["peak"], values["bucket"])  # type: ignore[arg-type]
    scale = None if lab is None else (lab.rate, lab.time)
    answers = calculate(model, use=u, rate=x, seconds=burst_seconds, duty=duty, scale=scale)
    return answers if lab is None else [cloud_answer(a, lab) for a in answers]


def compare(
    a: str,
    b: str,
    *,
    catalog: str | os.PathLike[str] | None = None,
    by: Sequence[str] | None = None,
    metric: Sequence[str] | None = None,
    level: float = 0.95,
    resamples: int = 10_000,
    seed: int = 0,
) -> Comparison:
    """Per metric and group: B − A with a bootstrap confidence interval, Hedges' g and a verdict
    (better / worse / no significant difference), or "too few runs" when a side has < 3.
    ``a``/``b``: a campaign name or ``KEY=VALUE[,KEY=VALUE]``."""
    from netfleet.analysis.compare import METRICS
    from netfleet.analysis.compare import compare as run_compare

    return run_compare(
        catalog_dir(catalog),
        a,
        b,
        by=tuple(by) if by else CALC_GROUP_KEYS,
        metrics=tuple(metric) if metric else tuple(METRICS),
        level=level,
        resamples=resamples,
        seed=seed,
    )
