"""One run, or a group of runs, from series to credit estimates.

A group (e.g. one instance type and direction) is analysed in two passes: each run alone, then
the runs that never left one level again with the group's baseline as a hint, which tells a
burst that had not ended yet (bucket ≥ X) from a run that started with an empty bucket.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import numpy as np

from netfleet.analysis.credit import (
    CreditEstimate,
    CreditKind,
    RateKind,
    estimate_credit,
    time_at_peak,
)
from netfleet.analysis.estimate import Estimate, fmt_bits
from netfleet.analysis.refill import (
    DrainStart,
    RefillEstimate,
    analyze_refill,
    drain_start,
    probes_from_phases,
)
from netfleet.analysis.segments import Segmentation, SegmentationConfig, segment
from netfleet.analysis.series import RunInfo, Series, SeriesUnavailable, series_from_rows
from netfleet.analysis.stats import t_quantile
from netfleet.engines.burstable import (
    LONGEST_DOCUMENTED_BURST_S,
    adaptive_verdict,
    host_burstability,
    lab_scale,
    no_drop_text,
    still_bursting,
)
from netfleet.engines.contract import MACHINE_BUSY_PERCENT, cpu_limits, engine_cpu

Rows = Iterable[Mapping[str, Any]]


@dataclass(frozen=True)
class RunAnalysis:
    run: RunInfo
    series: Series | None
    segmentation: Segmentation
    credit: CreditEstimate
    refill: RefillEstimate | None = None

    def estimate(self, rate: RateKind = "goodput") -> CreditEstimate:
        return self.credit.as_wire() if rate == "wire" else self.credit

    @property
    def classification(self) -> str:
        """The segmentation's class, except that a flat level without evidence is "no-drop"."""
        return "no-drop" if self.credit.kind == "no-drop" else self.segmentation.classification


def analyze_series(
    run: RunInfo,
    series: Series,
    config: SegmentationConfig | None = None,
    baseline_hint: Estimate | None = None,
) -> RunAnalysis:
    seg = segment(series, config)
    credit = estimate_credit(
        series,
        seg,
        mtu=run.mtu,
        protocol=run.protocol,
        baseline_hint=baseline_hint,
        config=config,
    )
    credit = _without_evidence(run, series, credit)
    credit = _bucket_state(run, credit)
    credit = _host_limited(run, credit)
    if run.status not in (None, "ok"):
        credit = replace(
            credit, notes=(*credit.notes, f"run {run.status}: the series may end early")
        )
    return RunAnalysis(run, series, seg, credit)


def _without_evidence(run: RunInfo, series: Series, credit: CreditEstimate) -> CreditEstimate:
    """A flat level without evidence is "no-drop", never "steady": an adaptive run that saw no
    drop on a host not known fixed-rate, a fixed-length run on a host labelled burstable
    that was shorter than the longest documented burst, or any level well above the host's
    catalogue baseline (:func:`still_bursting`: the burst, whatever stopped the run)."""
    if credit.kind != "steady":
        return credit
    adaptive = run.notes.get("adaptive")
    bursting = still_bursting(credit.rate.value if credit.rate else None, [run.labels])
    if bursting is not None:
        verdict: str | None = bursting
    elif isinstance(adaptive, Mapping):
        verdict = adaptive_verdict(adaptive)
    elif host_burstability(run.labels) == "burstable":
        span = series.lead_seconds + float(series.seconds.sum())
        verdict = no_drop_text(span) if span < LONGEST_DOCUMENTED_BURST_S else None
        if verdict is not None:
            verdict += ": the host is labelled burstable and the run was flat throughout"
    else:
        verdict = None
    if verdict is None:
        return credit
    return replace(credit, kind="no-drop", reason=verdict)


def _bucket_state(run: RunInfo, credit: CreditEstimate) -> CreditEstimate:
    """A run that began with a possibly drained bucket (``notes.bucket_state``, written by the
    runner from the journal) says so: its bucket and time at peak may be low."""
    state = run.notes.get("bucket_state")
    if not isinstance(state, Mapping) or state.get("state") != "possibly-partial":
        return credit
    found = state.get("hosts")
    hosts: list[Any] = found if isinstance(found, list) else []
    why = "; ".join(f"{h.get('host')}: {h.get('why')}" for h in hosts if isinstance(h, Mapping))
    note = (
        "bucket_state possibly-partial: the bucket may not have been full when the run began"
        + (f" ({why})" if why else "")
        + ": the bucket and time at peak may be low"
    )
    return replace(credit, notes=(*credit.notes, note))


