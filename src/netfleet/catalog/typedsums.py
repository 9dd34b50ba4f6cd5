"""An iperf3 document's interval sums decoded into typed structs (msgspec), for the common
case of import by reference: a third faster to decode than dicts, their columns read off the
structs, and the interval checks asked only where they may find something.

Exactness is the rule: whatever this module cannot decide the way the dict path does, it hands
back to it.

* The decode is typed: a sum whose field has another JSON type than iperf3 writes (a string
  rate, a float byte count, a ``0``/``1`` flag) fails it, and the caller reads the file with
  the dict decoder (:func:`netfleet.catalog.onepass.selective`) and the import's own checks.
* A rate no link can carry, anywhere in the sums, hands the file back too (the dict path's
  checks name the first field at fault, in their order).
* The interval checks (:func:`netfleet.store.import_iperf3.check_intervals`) run on a dict
  view of a side's sums only when :func:`_surely_clean` cannot tell that they find nothing —
  its conditions are the checks' own, with no tolerance of its own; any interval without a
  start, end or length, or omitted, sends the side to the checks.
* The columns are those :func:`netfleet.engines.iperf3_rows.sum_columns` makes from dicts
  (tests/test_import_reference.py compares the rows over every captured output).
"""

from __future__ import annotations

from statistics import median
from typing import Any

import msgspec
from msgspec.structs import astuple

from netfleet.units import MAX_RATE


class Sum(msgspec.Struct):
    """One ``sum`` (or ``sum_bidir_reverse``) of an ``intervals`` entry, as iperf3 types it."""

    start: float | None = None
    end: float | None = None
    seconds: float | None = None
    bytes: int | None = None
    bits_per_second: float | None = None
    retransmits: int | None = None
    snd_cwnd: int | None = None
    snd_wnd: int | None = None
    rtt: int | None = None
    rttvar: int | None = None
    pmtu: int | None = None
    packets: int | None = None
    lost_packets: int | None = None
    lost_percent: float | None = None
    jitter_ms: float | None = None
    omitted: bool | None = None
    sender: bool | None = None


class Interval(msgspec.Struct):
    sum: Sum | None = None
    sum_bidir_reverse: Sum | None = None


INTERVALS = msgspec.json.Decoder(list[Interval])


class Document(msgspec.Struct, forbid_unknown_fields=True):
    """An iperf3 ``-J`` document with no top-level key but iperf3's own and the label keys a
    script may add (:data:`netfleet.store.import_labels.KNOWN_KEYS`), decoded in one pass; a
    document with any other key fails it (and is read with every key kept, in two passes)."""

    start: Any = msgspec.UNSET
    intervals: list[Interval] | msgspec.UnsetType = msgspec.UNSET
    end: Any = msgspec.UNSET
    error: Any = msgspec.UNSET
    server_output_json: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    server_output_text: Any = msgspec.UNSET
    instanceType: Any = msgspec.UNSET
    instance_type: Any = msgspec.UNSET
    region: Any = msgspec.UNSET
    availabilityZone: Any = msgspec.UNSET
    availability_zone: Any = msgspec.UNSET
    zone: Any = msgspec.UNSET
    cloud: Any = msgspec.UNSET
    provider: Any = msgspec.UNSET


DOCUMENT = msgspec.json.Decoder(Document)
_INTS = ("bytes", "retransmits", "snd_cwnd", "snd_wnd", "rtt", "rttvar", "pmtu", "packets",
         "lost_packets")  # fmt: skip
_FLOATS = ("start", "end", "seconds", "bits_per_second", "lost_percent", "jitter_ms")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
#: the interval checks' constants (netfleet.store.import_base)
_TOLERANCE = 0.01
_LONG = 1.5


def _empty(s: Sum | None) -> bool:
    """A sum the dict path would see as an empty object (or none)."""
    if s is None:
        return True
    if s.start is not None or s.bits_per_second is not None:  # the common case, at once
        return False
    return all(getattr(s, f) is None for f in s.__struct_fields__)


def plausible(intervals: list[Interval]) -> bool:
    """Every ``sum.bits_per_second`` is a rate a link can carry (the dict path's rate check
    covers ``sum`` only, as here)."""
    for iv in intervals:
        s = iv.sum
        rate = None if s is None else s.bits_per_second
        if rate is not None and not 0 <= rate <= MAX_RATE:
            return False
    return True


