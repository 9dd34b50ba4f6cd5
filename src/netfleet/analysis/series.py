"""The receiver-side interval series of a run, and the run's context.

Rows come from :func:`netfleet.catalog.envelope_rows` (a raw file) or from the catalog's
``intervals`` view: both have the same columns, so one selection serves both. The truthful series
for shaping is the receiver's (FIELD-NOTES): the server's JSON in a normal test, the client's in
``--reverse``. Streams are already summed in the ``sum`` rows. Omitted (``-O``) intervals are
left out of the series but their time and bytes are kept as a *lead*: the bucket drained during
them too. Intervals shorter than half the reporting interval (the receiver's trailing stub, a
partial last interval after SIGINT) are dropped, and so is an interval repeated verbatim
(iperf3 3.12 repeats its last one when the other end goes away; a text server's report too).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from netfleet.analysis.stats import FloatArray
from netfleet.catalog import envelope_rows
from netfleet.units import MAX_RATE, fmt_rate, plausible_rate

Side = Literal["receiver", "sender"]
#: intervals shorter than this fraction of the reporting interval are not measurements
STUB_FRACTION = 0.5


class SeriesUnavailable(Exception):
    """The run has no usable series; ``str(exc)`` says why (the analysis turns it into an
    *inconclusive* result, never into a number)."""


def _labels(value: Any) -> dict[str, Any]:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, str) and value:
        decoded = json.loads(value)
        return dict(decoded) if isinstance(decoded, dict) else {}
    return {}


@dataclass(frozen=True)
class RunInfo:
    """What the analysis needs to know about a run (a ``runs`` row of the catalog)."""

    run_id: str
    campaign: str | None = None
    test: str | None = None
    status: str | None = None
    reason: str | None = None
    direction: str | None = None
    subject: str | None = None
    labels: dict[str, Any] = field(default_factory=dict)
    protocol: str | None = None
    parallel: int | None = None
    bidir: bool = False
    mtu: int | None = None
    interval: float = 1.0
    source: str = ""
    row: dict[str, Any] = field(default_factory=dict, repr=False)
    #: the engine's and runner's notes (``notes.adaptive`` of an adaptive run, …)
    notes: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> RunInfo:
        mtus = [m for m in (row.get("client_mtu"), row.get("server_mtu")) if m]
        return cls(
            run_id=str(row["run_id"]),
            campaign=row.get("campaign"),
            test=row.get("test"),
            status=row.get("status"),
            reason=row.get("reason") or row.get("error"),
            direction=row.get("direction"),
            subject=row.get("subject"),
            labels=_labels(row.get("labels")),
            protocol=row.get("protocol"),
            parallel=row.get("parallel"),
            bidir=bool(row.get("bidir")) or row.get("direction") == "bidir",
            mtu=int(min(mtus)) if mtus else None,
            interval=float(row.get("interval") or 1.0),
            source=str(row.get("source") or ""),
            row={k: v for k, v in row.items() if k not in ("params", "labels", "notes")},
            notes=_labels(row.get("notes")),
        )

    def key(self, name: str) -> Any:
        """A runs column (``direction``, ``test``, ...) or else a label (``instance_type``)."""
        if name.startswith("label:"):
            return self.labels.get(name.removeprefix("label:"))
        if name in self.row:
            return self.row[name]
        return self.labels.get(name)


@dataclass(frozen=True)
class Series:
    """Per-interval received bits of one run. Times are seconds from the start of the measured
    period (after any omitted intervals); :meth:`times` adds the lead back."""

    start: FloatArray
    end: FloatArray
    bits: FloatArray
    interval: float = 1.0
    side: Side = "receiver"
    flow: str | None = None
    lead_seconds: float = 0.0
    lead_bits: float = 0.0
    omitted: int = 0
    stubs: int = 0
    notes: tuple[str, ...] = ()

    @classmethod
    def from_rates(
        cls,
        rates: Sequence[float] | FloatArray,
        interval: float = 1.0,
        **kwargs: Any,
    ) -> Series:
        """A series of back-to-back intervals with the given rates (bits/s): for tests,
        calculators and other engines."""
        r = np.asarray(rates, dtype=np.float64)
        start = np.arange(r.size, dtype=np.float64) * interval
        return cls(start, start + interval, r * interval, interval, **kwargs)

    @property
    def n(self) -> int:
        return int(self.bits.size)

    @property
    def seconds(self) -> FloatArray:
        return self.end - self.start

    @property
    def rate(self) -> FloatArray:
        """Bits per second of each interval."""
        return self.bits / np.maximum(self.seconds, 1e-9)

    def times(self) -> FloatArray:
        """End of each interval, in seconds since the test began (omitted lead included)."""
        return self.lead_seconds + self.end

    def cumulative(self) -> FloatArray:
        """A(t) at :meth:`times`: bits received since the test began (lead included)."""
        return self.lead_bits + np.cumsum(self.bits)

    @property
    def duration(self) -> float:
        return float(self.lead_seconds + (self.end[-1] if self.n else 0.0))


def _pick_flow(run: RunInfo, flows: set[str], flow: str | None) -> str:
    if flow is not None:
        if flow not in flows:
            raise SeriesUnavailable(
                f"no {flow} series in run {run.run_id} (it has: {', '.join(sorted(flows))})"
            )
        return flow
    if len(flows) == 1:
        return next(iter(flows))
    # --bidir: the subject's own sending direction unless asked otherwise
    return "client_to_server" if run.subject != "server" else "server_to_client"


def series_from_rows(
    run: RunInfo, rows: Iterable[Mapping[str, Any]], flow: str | None = None
) -> Series:
    """Select the receiver's ``sum`` series of one run from its interval rows (catalog columns).
    Falls back to the sender's series, with a note, when the receiver's is missing (a server
    without ``-J``). Raises :class:`SeriesUnavailable` when there is nothing to analyse."""
    sums = [r for r in rows if r.get("kind") == "sum" and r.get("bytes") is not None]
    if not sums:
        why = f"run {run.status}" + (f": {run.reason}" if run.reason else "")
        raise SeriesUnavailable(f"no intervals in the result ({why})")
    notes: list[str] = []
    side: Side = "receiver"
    chosen = [r for r in sums if r.get("role") == "receiver"]
    if not chosen:
        side = "sender"
        chosen = [r for r in sums if r.get("role") == "sender"]
        notes.append(
            "no receiver series (server without -J?): using the sender's, whose bytes include "
            "data still in the socket buffer (bucket estimates from it ran 2–6 % high)"
        )
    flows = {str(r.get("flow")) for r in chosen}
    picked = _pick_flow(run, flows, flow)
    if len(flows) > 1:
        notes.append(f"--bidir run: analysing the {picked} series")
    chosen = sorted((r for r in chosen if str(r.get("flow")) == picked), key=lambda r: r["idx"])
    lead_s = lead_b = 0.0
    omitted = stubs = 0
    kept: list[Mapping[str, Any]] = []
    repeats = impossible = 0
    for r in chosen:
        seconds = float(r.get("seconds") or 0.0)
        if kept and (r.get("start"), r.get("end")) == (kept[-1].get("start"), kept[-1].get("end")):
            repeats += 1  # 3.12 repeats its last interval when the other end goes away
        elif not plausible_row(r):
            impossible += 1
        elif r.get("omitted"):
            omitted += 1
            lead_s += seconds
            lead_b += 8.0 * float(r["bytes"])
        elif seconds < STUB_FRACTION * run.interval:
            stubs += 1
        else:
            kept.append(r)
    if omitted:
        notes.append(
            f"{omitted} omitted intervals (-O, {lead_s:.1f} s) are left out of the series but "
            "counted in A(t): the bucket drained during them too"
        )
    if repeats:
        notes.append(f"{repeats} repeated interval(s) dropped (the same start and end twice)")
    if impossible:
        notes.append(
            f"{impossible} interval(s) with a rate no link can carry (NaN, infinite, negative or "
            f"above {fmt_rate(MAX_RATE)}: a broken or forged result) left out"
        )
    if not kept:
        raise SeriesUnavailable(f"no measured intervals ({omitted} omitted, {stubs} stubs)")
    return Series(
        start=np.array([float(r["start"]) for r in kept]),
        end=np.array([float(r["end"]) for r in kept]),
        bits=np.array([8.0 * float(r["bytes"]) for r in kept]),
        interval=run.interval,
        side=side,
        flow=picked,
        lead_seconds=lead_s,
        lead_bits=lead_b,
        omitted=omitted,
        stubs=stubs,
        notes=tuple(notes),
    )


def plausible_row(row: Mapping[str, Any]) -> bool:
    """An interval row whose rate — as stored, and as its bytes over its seconds — a link can
    carry (:func:`netfleet.units.plausible_rate`); the catalog's ``intervals`` view already
    leaves out rows whose stored rate is impossible, a raw file's rows are checked here."""
    bps = row.get("bits_per_second")
    if bps is not None and not plausible_rate(bps):
        return False
    seconds = float(row.get("seconds") or 0.0)
    return not seconds > 0 or plausible_rate(8.0 * float(row["bytes"]) / seconds)


def run_from_envelope(
    doc: Mapping[str, Any], source: str = ""
) -> tuple[RunInfo, list[dict[str, Any]]]:
    """The run's context and its interval rows, from a decoded raw file."""
    rows = envelope_rows(doc, source)
    run = dict(rows.run)
    for end in rows.ends:  # the sending iperf3's CPU, as the catalog's runs query gives it
        if end.get("side") == "client":
            run["end_host_cpu"], run["end_remote_cpu"] = (
                end.get("host_total"),
                end.get("remote_total"),
            )
    return RunInfo.from_row(run), rows.intervals.rows()