#: the ± a host-limited peak gets at least (relative): a single stream on a busy 2-core host
#: read a 960 Mbit/s peak 9.6 % low (issue 9)
HOST_LIMITED_ERR = 0.10
#: the ± a host-limited run's bucket gets at least (relative): a CPU-starved sender's bucket
#: read 0.19–1.04 % low in six blind-check runs (profile b2, busy loops) with a ± of ~0.02 %
HOST_LIMITED_BUCKET_ERR = 0.015


#: a single stream whose sending iperf3 used at least this share of one CPU (the end summary's
#: ``cpu_utilization_percent``): its one thread was the limit
STREAM_CPU_PERCENT = 90.0
#: AWS's one-flow limits (FIELD-NOTES: 5 Gbit/s outside a cluster placement group, 10 inside)
FLOW_CAPS_BPS = (5e9, 10e9)
#: a per-stream goodput plateau this close to a flow cap is cap-like (goodput is 0.956 of the
#: wire rate at MTU 1500, 0.994 at 9001)
FLOW_CAP_BAND = (0.94, 1.01)
#: another run of the group with more streams reached at least this × the level: too few streams
MORE_STREAMS_RATIO = 1.2


def _level(credit: CreditEstimate) -> Estimate | None:
    """The rate a run's streams carried at their best: the peak, else its one level."""
    return credit.peak or credit.rate


def _sender_role(run: RunInfo) -> str:
    """Which end sent: the client with data flowing out of it, the server with --reverse."""
    reverse = bool(run.row.get("reverse")) or (run.direction == "in" and run.subject == "client")
    return "server" if reverse else "client"


def _engine_cpu_of(run: RunInfo) -> tuple[dict[str, float], str]:
    """CPU % of the run's own engine processes by role (100 = one CPU) and its source
    (:func:`netfleet.engines.contract.engine_cpu`): iperf3's end summary
    ``cpu_utilization_percent`` (host = client, remote = server), else ``notes.engine_cpu``."""
    out = {}
    for role, key in (("client", "end_host_cpu"), ("server", "end_remote_cpu")):
        value = run.row.get(key)
        if isinstance(value, int | float) and not math.isnan(value):
            out[role] = float(value)
    return engine_cpu(out, run.notes)


def _engine_cpu(run: RunInfo) -> dict[str, float]:
    return _engine_cpu_of(run)[0]


def _sender_cpu(run: RunInfo) -> float | None:
    """CPU % of the sending iperf3 (one process; 100 = one CPU), from the end summary."""
    return _engine_cpu(run).get(_sender_role(run))


def _calm_engine(
    run: RunInfo, credit: CreditEstimate, engine: Mapping[str, float], busy: Any
) -> CreditEstimate:
    """A busy machine whose engine used little CPU: said beside the ±, which stays the run's
    own (:func:`netfleet.engines.contract.cpu_limits`)."""
    if not engine or not isinstance(busy, int | float) or busy < MACHINE_BUSY_PERCENT:
        return credit
    top = max(engine.values())
    note = (
        f"± from the run's own intervals: the machine's CPUs were {busy:.0f} % busy (/proc/stat, "
        f"every process on it) but the engine used at most {top:.0f} % of a CPU "
        f"({_engine_cpu_of(run)[1]}), not a limit"
    )
    return replace(credit, notes=(*credit.notes, note))


