"""iperf3 ``--json`` output → ``intervals`` and ``ends`` rows: the JSON-only part of the
engine's row parser (:mod:`netfleet.engines.iperf3_rows` re-exports it and adds a text
server's rows): the one builder of an iperf3 run's interval rows (sums, reverse sums,
streams: :func:`interval_columns`) and ``ends`` rows (:func:`end_row`), for every way into the
catalog.

Facts this parser relies on (verified on iperf3 3.12 captures in tests/fixtures/iperf3/):

* The client's JSON is the envelope's ``result``; the server's own JSON is
  ``result.server_output_json`` when the server ran with ``-J``. A text server (adaptive runs
  read it live) gives ``server_output_text``: its ``[SUM]``/stream lines become server-side sum
  rows (bitrate in whole Kbit/s with ``--format k``; bytes derived as rate × seconds).
* Every interval ``sum``/stream entry has a ``sender`` flag: the role of *that* host for that
  series. ``--bidir`` adds ``sum_bidir_reverse`` (the other direction) and mixes both directions'
  streams. Without the flag (old versions) the role is derived: the client sends unless ``-R``.
* ``-O N`` keeps the first intervals with ``omitted: true``; times restart near 0 after them.
* The receiver reports one more, very short interval after the test (≈0.5 ms on loopback).
* Error shapes: ``end`` is ``{}`` and ``error`` is set (refused, busy, server killed); when the
  server dies mid-test 3.12 repeats the last interval verbatim (dropped here); SIGINT keeps the
  partial last interval and an ``end`` whose ``sum_received.bytes`` is 0.
* In ``end``, ``sum_sent``/``sum_received`` are the sender's and the receiver's totals (the
  ``sender`` flag there says whether this host sends the main direction, not a role).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from itertools import compress, repeat
from operator import attrgetter, eq, ne
from statistics import fmean
from typing import Annotated, Any

import msgspec
from msgspec.structs import astuple

from netfleet.values import Columns, as_bool, as_float, as_int, as_str, obj

Row = dict[str, Any]

_INTERVAL_FIELDS_INT = (
    "bytes",
    "retransmits",
    "snd_cwnd",
    "snd_wnd",
    "rtt",
    "rttvar",
    "pmtu",
    "packets",
    "lost_packets",
)
_INTERVAL_FIELDS_FLOAT = ("start", "end", "seconds", "bits_per_second", "lost_percent", "jitter_ms")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_INT64 = Annotated[int, msgspec.Meta(ge=_INT64_MIN, le=_INT64_MAX)]
_CPU = ("host_total", "host_user", "host_system", "remote_total", "remote_user", "remote_system")


def fast_float(value: Any) -> float | None:
    """:func:`~netfleet.values.as_float`, a finite float or None (JSON's common cases) at
    once."""
    if type(value) is float and value - value == 0.0:
        return value
    return None if value is None else as_float(value)


def fast_int(value: Any) -> int | None:
    """:func:`~netfleet.values.as_int`, an int of int64's range or None (JSON's common cases)
    at once."""
    if type(value) is int and _INT64_MIN <= value <= _INT64_MAX:
        return value
    return None if value is None else as_int(value)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


#: an ``intervals`` row's columns, as :func:`interval_columns` makes them
INTERVAL_COLUMNS = ("run_id", "side", "role", "flow", "kind", "stream_id", "idx", "omitted",
                    *_INTERVAL_FIELDS_INT, *_INTERVAL_FIELDS_FLOAT)  # fmt: skip
_NONE = type(None)
_INTS, _FLOATS, _BOOLS = frozenset({int, _NONE}), frozenset({float, _NONE}), frozenset({bool})
_DICTS = frozenset({dict})
_ROLE = {True: "sender", False: "receiver"}
#: the flow of a row by its role, per side: the client sends client→server data; so does a
#: receiving server
_FLOW = {
    "client": {True: "client_to_server", False: "server_to_client"},
    "server": {True: "server_to_client", False: "client_to_server"},
}


#: an interval sum as the import's decoder reads it typed (:func:`netfleet.store.import_iperf3.
#: typed`): each interval column's field, an int64 in an integer column, a float in a float
#: column (a JSON int made one, as the rows and the checks make it) but ``bits_per_second``,
#: a JSON number as it is (a rate refused is quoted as the file has it), ``omitted`` and
#: ``sender`` booleans; null or absent: None, but ``start``, ``end`` and ``bytes``, which a
#: sum must hold. A sum without them or with a value of another type (or beyond a float's
#: range) is not read so (the decoder reads the document as JSON's values instead); a key of
#: another name is skipped (no column). Its fields in iperf3's order (msgspec finds each key
#: at the field it expects).
_FIRST = ("start", "end", "seconds", "bytes", "bits_per_second")
#: the one float field a typed :data:`Sum` keeps as the JSON number it is (an int stays an int)
AS_WRITTEN = "bits_per_second"
_WHOLE = ("start", "end", "bytes")  # what a typed sum must hold


def _sum_field(name: str) -> tuple[Any, ...]:
    """A :data:`Sum` field's msgspec declaration (name, type[, default])."""
    if name in _INTERVAL_FIELDS_FLOAT:
        kind: Any = float | int if name == AS_WRITTEN else float
    else:
        kind = _INT64
    return (name, kind) if name in _WHOLE else (name, kind | None, None)


