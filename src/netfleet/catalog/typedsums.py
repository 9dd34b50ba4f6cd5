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

from contextlib import suppress
from operator import attrgetter
from statistics import median
from typing import Any, cast

import msgspec
from msgspec.structs import astuple

from netfleet.units import MAX_RATE


class Sum(msgspec.Struct, gc=False):
    """One ``sum`` (or ``sum_bidir_reverse``) of an ``intervals`` entry, as iperf3 types it.
    (Numbers only, no cycle: untracked by the garbage collector, whose passes over a task's
    thousands of them cost more than decoding them.)"""

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


class Interval(msgspec.Struct, gc=False):
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


# -- a task's sums at once (import by reference's workers) ------------------------------------
#
# A worker reads a task of files (netfleet.catalog.readtasks.read_task). A file whose sums are
# all plain (every interval has a ``sum``, none a ``sum_bidir_reverse``) has its rows made as if
# its checks find nothing, its checks and sum columns left to the task (:class:`TaskSums`):
# the rate check, :func:`_surely_clean`'s conditions and the columns over every such file's
# sums at once, vectorised. A file the task's checks cannot call clean gets the per-file ones:
# its flags by :func:`flags` (its rows kept when they find nothing) or, when they find
# something or a rate is implausible, the file is read again by the per-file path (its rows
# and reasons as today).


#: a ``sum``'s fields in :class:`Sum`'s order (``msgspec.structs.astuple``)
Row = tuple[Any, ...]


class Deferred:
    """A file whose checks and sum columns wait for its task: its typed sums, where its rows
    go (``segments``: each side's intervals, their ``sum``s and the side its rows are filed
    under, None for the server's intervals a server's own file carries, checked only), its
    read and how to read it again by the per-file path."""

    __slots__ = ("at", "read", "redo", "reverse", "segments", "subject", "typed")

    def __init__(self, typed: Any, segments: list[tuple[list[Interval], list[Row]]]) -> None:
        self.typed = typed
        self.segments: list[tuple[list[Interval], list[Row], str | None]] = [
            (ivs, sums, None) for ivs, sums in segments
        ]
        self.subject = "client"
        self.reverse = False
        self.read: Any = None
        self.redo: Any = None
        self.at = -1


_SUM, _BIDIR = attrgetter("sum"), attrgetter("sum_bidir_reverse")


def plain_segments(
    ivs: list[Interval], server_ivs: list[Interval] | None
) -> list[tuple[list[Interval], list[Row]]] | None:
    """Each side's intervals with their ``sum``s as tuples (:data:`Row`, made while the
    structs are fresh in the cache: half the cost of making them for the task), when every
    interval has a ``sum`` and none a ``sum_bidir_reverse`` (the task's vectorised checks and
    columns); else None."""
    out = []
    for side in (ivs, server_ivs):
        if side is None:
            continue
        sums = list(map(_SUM, side))
        if None in sums or list(map(_BIDIR, side)).count(None) != len(side):
            return None
        out.append((side, list(map(astuple, cast("list[Sum]", sums)))))
    return out


#: a deferred file's verdict: its rows stand (the checks find nothing, surely), its flags must
#: be asked (:func:`flags`), or a rate no link carries (the per-file path refuses it or reads
#: it with the dict decoder)
CLEAN, UNSURE, IMPLAUSIBLE = "clean", "unsure", "implausible"


def unsure_or_implausible(rec: Deferred) -> str:
    """A record's verdict without the task's checks: the rate check of its sums (as
    :func:`plausible`), the others left to its own checks."""
    return UNSURE if all(plausible(ivs) for ivs, _, _ in rec.segments) else IMPLAUSIBLE