def _stream_evidence(run: RunInfo, credit: CreditEstimate) -> list[str]:
    """Evidence, from this run alone, that its streams were too few to reach the peak."""
    level, streams = _level(credit), run.parallel or 1
    found = []
    cpu = _sender_cpu(run)
    if streams == 1 and cpu is not None and cpu >= STREAM_CPU_PERCENT:
        found.append(
            f"too few streams: 1 stream, its sending iperf3 at {cpu:.0f} % of a CPU (end "
            "summary, cpu_utilization_percent): the thread was the limit, more streams would "
            "carry more"
        )
    if level is not None:
        per = level.value / streams
        for cap in FLOW_CAPS_BPS:
            if FLOW_CAP_BAND[0] * cap <= per <= FLOW_CAP_BAND[1] * cap:
                found.append(
                    f"too few streams: {streams} stream(s) at {per / 1e9:.2f} Gbit/s each, at "
                    f"the {cap / 1e9:g} Gbit/s one-flow limit (AWS: 5 outside a cluster "
                    "placement group, 10 inside): the level may be the flows' cap, not the link's"
                )
    return found


def _host_limited(
    run: RunInfo, credit: CreditEstimate, evidence: Sequence[str] = ()
) -> CreditEstimate:
    """Peak measured with the CPUs saturated (``notes.host_cpu``) or with too few streams to
    reach it (:func:`_stream_evidence`, or ``evidence`` from the run's group): labelled
    host-limited, with the evidence, and a wider ±."""
    streams = f", {run.parallel} stream(s)" if run.parallel else ""
    found = [*_stream_evidence(run, credit), *evidence]
    engine, source = _engine_cpu_of(run)
    cpu = run.notes.get("host_cpu")
    busy = cpu.get("busy_percent") if isinstance(cpu, Mapping) else None
    limits = cpu_limits(engine, busy if isinstance(busy, int | float) else None, source)
    if (run.parallel or 1) == 1 and any(f.startswith("too few streams: 1 stream") for f in found):
        limits.pop(_sender_role(run), None)  # said already: its one thread was the limit
    if limits:
        found.insert(0, "; ".join(f"{role}: {why}{streams}" for role, why in limits.items()))
    if not found:
        return _calm_engine(run, credit, engine, busy)

    if any(n.startswith("host-limited") for n in credit.notes):  # its ± is already wide
        new = [f for f in found if not any(f in n for n in credit.notes)]
        extra = (f"host-limited, also: {'; '.join(new)}",) if new else ()
        return replace(credit, notes=(*credit.notes, *extra))
    note = (
        f"host-limited: {'; '.join(found)}: the peak may be the host's limit, not the link's; "
        f"its ± is at least {HOST_LIMITED_ERR:.0%} (the bucket's {HOST_LIMITED_BUCKET_ERR:.1%})"
    )
    peak, rate = credit.peak, credit.rate

    def widen(e: Estimate | None, rel: float = HOST_LIMITED_ERR) -> Estimate | None:
        if e is None:
            return None
        return replace(e, err=max(e.err, rel * e.value))

    return replace(
        credit,
        peak=widen(peak),
        rate=widen(rate),
        bucket=widen(credit.bucket, HOST_LIMITED_BUCKET_ERR),
        notes=(*credit.notes, note),
    )


#: which runs' levels compare across stream counts: peaks with peaks, fixed-rate levels with
#: fixed-rate levels — never a baseline (a drained bucket) with a peak
_COMPARABLE: dict[str, str] = {"burst": "peak", "burst-unfinished": "peak", "steady": "steady"}


def _fewer_streams(analyses: Sequence[RunAnalysis]) -> list[RunAnalysis]:
    """Across a group: a run whose level another run of the same kind with more streams beat
    by :data:`MORE_STREAMS_RATIO` (beyond both ±) had too few streams — labelled so."""
    levels = [
        (a, _level(a.credit), a.run.parallel or 1, _COMPARABLE.get(a.credit.kind)) for a in analyses
    ]
    out = []
    for a, level, streams, family in levels:
        better = [
            (b, other, n)
            for b, other, n, kind in levels
            if level is not None and other is not None and n > streams
            and family is not None and kind == family
            and other.value >= MORE_STREAMS_RATIO * level.value
            and other.value - other.err > level.value + level.err
        ]  # fmt: skip
        if not better or level is None:
            out.append(a)
            continue
        b, other, n = max(better, key=lambda x: x[1].value)
        why = (
            f"too few streams: {streams} stream(s) reached {level.value / 1e6:.1f} Mbit/s, "
            f"{n} streams {other.value / 1e6:.1f} Mbit/s in run {b.run.run_id} "
            f"(×{other.value / level.value:.2f})"
        )
        out.append(replace(a, credit=_host_limited(a.run, a.credit, [why])))
    return out


