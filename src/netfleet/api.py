"""The library facade: one function per thing the CLI does, for use from Python.

The CLI modules parse arguments, call these and render what they return. Each function imports
what it needs when called, so ``import netfleet.api`` is cheap.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from netfleet.advice import Advice
    from netfleet.analysis.calculator import Answer
    from netfleet.analysis.estimate import Estimate
    from netfleet.plan.summary import Plan
    from netfleet.tabular import Tabular


def plan(spec_path: Path | str) -> Plan:
    """Expand a campaign spec into its runs and estimate the wall time. Runs nothing."""
    from netfleet.plan import estimate_seconds, expand
    from netfleet.plan.summary import Plan
    from netfleet.runner.scheduler import Limits, estimate_wall_seconds
    from netfleet.spec import load_spec

    spec = load_spec(Path(spec_path))
    runs = expand(spec)
    limits = Limits.of(spec)
    est = (
        estimate_wall_seconds(runs, limits)
        if limits.concurrency > 1
        else estimate_seconds(spec, runs)
    )
    return Plan(spec, list(runs), limits.concurrency, est)


def run(spec_path: Path | str, results: str, **kwargs: Any) -> Any:
    """Run a campaign (see :func:`netfleet.runner.run_campaign` for the keyword arguments)."""
    import asyncio

    from netfleet.runner import run_campaign
    from netfleet.spec import load_spec
    from netfleet.store import open_root

    spec = load_spec(Path(spec_path))
    return asyncio.run(run_campaign(spec, open_root(results), **kwargs))


def ingest(results: str, catalog: Path, **kwargs: Any) -> Any:
    """Turn raw result files into the Parquet catalog (idempotent)."""
    from netfleet.catalog import ingest as run_ingest
    from netfleet.store import open_root

    return run_ingest(open_root(results), catalog, **kwargs)


def cheatsheet(catalog: Path, **kwargs: Any) -> Any:
    """Min / p5 / avg / p50 / p95 / max of interval goodput per group."""
    from netfleet.report.cheatsheet import cheatsheet as build

    return build(catalog, **kwargs)


def doctor(spec_path: Path | str, **kwargs: Any) -> Any:
    """Check every host and client→server pair of a campaign before running it."""
    from netfleet.doctor import doctor as run_doctor
    from netfleet.spec import load_spec

    return run_doctor(load_spec(Path(spec_path)), **kwargs)


def lab_up(lab: str, **kwargs: Any) -> Any:
    """Bring an emulated lab up (namespaces, switch, shapers). Needs root."""
    from netfleet import lab as labmod

    return labmod.up(lab, **kwargs)


def lab_down(name: str, **kwargs: Any) -> Any:
    """Tear a lab down (only what netfleet created)."""
    from netfleet import lab as labmod

    return labmod.down(name, **kwargs)


#: a group the credit calculator measures its bucket from is one instance type in one direction
CALC_GROUP_KEYS = ("instance_type", "direction")


def measured_bucket(
    run_id: str | None,
    results: str | None,
    catalog: Path | None,
    campaign: str | None,
    match: dict[str, str],
    rate: Literal["goodput", "wire"],
) -> tuple[Estimate | None, Estimate | None, Estimate | None]:
    """(baseline, peak, bucket) measured from one run, or from the one group of catalog runs
    matching ``campaign``/``match``; (None, None, None) when neither is asked for. An input
    error when no burst was measured or several groups match."""
    from netfleet.analysis import analyze_catalog, analyze_run
    from netfleet.errors import InputError

    if run_id is not None:
        if results is None:
            raise InputError(f"run {run_id}: no results root given", hint="pass --results")
        est = analyze_run(results, run_id).estimate(rate)
        what = f"run {run_id}"
        peak, base, bucket = est.peak, est.baseline, est.bucket
        kind, reason = est.kind, est.reason
    elif campaign is not None or match:
        if catalog is None:
            raise InputError("no catalog given", hint="pass --catalog")
        groups = analyze_catalog(catalog, CALC_GROUP_KEYS, campaign, match)
        if len(groups) != 1:
            raise InputError(
                f"{len(groups)} groups match ("
                + "; ".join("/".join(str(v) for v in g.keys.values()) for g in groups)
                + "): the calculator needs one",
                hint="narrow it with --match KEY=VALUE (e.g. --match instance_type=r4.large "
                "--match direction=out)",
            )
        c = groups[0].combined(rate)
        what = "the matching runs"
        peak, base, bucket, kind, reason = c.peak, c.baseline, c.bucket, c.kind, ""
    else:
        return None, None, None
    if kind not in ("burst", "burst-unfinished"):
        raise InputError(
            f"{what}: no burst measured ({kind}{': ' + reason if reason else ''})",
            hint="give the numbers instead: --baseline 0.75gbit --peak 10gbit --bucket 2700gbit",
        )
    return base, peak, bucket


def calc(
    *,
    run_id: str | None = None,
    results: str | None = None,
    catalog: Path | None = None,
    campaign: str | None = None,
    match: dict[str, str] | None = None,
    rate: Literal["goodput", "wire"] = "goodput",
    baseline: float | None = None,
    peak: float | None = None,
    bucket: float | None = None,
    use: float = 0.0,
    burst_rate: float | None = None,
    burst_seconds: float | None = None,
    duty: float | None = None,
) -> list[Answer]:
    """The credit calculator: which bucket model to use (given numbers win over measured ones,
    each missing number is measured from ``run_id`` or the matching catalog group), then what it
    lets you do. Rates in bits/s, the bucket in bits."""
    from netfleet.analysis import BucketModel
    from netfleet.analysis.calculator import plan as calculate
    from netfleet.analysis.estimate import Estimate as Est
    from netfleet.errors import InputError

    m_base, m_peak, m_bucket = measured_bucket(
        run_id, results, catalog, campaign, match or {}, rate
    )
    values = {
        "baseline": Est(baseline) if baseline else m_base,
        "peak": Est(peak) if peak else m_peak,
        "bucket": Est(bucket) if bucket else m_bucket,
    }
    missing = [k for k, v in values.items() if v is None]
    if missing:
        raise InputError(
            f"missing {', '.join(missing)}",
            hint="give --baseline, --peak and --bucket, or a RUN_ID / --campaign / --match to "
            "measure them",
        )
    model = BucketModel(values["baseline"], values["peak"], values["bucket"])  # type: ignore[arg-type]
    return calculate(model, use=use, rate=burst_rate, seconds=burst_seconds, duty=duty)


def advice(results: str, campaign: str | None = None) -> list[Advice]:
    """Advice with evidence over the raw results (of one campaign, or all)."""
    from netfleet.advice import advise
    from netfleet.store import open_root

    root = open_root(results)
    docs = [root.read(p) for p in root.files()]
    if campaign:
        docs = [d for d in docs if d.get("campaign") == campaign]
    return advise(docs)


def analyze(
    *,
    run_id: str | None = None,
    results: str | None = None,
    catalog: Path | None = None,
    by: tuple[str, ...] = CALC_GROUP_KEYS,
    campaign: str | None = None,
    match: dict[str, str] | None = None,
) -> list[Any]:
    """Burst vs baseline: one run's :class:`~netfleet.analysis.RunAnalysis` (``run_id`` under
    ``results``), or one :class:`~netfleet.analysis.GroupAnalysis` per group of the catalog."""
    from netfleet.analysis import analyze_catalog, analyze_run
    from netfleet.errors import InputError

    if run_id is not None:
        if results is None:
            raise InputError(f"run {run_id}: no results root given", hint="pass --results")
        return [analyze_run(results, run_id)]
    if catalog is None:
        raise InputError("no catalog given", hint="pass --catalog")
    return list(analyze_catalog(catalog, by, campaign, match or {}))


def topology(catalog: Path, by: str = "topology", campaign: str | None = None) -> Tabular:
    """Seed 001's table: request/response latency, ping and throughput per topology label."""
    from netfleet.report.topology import topology_table

    return topology_table(catalog, by=by, campaign=campaign)