def flags(intervals: list[Interval], side: str) -> list[dict[str, Any]]:
    """:func:`~netfleet.store.import_iperf3.check_intervals`' findings for one side's
    intervals: none when :func:`_surely_clean` says so, else the checks' own."""
    if _surely_clean(intervals):
        return []
    from netfleet.store.import_iperf3 import check_intervals

    view = {
        "intervals": [
            {"sum": msgspec.structs.asdict(iv.sum)} if iv.sum is not None else {}
            for iv in intervals
        ]
    }
    return check_intervals(view, side)


def _surely_clean(intervals: list[Interval]) -> bool:
    """True only when the interval checks find nothing: each sum has a start, end and length,
    none is omitted, lengths agree with start and end, each starts where the previous ended,
    rates agree with bytes, and none is longer than 1.5 × the median. (The checks' own
    ``max``es spelled as comparisons, in this file's hottest loop; a length that is not a
    number, which no JSON holds, is left to the checks.)"""
    prev_end: float | None = None
    spans: list[float] = []
    for iv in intervals:
        s = iv.sum
        if s is None:
            continue
        start, end, secs = s.start, s.end, s.seconds
        if start is None or end is None or secs is None:
            continue  # the checks skip it too (not a finding, not the previous interval)
        if s.omitted or secs != secs:
            return False  # -O restarts the clock: the checks' own logic decides
        tol = _TOLERANCE * secs
        if tol < 1e-3:
            tol = 1e-3
        if abs((end - start) - secs) > tol:
            return False
        if prev_end is not None and abs(start - prev_end) > tol:
            return False
        count, bps = s.bytes, s.bits_per_second
        if count is not None and bps is not None and secs > 0:
            expect = float(count) * 8 / secs
            most = bps if bps > expect else expect
            if abs(expect - bps) > _TOLERANCE * (most if most > 1.0 else 1.0):
                return False
        spans.append(secs)
        prev_end = end
    if len(spans) >= 3:
        usual = median(spans)
        if usual > 0 and max(spans) > _LONG * usual:
            return False
    return True


def columns(
    run_id: str, side: str, intervals: list[Interval], reverse: bool, into: dict[str, list[Any]]
) -> None:
    """The ``kind = 'sum'`` rows of :func:`netfleet.engines.iperf3_rows.sum_columns`, from
    typed sums: the same 3.12 repeat dropped, the same roles, flows and values."""
    forward_sender = (side == "client") != reverse
    previous: tuple[Any, ...] | None = None
    sums: list[Sum] = []
    idxs: list[int] = []
    backs: list[int] = []  # positions in ``sums`` of the ``sum_bidir_reverse`` entries
    for idx, iv in enumerate(intervals):
        total = iv.sum
        if total is not None and (
            total.start is not None or total.bits_per_second is not None or not _empty(total)
        ):
            key = (total.start, total.end, total.bytes)
            if key == previous:
                continue
            previous = key
            sums.append(total)
            idxs.append(idx)
        else:
            previous = (None, None, None)
        back = iv.sum_bidir_reverse
        if back is not None and not _empty(back):
            backs.append(len(sums))
            sums.append(back)
            idxs.append(idx)
    if not sums:
        return
    count = len(sums)
    fields = dict(zip(Sum.__struct_fields__, zip(*map(astuple, sums)), strict=True))  # noqa: B905
    senders = fields["sender"]
    if not backs and senders.count(None) == count:  # no sum says its role: one for all
        roles: list[bool] = [forward_sender] * count
    else:
        defaults = [forward_sender] * count
        for at in backs:
            defaults[at] = not forward_sender
        roles = [d if v is None else v for d, v in zip(defaults, senders, strict=True)]
    into["run_id"] += [run_id] * count
    into["side"] += [side] * count
    into["role"] += ["sender" if r else "receiver" for r in roles]
    into["flow"] += [
        "client_to_server" if (side == "client") == r else "server_to_client" for r in roles
    ]
    into["kind"] += ["sum"] * count
    into["stream_id"] += [None] * count
    into["idx"] += idxs
    omitted = fields["omitted"]
    into["omitted"] += [v is True for v in omitted] if True in omitted else [False] * count
    for name in _INTS:
        into[name] += _int64s(fields[name])
    for name in _FLOATS:
        into[name] += fields[name]


def _int64s(values: tuple[Any, ...]) -> Any:
    """The values, those Parquet's int64 cannot hold as None (the dict path's rule); the common
    columns — all None, or none None and all in range — without a Python loop."""
    nones = values.count(None)
    if nones == len(values) or (
        not nones and min(values) >= _INT64_MIN and max(values) <= _INT64_MAX
    ):
        return values
    return [v if v is None or _INT64_MIN <= v <= _INT64_MAX else None for v in values]