def analyze_rows(
    run: RunInfo,
    rows: Rows,
    config: SegmentationConfig | None = None,
    baseline_hint: Estimate | None = None,
    flow: str | None = None,
) -> RunAnalysis:
    """Analyse one run from its interval rows (a raw file's or the catalog's)."""
    try:
        series = series_from_rows(run, rows, flow)
    except SeriesUnavailable as exc:
        seg = Segmentation("inconclusive", reason=str(exc))
        return RunAnalysis(run, None, seg, CreditEstimate("inconclusive", reason=str(exc)))
    return analyze_series(run, series, config, baseline_hint)


def analyze_phases(
    run: RunInfo, phases: Sequence[Mapping[str, Any]], params: Mapping[str, Any] | None = None
) -> RunAnalysis:
    """A ``credit`` run (drain → idle → burst …, docs/analysis.md "Refill"): the drain phase is
    analysed like a run, the probes give the refill."""
    try:
        drain, probes = probes_from_phases(run, phases, params)
        analysis = analyze_series(run, drain)
        analysis = _with_drain_start(analysis, drain_start(run, phases, params))
        _, _, refill = analyze_refill(drain, probes, analysis.credit.baseline)
    except SeriesUnavailable as exc:
        seg = Segmentation("inconclusive", reason=str(exc))
        return RunAnalysis(run, None, seg, CreditEstimate("inconclusive", reason=str(exc)))
    return replace(analysis, refill=refill)


def _with_drain_start(analysis: RunAnalysis, start: DrainStart) -> RunAnalysis:
    """A drain that began at the baseline (the check confirmed it: the bucket was empty) gives
    the baseline and no initial bucket; a drain split by a check counts its earlier parts'
    bits in the initial bucket."""
    c = analysis.credit
    if start.at_baseline and c.baseline is None and c.rate is not None:
        note = (
            "the host was already at its baseline when the drain began (a check — idle, then "
            "a short run that started above this level and fell back — confirmed the bucket "
            "was empty): the initial bucket is not measured; the refill is"
        )
        credit = replace(
            c,
            kind="baseline-only",
            baseline=c.rate,
            reason="already at the baseline: the bucket was empty when the drain began",
            notes=(*c.notes, note),
        )
        return replace(analysis, credit=credit)
    if start.earlier and c.bucket is not None and c.baseline is not None:
        extra = start.extra_bits(c.baseline.value)
        bucket = replace(c.bucket, value=c.bucket.value + extra)
        note = (
            f"the drain was split by a baseline check: the initial bucket adds the "
            f"{extra / 1e6:.0f} Mbit its earlier part(s) drew above the baseline"
        )
        return replace(analysis, credit=replace(c, bucket=bucket, notes=(*c.notes, note)))
    return analysis


def pool(values: Sequence[Estimate], level: float = 0.95) -> Estimate | None:
    """Several runs' estimates of one quantity: their mean; ± combines the spread between runs
    (t · s/√k, the two-sided ``level`` t interval of the mean) with the runs' own ± (root mean
    square / √k)."""
    if not values:
        return None
    v = np.array([e.value for e in values])
    own = math.sqrt(float(np.mean([e.err**2 for e in values])) / len(values))
    k = v.size
    between = t_quantile(k - 1, level) * float(v.std(ddof=1)) / math.sqrt(k) if k > 1 else 0
    return Estimate(float(v.mean()), math.hypot(between, own))


@dataclass(frozen=True)
class GroupCredit:
    """The group's answer, in one rate kind."""

    kind: CreditKind
    peak: Estimate | None = None
    baseline: Estimate | None = None
    bucket: Estimate | None = None
    burst_seconds: Estimate | None = None
    rate: Estimate | None = None
    notes: tuple[str, ...] = ()

    @property
    def seconds_at_peak_full(self) -> float | None:
        """σ / (C − ρ) of the group's pooled figures (what the calculator answers from)."""
        return time_at_peak(self.bucket, self.peak, self.baseline)


