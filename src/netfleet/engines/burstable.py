"""What is known about a host's bandwidth bursts, and the adaptive stop this allows.

An adaptive run (``until_steady``) that sees one flat level cannot tell a baseline from a burst
that has not ended yet. It may call the level *steady* only with evidence: a level drop seen, a
known baseline reached, a host known to be fixed-rate, or a run longer than the longest burst
the provider documents. Without any, the verdict is "no drop within N s (a longer burst is
possible)".

A host's labels say what is known: ``burstable: true|false``, or AWS's ``network_performance``
("Up to 10 Gigabit" = burstable, "10 Gigabit" = fixed). Lab hosts get ``burstable`` from their
shapers (a credit shaper = burstable).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

#: AWS documents bursts of "up to 60 minutes" for instances with "Up to" network performance
#: (EC2 user guide, "Amazon EC2 instance network bandwidth"): the longest burst to rule out.
LONGEST_DOCUMENTED_BURST_S = 3600.0

Burstability = Literal["burstable", "fixed", "unknown"]


def _gbps(v: Any) -> float | None:
    try:
        return float(v) if v is not None and not isinstance(v, bool) else None
    except (TypeError, ValueError):
        return None


def catalogue_figures(labels: Mapping[str, Any]) -> tuple[float, float] | None:
    """(baseline, peak) Gbit/s from a host's catalogue labels (``baseline_gbps``,
    ``peak_gbps``: DescribeInstanceTypes, see netfleet.cloud.aws.plan.catalogue), None without
    both."""
    base, peak = _gbps(labels.get("baseline_gbps")), _gbps(labels.get("peak_gbps"))
    return None if base is None or peak is None else (base, peak)


#: a level this far (relative) above the catalogue baseline cannot be the baseline: the burst
CATALOGUE_MARGIN = 0.2


def lab_scale(labels: Mapping[str, Any]) -> tuple[float, float] | None:
    """A scaled lab's (rate, time) scales from a run's labels, or None when the run is no
    scaled lab's (no ``lab_scale``, not a positive number, or both scales 1). ``lab_scale``:
    lab rate ÷ cloud rate (a run's cloud rate is its rate ÷ this); ``lab_time_scale``: lab
    duration ÷ cloud duration (the rate scale when absent or unreadable). A label is read as
    a number or its text ("0.05"); anything else — a boolean, several scales joined
    ("0.05,0.1") — is unreadable. The one reader of these labels: every report, the
    analysis and advice ask it."""
    rate = _gbps(labels.get("lab_scale"))
    if rate is None or not rate > 0:
        return None
    time = _gbps(labels.get("lab_time_scale"))
    time = time if time is not None and time > 0 else rate
    return None if rate == 1 and time == 1 else (rate, time)


def lab_rate_scale(labels: Mapping[str, Any]) -> float | None:
    """:func:`lab_scale`'s rate scale, None when the rate is not scaled (1)."""
    scale = lab_scale(labels)
    return None if scale is None or scale[0] == 1 else scale[0]


def _scale(labels: Mapping[str, Any]) -> float:
    return lab_rate_scale(labels) or 1.0


def catalogue_baseline(labels: Iterable[Mapping[str, Any]]) -> tuple[float, float, float] | None:
    """The lowest catalogue baseline of the burstable hosts a run crosses: (bits/s in the run's
    own units, i.e. × ``lab_scale``; Gbit/s as the catalogue says; the scale), or None."""
    found = []
    for x in labels:
        figures = catalogue_figures(x)
        if figures is not None and host_burstability(x) == "burstable":
            found.append((figures[0] * 1e9 * _scale(x), figures[0], _scale(x)))
    return min(found) if found else None


def catalogue_ceiling(labels: Iterable[Mapping[str, Any]]) -> float | None:
    """The highest level (bits/s, the run's units) that can still be the baseline the
    catalogue gives, or None when no host says."""
    base = catalogue_baseline(labels)
    return None if base is None else base[0] * (1 + CATALOGUE_MARGIN)


def still_bursting(level_bps: float | None, labels: Iterable[Mapping[str, Any]]) -> str | None:
    """Why a steady ``level_bps`` (the run's units) is the burst, not the baseline: it lies
    above the catalogue baseline of a burstable host by more than :data:`CATALOGUE_MARGIN`.
    None when it does not, or when no host gives a baseline."""
    labels = list(labels)
    ceiling, base = catalogue_ceiling(labels), catalogue_baseline(labels)
    if ceiling is None or base is None or level_bps is None or level_bps <= ceiling:
        return None
    _, gbps, scale = base
    cloud = level_bps / scale / 1e9
    unit = "" if scale == 1 else f" (cloud units: the lab's ÷ {scale:g})"
    return (
        f"steady {cloud:.3g} Gbit/s{unit} but the catalogue baseline is {gbps:g} Gbit/s: "
        "still in the burst"
    )


def host_burstability(labels: Mapping[str, Any]) -> Burstability:
    """What one host's labels say about its bursts: the ``burstable`` label, else its catalogue
    figures (baseline = peak: no credits), else AWS's ``network_performance`` text."""
    flag = labels.get("burstable")
    if isinstance(flag, bool):
        return "burstable" if flag else "fixed"
    if isinstance(flag, str) and flag.strip().lower() in ("true", "yes", "false", "no"):
        return "burstable" if flag.strip().lower() in ("true", "yes") else "fixed"
    figures = catalogue_figures(labels)
    if figures is not None:
        return "burstable" if figures[1] > figures[0] else "fixed"
    perf = labels.get("network_performance")
    if isinstance(perf, str) and perf.strip():
        return "burstable" if perf.strip().lower().startswith("up to") else "fixed"
    return "unknown"


def full_burst_s(labels: Mapping[str, Any]) -> float | None:
    """How long a full bucket lasts at the peak, σ / (C − ρ), in the host's own seconds: the
    lab's shaper's (label ``lab_burst_s``, set from the lab's shapers), a label ``burst_s``
    (e.g. what ``netfleet analyze`` measured), or ``bucket_gbit`` over ``peak_gbps`` −
    ``baseline_gbps`` (× ``lab_time_scale`` on a scaled lab). None when unknown, or when the
    host is known fixed-rate."""
    if host_burstability(labels) == "fixed":
        return None
    for key in ("lab_burst_s", "burst_s"):
        given = _gbps(labels.get(key))
        if given is not None and given >= 0:
            return given
    bucket, figures = _gbps(labels.get("bucket_gbit")), catalogue_figures(labels)
    if bucket is None or figures is None or figures[1] <= figures[0] or bucket < 0:
        return None
    time = _gbps(labels.get("lab_time_scale"))
    return burst_seconds(bucket, *figures) * (time if time and time > 0 else 1.0)


def burst_seconds(bucket_gbit: float, baseline_gbps: float, peak_gbps: float) -> float:
    """τ: how long a full bucket lasts at peak, σ / (C − ρ) (the calculator's burst time)."""
    return bucket_gbit / (peak_gbps - baseline_gbps)


def fixed_basis(labels: Iterable[Mapping[str, Any]]) -> str:
    """Why hosts known fixed-rate are: catalogue figures where they are the reason."""
    figs = [catalogue_figures(x) for x in labels if not isinstance(x.get("burstable"), bool)]
    known = [f for f in figs if f is not None]
    if known:
        levels = ", ".join(sorted({f"{b:g}" for b, _ in known}))
        return f"catalogue figures: baseline = peak ({levels} Gbit/s), no credits"
    return "host known fixed-rate"


def fleet_burstability(labels: Iterable[Mapping[str, Any]]) -> Burstability:
    """Of the hosts a run crosses: burstable if any is, fixed only if all are known fixed."""
    kinds = [host_burstability(x) for x in labels]
    if "burstable" in kinds:
        return "burstable"
    if kinds and all(k == "fixed" for k in kinds):
        return "fixed"
    return "unknown"


@dataclass(frozen=True)
class MinDuration:
    """The ``min_duration`` an adaptive run uses, and why."""

    seconds: float
    basis: str
    burstability: Burstability


def default_min_duration(
    given: float | None,
    burstability: Burstability,
    maximum: float,
    longest_burst: float | None = None,
    fixed_why: str = "host known fixed-rate",
) -> MinDuration:
    """``given`` (the spec's ``min_duration``) wins; a host known fixed-rate (``fixed_why``
    says how it is known) may stop as soon as the rate is steady; otherwise the run waits for
    ``longest_burst`` (the user's longest plausible burst) or else the longest documented
    burst, capped at the run's maximum (``duration``)."""
    if given is not None:
        return MinDuration(given, "min_duration from the spec", burstability)
    if burstability == "fixed":
        return MinDuration(0.0, f"{fixed_why}: may stop once steady", burstability)
    if longest_burst is not None:
        seconds = min(longest_burst, maximum)
        return MinDuration(
            seconds,
            f"the longest plausible burst given (longest_burst {longest_burst:g} s"
            f"{', capped at duration' if seconds < longest_burst else ''}): a level still flat "
            "after it is steady",
            burstability,
        )
    why = (
        "host labelled burstable"
        if burstability == "burstable"
        else "host burstability unknown (label it burstable: false to allow an early stop), "
        "so assumed burstable"
    )
    seconds = min(LONGEST_DOCUMENTED_BURST_S, maximum)
    return MinDuration(
        seconds,
        f"{why}: wait for the longest documented burst ({LONGEST_DOCUMENTED_BURST_S / 60:.0f} min"
        f"{', capped at duration' if seconds < LONGEST_DOCUMENTED_BURST_S else ''})",
        burstability,
    )


def steady_evidence(
    *,
    drop_seen_at: float | None,
    at_target: bool,
    burstability: Burstability,
    span: float | None,
    longest_burst: float | None = None,
    fixed_why: str = "host known fixed-rate",
) -> str | None:
    """Why a flat level may be called steady, or None when it could still be a burst."""
    if drop_seen_at is not None:
        return f"level drop seen at {drop_seen_at:.1f} s"
    if at_target:
        return "at the known baseline"
    if burstability == "fixed":
        return fixed_why
    if longest_burst is not None and span is not None and span >= longest_burst:
        return (
            f"ran {span:.0f} s, longer than the longest plausible burst given ({longest_burst:g} s)"
        )
    if span is not None and span >= LONGEST_DOCUMENTED_BURST_S:
        return f"ran {span:.0f} s, longer than the longest documented burst"
    return None


def no_drop_text(span: float | None) -> str:
    """The verdict of a flat run without evidence."""
    n = f"{span:.0f}" if span is not None else "?"
    return f"no drop within {n} s (a longer burst is possible)"


def adaptive_verdict(adaptive: Mapping[str, Any]) -> str | None:
    """``notes.adaptive`` of a stored run → None when its level is backed by evidence, else the
    "no drop within N s" text. Older results (no ``steady_evidence`` key) count a drop only."""
    if "steady_evidence" in adaptive:
        if adaptive.get("steady_evidence"):
            return None
        bursting = adaptive.get("still_bursting")
        return bursting if isinstance(bursting, str) else no_drop_text(_span(adaptive))
    if adaptive.get("drop_seen_at_s") is not None or adaptive.get("target_bps"):
        return None
    return no_drop_text(_span(adaptive))


def _span(adaptive: Mapping[str, Any]) -> float | None:
    v = adaptive.get("stopped_at_s")
    return float(v) if isinstance(v, int | float) else None