Sum: type[msgspec.Struct] = msgspec.defstruct(
    "Sum",
    [_sum_field(name) for name in (*_FIRST, *(n for n in _INTERVAL_FIELDS_INT
                                                + _INTERVAL_FIELDS_FLOAT if n not in _FIRST))]
    + [("omitted", bool | None, None), ("sender", bool | None, None)],
    kw_only=True,
    gc=False,
)  # fmt: skip
#: an ``intervals`` entry read typed: its sums (its streams skipped, left in the file)
Interval: type[msgspec.Struct] = msgspec.defstruct(
    "Interval", [("sum", Sum | None, None), ("sum_bidir_reverse", Sum | None, None)], gc=False
)


_SUM, _BACK = attrgetter("sum"), attrgetter("sum_bidir_reverse")
_FIELDS: tuple[str, ...] = Sum.__struct_fields__


class Typed(list[Any]):
    """An ``intervals`` array read typed (:func:`typed_intervals`): its :data:`Interval` s,
    their sums (``sums``) and the sums' fields as columns (``fields``: read once, for the
    checks and the rows alike)."""

    __slots__ = ("fields", "sums")

    def __init__(self, entries: list[Any], sums: list[Any], fields: dict[str, list[Any]]):
        super().__init__(entries)
        self.sums = sums
        self.fields = fields


def typed_intervals(entries: list[Any]) -> Typed | None:
    """Typed intervals (:data:`Interval` s, as the decoder reads them: each sum with its
    ``start``, ``end`` and ``bytes``) as :class:`Typed`, when each holds a ``sum``, and a
    ``sum_bidir_reverse`` in every one or in none; else None (a damaged or hand-made
    document is read as JSON's objects instead: its empty or missing sums are skipped one by
    one)."""
    sums = list(map(_SUM, entries))
    if None in sums or list(map(_BACK, entries)).count(None) not in (0, len(entries)):
        return None
    return Typed(entries, sums, _table(sums))


def _table(sums: list[Any]) -> dict[str, list[Any]]:
    """:data:`Sum` s' fields, a list each, at once: each sum a tuple, the tuples transposed (a
    few C calls, where a pass of attribute reads a field costs more than a dict's)."""
    if not sums:
        return {k: [] for k in _FIELDS}
    return dict(zip(_FIELDS, map(list, zip(*map(astuple, sums), strict=True)), strict=True))


def sum_fields(sums: list[Any]) -> Callable[[str], list[Any]]:
    """The fields of interval sums (JSON objects, or :data:`Sum` s; all of one kind), a list
    a field."""
    if sums and type(sums[0]) is Sum:
        return _table(sums).__getitem__
    return lambda name: list(map(dict.get, sums, repeat(name, len(sums))))