@dataclass(frozen=True)
class GroupAnalysis:
    keys: dict[str, Any]
    runs: tuple[RunAnalysis, ...]
    refill: RefillEstimate | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def classification(self) -> str:
        counts = Counter(r.classification for r in self.runs)
        return ", ".join(f"{k} ×{n}" for k, n in counts.most_common())

    def combined(self, rate: RateKind = "goodput") -> GroupCredit:
        return combine([r.estimate(rate) for r in self.runs])


#: which kind names a group when its runs differ
_PRECEDENCE: tuple[CreditKind, ...] = (
    "burst",
    "burst-unfinished",
    "baseline-only",
    "no-drop",
    "steady",
    "erratic",
)


def _bucket_value(credit: CreditEstimate) -> float:
    return credit.bucket.value if credit.bucket is not None else -math.inf


def _largest_bucket(credits: Sequence[CreditEstimate]) -> CreditEstimate | None:
    with_bucket = [c for c in credits if c.bucket is not None]
    return max(with_bucket, key=_bucket_value, default=None)


def combine(credits: Sequence[CreditEstimate]) -> GroupCredit:
    """Peak and baseline pooled over the runs that show them; the bucket is the largest a run
    saw (a run that began with a part-filled bucket shows less: seed 004's "initial/max")."""
    by_kind: dict[str, list[CreditEstimate]] = {}
    for c in credits:
        by_kind.setdefault(c.kind, []).append(c)
    bursts = by_kind.get("burst", [])
    unfinished = by_kind.get("burst-unfinished", [])
    peaks = [c.peak for c in bursts if c.peak is not None and not c.peak.lower_bound]
    peaks += [c.rate for c in unfinished if c.rate is not None]
    bases = [c.baseline for c in bursts if c.baseline is not None]
    bases += [c.rate for c in by_kind.get("baseline-only", []) if c.rate is not None]
    notes: list[str] = []
    best = _largest_bucket(bursts)
    if best is not None and best.bucket is not None and len(bursts) > 1:
        smallest = min(c.bucket.value for c in bursts if c.bucket is not None)
        notes.append(
            f"bucket {fmt_bits(smallest)} to {fmt_bits(best.bucket.value)} over {len(bursts)} "
            "runs: the largest is the initial/max credit (a run that began part-filled shows less)"
        )
    floor = _largest_bucket(unfinished)
    if floor is not None and (
        best is None or _bucket_value(floor) > _bucket_value(best)
    ):  # still bursting after longer than any complete burst lasted
        best = floor
    kind: CreditKind = next((k for k in _PRECEDENCE if k in by_kind), "inconclusive")
    rates = [c.rate for c in by_kind.get(kind, []) if c.rate is not None]
    return GroupCredit(
        kind,
        pool(peaks),
        pool(bases),
        best.bucket if best else None,
        best.burst_seconds if best else None,
        pool(rates) if kind in ("steady", "no-drop", "erratic") else None,
        tuple(notes),
    )


def analyze_group(
    keys: Mapping[str, Any],
    runs: Sequence[tuple[RunInfo, Rows]],
    config: SegmentationConfig | None = None,
    baseline_hint: Estimate | None = None,
    prepared: Mapping[str, RunAnalysis] | None = None,
) -> GroupAnalysis:
    """Analyse runs that belong together (same instance type and direction, say).
    ``prepared``: analyses made elsewhere, by run id (e.g. credit runs read from their raw
    files), used as they are."""
    materialized = [(info, list(rows)) for info, rows in runs]
    done = prepared or {}
    first = [
        done.get(info.run_id) or analyze_rows(info, rows, config, baseline_hint)
        for info, rows in materialized
    ]
    hint = baseline_hint or combine([a.credit for a in first]).baseline
    if hint is not None:
        first = [
            analyze_rows(info, rows, config, hint) if a.credit.kind in ("steady", "no-drop") else a
            for a, (info, rows) in zip(first, materialized, strict=True)
        ]
    first = _part_filled(_fewer_streams(first))
    refills = [a.refill for a in first if a.refill is not None and a.refill.rate is not None]
    return GroupAnalysis(dict(keys), tuple(first), _best_refill(refills))