class TaskSums:
    """The ``sum``s of a task's deferred files as columns (one Arrow conversion of them all):
    :func:`plausible` and :func:`_surely_clean` over all of them at once (:meth:`verdicts`),
    and their rows as one Arrow table (:meth:`table`), the rows :func:`columns` makes."""

    def __init__(self, records: list[Deferred]) -> None:
        import numpy as np
        import pyarrow as pa

        self.records = records
        flat: list[Row] = []
        lens: list[int] = []
        owner: list[int] = []
        sides: list[str | None] = []
        for n, rec in enumerate(records):
            for _, sums, side in rec.segments:
                flat += sums
                lens.append(len(sums))
                owner.append(n)
                sides.append(side)
        self.rows = len(flat)
        #: the sums as one struct array (None: an int beyond int64 — every file to the checks)
        self.array: Any = None
        with suppress(pa.ArrowException, OverflowError, TypeError):
            self.array = pa.array(flat, type=_struct_type())
        self.lens = np.array(lens, dtype=np.int64)
        self.starts = np.cumsum(self.lens) - self.lens
        self.owner = np.array(owner, dtype=np.int64)
        self.sides = sides
        self.segment = np.repeat(np.arange(len(lens), dtype=np.int64), self.lens)
        self.first = np.zeros(self.rows, dtype=bool)  # each segment's first row
        self.first[self.starts[self.lens > 0]] = True
        self._numbers: dict[str, Any] = {}

    def _floats(self, name: str) -> Any:
        """A column as float64, None as NaN (JSON holds no NaN: msgspec refuses it)."""
        import numpy as np

        if name not in self._numbers:
            values = self.array.field(name).to_numpy(zero_copy_only=False)
            self._numbers[name] = values.astype(np.float64, copy=False)
        return self._numbers[name]

    def _flags(self, name: str) -> tuple[Any, Any]:
        """A boolean column as (its values, where it is None)."""
        import numpy as np

        column = self.array.field(name)
        if not column.null_count:
            return column.to_numpy(zero_copy_only=False), np.zeros(self.rows, dtype=bool)
        values = column.to_pylist()  # some None, some not: rare
        return (
            np.array([v is True for v in values], dtype=bool),
            np.array([v is None for v in values], dtype=bool),
        )

    def verdicts(self) -> list[str]:
        """Each record's verdict: :data:`IMPLAUSIBLE` where :func:`plausible` fails,
        :data:`CLEAN` where :func:`_surely_clean` holds for each of its sides, else
        :data:`UNSURE` — the same comparisons, in the same float64 arithmetic, per row."""
        import numpy as np

        count = len(self.records)
        if not self.rows:
            return [CLEAN] * count
        if self.array is None:  # the rate check per file, the others left to the checks
            return [unsure_or_implausible(rec) for rec in self.records]
        with np.errstate(all="ignore"):
            bps = self._floats("bits_per_second")
            implausible = ~np.isnan(bps) & ~((bps >= 0) & (bps <= MAX_RATE))
            start, end, secs = self._floats("start"), self._floats("end"), self._floats("seconds")
            unsure = np.isnan(start) | np.isnan(end) | np.isnan(secs)  # None: the checks skip it
            unsure |= self._flags("omitted")[0]
            tol = np.maximum(_TOLERANCE * secs, 1e-3)
            unsure |= np.abs((end - start) - secs) > tol
            gap = np.zeros(self.rows, dtype=bool)
            gap[1:] = np.abs(start[1:] - end[:-1]) > tol[1:]
            unsure |= gap & ~self.first
            count_bytes = self._floats("bytes")
            expect = count_bytes * 8 / secs
            most = np.maximum(np.maximum(expect, bps), 1.0)
            unsure |= (
                ~np.isnan(count_bytes)
                & ~np.isnan(bps)
                & (secs > 0)
                & (np.abs(expect - bps) > _TOLERANCE * most)
            )
            verdict = np.zeros(count, dtype=np.int8)  # 0 clean, 1 unsure, 2 implausible
            verdict[self.owner[self.segment[unsure]]] = 1
            verdict[self._long(secs)] = 1
            verdict[self.owner[self.segment[implausible]]] = 2
        names = (CLEAN, UNSURE, IMPLAUSIBLE)
        return [names[v] for v in verdict.tolist()]

    def _long(self, secs: Any) -> list[int]:
        """Records with a side of ≥ 3 intervals one of which may be longer than 1.5 × the
        median: none when the longest is within 1.5 × the shortest (> 0); else the median."""
        import numpy as np

        full = self.lens > 0
        lo = np.minimum.reduceat(secs, self.starts[full])
        hi = np.maximum.reduceat(secs, self.starts[full])
        sure = (lo > 0) & (hi <= _LONG * lo)
        out = []
        for seg in np.flatnonzero(full)[~sure & (self.lens[full] >= 3)].tolist():
            at, size = int(self.starts[seg]), int(self.lens[seg])
            spans = secs[at : at + size]
            if np.isnan(spans).any():
                continue  # unsure already
            usual = median(spans.tolist())
            if usual > 0 and max(spans.tolist()) > _LONG * usual:
                out.append(int(self.owner[seg]))
        return out

    def table(self, keep: list[bool], reverse: list[bool], run_ids: list[str]) -> Any:
        """The ``intervals`` rows (kind ``sum``) of the kept records (clean ones: every sum
        has its start and end), as :func:`columns` makes them: per side filed, the 3.12
        repeat dropped, roles from ``sender`` or the side's default."""
        import numpy as np
        import pyarrow as pa

        from netfleet.catalog.schemas import SCHEMAS

        schema = SCHEMAS["intervals"]
        filed = np.array([side is not None for side in self.sides], dtype=bool)
        wanted = np.array(keep, dtype=bool)[self.owner] & filed
        rows = wanted[self.segment]
        start, end = self._floats("start"), self._floats("end")
        same = np.zeros(self.rows, dtype=bool)
        same[1:] = (start[1:] == start[:-1]) & (end[1:] == end[:-1])
        candidates = np.flatnonzero(same & ~self.first & rows).tolist()
        if candidates:
            byte_counts = self.array.field("bytes")
            for at in candidates:
                if byte_counts[at].as_py() == byte_counts[at - 1].as_py():
                    rows[at] = False  # 3.12 repeats the last interval when the other end goes
        sel = np.flatnonzero(rows)
        count = len(sel)
        seg = self.segment[sel]
        client = np.array([side == "client" for side in self.sides], dtype=bool)[seg]
        forward = client != np.array(reverse, dtype=bool)[self.owner][seg]
        sender, unflagged = self._flags("sender")
        role = np.where(unflagged[sel], forward, sender[sel])
        names = {
            "run_id": pa.array(run_ids, pa.string()).take(self.owner[seg]),
            "side": pa.array(["server", "client"]).take(client.astype(np.int8)),
            "role": pa.array(["receiver", "sender"]).take(role.astype(np.int8)),
            "flow": pa.array(["server_to_client", "client_to_server"]).take(
                (client == role).astype(np.int8)
            ),
            "kind": pa.array(["sum"]).take(np.zeros(count, dtype=np.int8)),
            "stream_id": pa.nulls(count, pa.int64()),
            "idx": pa.array(np.arange(self.rows, dtype=np.int64)[sel] - self.starts[seg]),
            "omitted": pa.array(self._flags("omitted")[0][sel]),
        }
        every = count == self.rows
        for name in (*_INTS, *_FLOATS):
            column = self.array.field(name)
            names[name] = column if every else column.take(sel)
        return pa.table([names[name] for name in schema.names], schema=schema)


def _struct_type() -> Any:
    """:class:`Sum` as an Arrow struct (its fields in order: ``astuple``'s)."""
    import pyarrow as pa

    kinds = {**dict.fromkeys(_INTS, pa.int64()), **dict.fromkeys(_FLOATS, pa.float64())}
    return pa.struct([(name, kinds.get(name, pa.bool_())) for name in Sum.__struct_fields__])