def interval_columns(run_id: str, side: str, doc: Mapping[str, Any], reverse: bool) -> Columns:
    """The ``intervals`` rows of one host's ``intervals`` array, as columns: per interval, the
    ``sum`` (and ``sum_bidir_reverse``) plus one row per stream. Each column is taken from
    the interval objects at once and its values checked a column at a time (a JSON number of
    its type passes as it is; anything else is coerced, or NULL)."""
    forward = (side == "client") != reverse  # the role in the main direction, when unflagged
    entries = _list(doc.get("intervals"))
    if type(entries) is Typed:
        return _typed_columns(run_id, side, entries, forward)
    alone = _sums_alone(entries)
    if alone is not None:
        totals, raw = alone
        n = len(totals)
        return _columns(run_id, side, totals, ["sum"] * n, list(range(n)), [forward] * n, raw)
    parts: list[Mapping[str, Any]] = []
    kinds: list[str] = []
    idxs: list[int] = []
    defaults: list[bool] = []
    previous: tuple[Any, ...] | None = None
    for idx, raw in enumerate(entries):
        entry = raw if type(raw) is dict else obj(raw)  # (obj's common case inline: 60 a run)
        total = entry.get("sum")
        if type(total) is not dict:
            total = obj(total)
        key = (total.get("start"), total.get("end"), total.get("bytes"))
        if total and key == previous:
            continue  # 3.12 repeats the last interval when the other end vanishes
        previous = key
        if total:
            parts.append(total)
            kinds.append("sum")
            idxs.append(idx)
            defaults.append(forward)
        back = entry.get("sum_bidir_reverse")
        if back is not None and (back := obj(back)):
            parts.append(back)
            kinds.append("sum")
            idxs.append(idx)
            defaults.append(not forward)
        streams = entry.get("streams")
        if streams is None:
            continue
        if type(streams) is not list:
            streams = _list(streams)
        if not _DICTS.issuperset(map(type, streams)):
            streams = [s for s in streams if isinstance(s, Mapping)]
        if streams:
            n = len(streams)
            parts += streams
            kinds += ["stream"] * n
            idxs += [idx] * n
            defaults += [forward] * n
    return _columns(run_id, side, parts, kinds, idxs, defaults)


def _sums_alone(entries: list[Any]) -> tuple[list[Any], dict[str, list[Any]]] | None:
    """Each interval's ``sum``, when every interval is an object holding a non-empty ``sum``
    alone (an import by reference's document: its streams left in the file) and none repeats
    the one before it — the rows at once, a few C calls a column — with the columns it read
    (as they are); else None (each interval in turn)."""
    if not _DICTS.issuperset(map(type, entries)) or set(map(len, entries)) - {1}:
        return None
    totals: list[Any] = list(map(dict.get, entries, repeat("sum")))
    if not _DICTS.issuperset(map(type, totals)) or not all(totals):
        return None
    raw = {k: list(map(dict.get, totals, repeat(k))) for k in ("start", "end", "bytes")}
    keys = list(zip(*raw.values(), strict=True))
    return None if any(map(eq, keys, keys[1:])) else (totals, raw)


def _typed_columns(run_id: str, side: str, entries: Typed, forward: bool) -> Columns:
    """:func:`interval_columns` of typed intervals (:class:`Typed`): the rows a column at a
    time, from their fields; an interval repeating the one before it dropped (iperf3 3.12's,
    as the loop does), reverse sums after their interval's sum."""
    sums = entries.sums
    fields = entries.fields
    idxs = list(range(len(sums)))
    start = fields["start"]
    backs: list[Any] = list(map(_BACK, entries))
    if any(map(eq, start, start[1:])):  # (no two starts alike: no repeat, at once)
        keys = list(zip(start, fields["end"], fields["bytes"], strict=True))
        keep = [True, *map(ne, keys[1:], keys)]
        if False in keep:
            sums, backs, idxs = (list(compress(c, keep)) for c in (sums, backs, idxs))
            fields = _table(sums)
    n = len(sums)
    if backs.count(None) == n:
        return _columns(run_id, side, sums, ["sum"] * n, idxs, [forward] * n, fields, True)
    parts = [part for pair in zip(sums, backs, strict=True) for part in pair]
    idxs = [i for i in idxs for _ in (0, 1)]
    return _columns(run_id, side, parts, ["sum"] * 2 * n, idxs, [forward, not forward] * n,
                    _table(parts), True)  # fmt: skip