def _when(value: Any) -> datetime | None:
    """A runs row's ``started_at``/``ended_at`` (a datetime, or ISO text from a raw file)."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
    if not isinstance(value, datetime):
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _subject_host(run: RunInfo) -> Any:
    """The name of the host a run measures (its ``subject``: client or server)."""
    return run.row.get("server" if run.subject == "server" else "client")


def _refill_seconds(analyses: Sequence[RunAnalysis]) -> float | None:
    """σ/ρ: how long the group's bucket takes to refill from empty, idle — the host label
    ``refill_s`` when given, else the largest bucket a run saw over the pooled baseline."""
    for a in analyses:
        given = a.run.labels.get("refill_s")
        if isinstance(given, int | float) and not isinstance(given, bool) and given > 0:
            return float(given)
    group = combine([a.credit for a in analyses])
    if group.bucket is None or group.baseline is None or group.baseline.value <= 0:
        return None
    return group.bucket.value / group.baseline.value


def _part_filled(analyses: Sequence[RunAnalysis]) -> list[RunAnalysis]:
    """A run that began less than the refill time σ/ρ after its host's previous run ended
    (``ended_at``/``started_at`` of the group's runs on the same subject host) and saw a bucket
    clearly below the group's largest started with a part-filled bucket: its bucket and time at
    peak are lower bounds, and a note says so. (A run that saw the largest bucket began full: a
    lab re-made between runs refills at once.)"""
    refill = _refill_seconds(analyses)
    largest = combine([a.credit for a in analyses]).bucket
    if refill is None or largest is None:
        return list(analyses)
    ends: dict[Any, list[datetime]] = {}
    for a in analyses:
        host, end = _subject_host(a.run), _when(a.run.row.get("ended_at"))
        if host is not None and end is not None:
            ends.setdefault(host, []).append(end)
    out = []
    for a in analyses:
        start = _when(a.run.row.get("started_at"))
        before = [e for e in ends.get(_subject_host(a.run), []) if start is not None and e <= start]
        gap = (start - max(before)).total_seconds() if start is not None and before else None
        c = a.credit
        short = c.bucket is not None and c.bucket.high < largest.value - largest.err
        if gap is None or gap >= refill or c.bucket is None or not short:
            out.append(a)  # a run that saw the group's largest bucket began full, whatever the gap
            continue
        scale = _lab_time_scale(a.run.labels)
        cloud = f" ({refill / scale:,.0f} s in the cloud)" if scale else ""
        note = (
            f"bucket not full at start: this host sent until {gap:.0f} s before; refill needs "
            f"~{refill:,.0f} s{cloud}: the bucket and time at peak are lower bounds"
        )
        low = replace(c.bucket, lower_bound=True)
        secs = None if c.burst_seconds is None else replace(c.burst_seconds, lower_bound=True)
        credit = replace(c, bucket=low, burst_seconds=secs, notes=(*c.notes, note))
        out.append(replace(a, credit=credit))
    return out


def _lab_time_scale(labels: Mapping[str, Any]) -> float | None:
    """A scaled lab's time scale (:func:`~netfleet.engines.burstable.lab_scale`), None when
    its durations are the cloud's."""
    found = lab_scale(labels)
    return None if found is None or found[1] == 1 else found[1]


def _best_refill(refills: Sequence[RefillEstimate]) -> RefillEstimate | None:
    """The refill estimate of a group: a capped one (it knows the full refill time) with the
    tightest rate."""
    ranked = sorted(
        refills, key=lambda r: (r.cap is None, r.rate.err / r.rate.value if r.rate else math.inf)
    )
    return ranked[0] if ranked else None


def group_runs(
    runs: Iterable[tuple[RunInfo, Rows]], by: Sequence[str]
) -> dict[tuple[Any, ...], list[tuple[RunInfo, Rows]]]:
    """Runs by the values of ``by`` (runs columns or labels), in first-seen order."""
    groups: dict[tuple[Any, ...], list[tuple[RunInfo, Rows]]] = {}
    for info, rows in runs:
        groups.setdefault(tuple(info.key(k) for k in by), []).append((info, rows))
    return groups