def _columns(
    run_id: str,
    side: str,
    parts: list[Any],
    kinds: list[str],
    idxs: list[int],
    defaults: list[bool],
    raw: dict[str, list[Any]] | None = None,
    typed: bool = False,
) -> Columns:
    """The rows of ``parts``: JSON objects (``raw``: columns of theirs read already, as they
    are), or :data:`Sum` s (``typed``; ``raw``: their every field; an integer column needs
    no check)."""
    n = len(parts)
    read = raw or {}
    if typed:  # (a field of none but None: a column not held, NULL at once)
        read = {k: v[:] for k, v in read.items() if (v and v[0] is not None) or v.count(None) < n}
        held = set(read)  # (copies: the rows' own, which grow; the document's stay as read)
    else:
        if not _DICTS.issuperset(map(type, parts)):
            parts = [dict(p) for p in parts]
        held = set().union(*parts)  # the keys any part holds: a column of none is NULL at once

    def column(name: str) -> list[Any]:
        if name not in held:
            return [None] * n
        if name in read:
            return read[name]
        return list(map(dict.get, parts, repeat(name, n)))

    flags = column("sender")  # (a typed sum's are booleans or None: one role, at once)
    one = typed and n > 0 and flags[0] is not None and flags.count(flags[0]) == n
    if not one and not _BOOLS.issuperset(map(type, flags)):
        pairs = zip(flags, defaults, strict=True)
        flags = [d if (f := as_bool(v)) is None else f for v, d in pairs]
    omitted = column("omitted")
    if not (typed and omitted.count(False) == n) and not _BOOLS.issuperset(map(type, omitted)):
        omitted = [bool(as_bool(v)) for v in omitted]
    streamed = "stream" in kinds
    sockets = _ints(column("socket")) if streamed else []
    lists: dict[str, list[Any]] = {
        "run_id": [run_id] * n,
        "side": [side] * n,
        "role": [_ROLE[flags[0]]] * n if one else list(map(_ROLE.__getitem__, flags)),
        "flow": [_FLOW[side][flags[0]]] * n if one else list(map(_FLOW[side].__getitem__, flags)),
        "kind": kinds,
        "idx": idxs,
        "omitted": omitted,
    }
    if streamed:
        lists["stream_id"] = [
            s if k == "stream" else None for s, k in zip(sockets, kinds, strict=True)
        ]
    for name in _INTERVAL_FIELDS_INT:  # (a field no part holds: a column not held, NULL)
        if name in held:
            lists[name] = column(name) if typed else _ints(column(name))
    for name in _INTERVAL_FIELDS_FLOAT:  # (a typed sum's are floats already, but its rate)
        if name in held:
            lists[name] = _floats(column(name)) if not typed or name == AS_WRITTEN else read[name]
    return Columns(lists, INTERVAL_COLUMNS)


def _ints(values: list[Any]) -> list[Any]:
    """int64 values or None: as they are when every one is already (the common case, a few C
    calls for the column), else each coerced (:func:`~netfleet.values.as_int`)."""
    types = set(map(type, values))
    if types <= _INTS:
        present = [v for v in values if v is not None] if _NONE in types else values
        if not present or (min(present) >= _INT64_MIN and max(present) <= _INT64_MAX):
            return values
    return [v if v is None or (type(v) is int and _INT64_MIN <= v <= _INT64_MAX) else as_int(v)
            for v in values]  # fmt: skip


def _floats(values: list[Any]) -> list[Any]:
    """Float values or None: as they are when every one is (JSON's floats), else each
    coerced (:func:`~netfleet.values.as_float`)."""
    if _FLOATS.issuperset(map(type, values)):
        return values
    return [v if v is None or type(v) is float else as_float(v) for v in values]


def _own_rtts(streams: list[Any]) -> Row:
    """RTT and cwnd summaries over the streams this host itself sent (others report 0s)."""
    own = [
        s
        for s in (obj(obj(x).get("sender")) for x in streams)
        if as_bool(s.get("sender")) and fast_int(s.get("max_rtt"))
    ]
    if not own:
        return {"min_rtt": None, "mean_rtt": None, "max_rtt": None, "max_snd_cwnd": None}
    mins = [v for v in (fast_int(s.get("min_rtt")) for s in own) if v is not None]
    means = [v for v in (fast_float(s.get("mean_rtt")) for s in own) if v is not None]
    maxes = [v for v in (fast_int(s.get("max_rtt")) for s in own) if v is not None]
    cwnds = [v for v in (fast_int(s.get("max_snd_cwnd")) for s in own) if v is not None]
    return {
        "min_rtt": min(mins) if mins else None,
        "mean_rtt": round(fmean(means)) if means else None,
        "max_rtt": max(maxes) if maxes else None,
        "max_snd_cwnd": max(cwnds) if cwnds else None,
    }


#: an ``ends`` row's columns, in the order :func:`end_row` makes them
END_COLUMNS = ("run_id", "side", "error", "sum_sent_bytes", "sum_sent_bps", "sum_sent_seconds",
               "sum_sent_retransmits", "sum_received_bytes", "sum_received_bps",
               "sum_received_seconds", "sum_sent_bidir_reverse_bytes",
               "sum_sent_bidir_reverse_bps", "sum_sent_bidir_reverse_retransmits",
               "sum_received_bidir_reverse_bytes", "sum_received_bidir_reverse_bps",
               "sender_tcp_congestion", "receiver_tcp_congestion", "jitter_ms", "lost_packets",
               "packets", "lost_percent", "out_of_order", *_CPU, "min_rtt", "mean_rtt",
               "max_rtt", "max_snd_cwnd")  # fmt: skip


def end_row(run_id: str, side: str, doc: Mapping[str, Any]) -> Row:
    """One host's ``end`` summary and ``error``; every column is NULL when ``end`` is empty."""
    return dict(zip(END_COLUMNS, _end_values(run_id, side, doc), strict=True))


def _end_values(run_id: str, side: str, doc: Mapping[str, Any]) -> tuple[Any, ...]:
    end = obj(doc.get("end"))
    sent, received = obj(end.get("sum_sent")), obj(end.get("sum_received"))
    back_sent = obj(end.get("sum_sent_bidir_reverse"))
    back_received = obj(end.get("sum_received_bidir_reverse"))
    cpu = obj(end.get("cpu_utilization_percent"))
    udp = obj(end.get("sum")) or received  # 3.12 UDP: `sum` holds the receiver's jitter and loss
    streams = _list(end.get("streams"))
    out_of_order = [  # (a stream without ``udp``: None, as no out_of_order)
        fast_int(obj(obj(s).get("udp")).get("out_of_order"))
        for s in streams
        if type(s) is not dict or "udp" in s
    ]
    return (
        run_id,
        side,
        as_str(doc.get("error")),
        fast_int(sent.get("bytes")),
        fast_float(sent.get("bits_per_second")),
        fast_float(sent.get("seconds")),
        fast_int(sent.get("retransmits")),
        fast_int(received.get("bytes")),
        fast_float(received.get("bits_per_second")),
        fast_float(received.get("seconds")),
        fast_int(back_sent.get("bytes")),
        fast_float(back_sent.get("bits_per_second")),
        fast_int(back_sent.get("retransmits")),
        fast_int(back_received.get("bytes")),
        fast_float(back_received.get("bits_per_second")),
        as_str(end.get("sender_tcp_congestion")),
        as_str(end.get("receiver_tcp_congestion")),
        fast_float(udp.get("jitter_ms")),
        fast_int(udp.get("lost_packets")),
        fast_int(udp.get("packets")),
        fast_float(udp.get("lost_percent")),
        sum(v for v in out_of_order if v is not None)
        if any(v is not None for v in out_of_order)
        else None,
        *[fast_float(cpu.get(name)) for name in _CPU],
        *_own_rtts(streams).values(),
    )
