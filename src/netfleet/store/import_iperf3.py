"""iperf3 JSON (``-J`` or ``--json-stream``, client or server side) → an imported envelope.

A server-side file is catalogued from the server's side: its document goes to
``result.server_output_json`` (where netfleet keeps a server's JSON), beside the ``start``
object, so the catalog labels its rows ``side = server`` and the receiver is the host that
received. ``direction`` is relative to the subject (the host whose output it is).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from itertools import compress, repeat
from operator import contains, sub
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from netfleet.iperf3json import AS_WRITTEN, Interval, Typed, sum_fields, typed_intervals
from netfleet.store.import_base import (
    TOLERANCE,
    ImportProblem,
    direction_of,
    imported_envelope,
    long_interval_flags,
    provenance,
    rate_flag,
    rates_off,
    stamp,
)
from netfleet.store.import_labels import merge_file_labels
from netfleet.units import MAX_RATE, plausible_rate

if TYPE_CHECKING:
    from netfleet.store.envelope import Envelope

# the engines (spec_params), pydantic (the envelope) and pydantic_core (jsonparse) are loaded
# where they are used: import by reference reads an iperf3 document with none of them


class _Sums(msgspec.Struct):
    """An ``intervals`` entry as a document without its streams holds it, as JSON's objects:
    its sums."""

    sum: dict[str, Any] | None = None
    sum_bidir_reverse: dict[str, Any] | None = None


class _Document(msgspec.Struct, forbid_unknown_fields=True):
    """An iperf3 document of iperf3's own top-level keys only, read in one pass: its
    ``intervals`` as their typed sums (:data:`netfleet.iperf3json.Interval`, the streams
    skipped unparsed), its ``server_output_json`` raw (read the same way), every other key
    whole; a key absent stays :data:`UNSET`."""

    start: Any = msgspec.UNSET
    intervals: list[Interval] | msgspec.UnsetType = msgspec.UNSET  # type: ignore[valid-type]
    end: Any = msgspec.UNSET
    error: Any = msgspec.UNSET
    server_output_json: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET


_DOCUMENT = msgspec.json.Decoder(_Document)
_TOP = msgspec.json.Decoder(dict[str, msgspec.Raw])
_TYPED = msgspec.json.Decoder(list[Interval])  # type: ignore[valid-type]
_SUMS = msgspec.json.Decoder(list[_Sums])
_ANY = msgspec.json.Decoder()
_REFUSED = (msgspec.DecodeError, msgspec.ValidationError, RecursionError, UnicodeDecodeError)


def decode(data: bytes, *, streams: bool = True) -> dict[str, Any]:
    """iperf3 JSON (one document, or --json-stream lines) → the ``-J`` document shape,
    shape-checked (:func:`checked_shape`). ``streams=False``: each interval's sums only
    (:func:`typed`)."""
    return checked_shape(parse(data, streams=streams))


def parse(data: bytes, *, streams: bool = True) -> dict[str, Any]:
    """iperf3 JSON → the ``-J`` document shape, unchecked: the one decoder of iperf3 files.
    :func:`typed` reads it; what that refuses (NaN or a number out of range, a lone
    surrogate, nesting too deep, --json-stream lines, broken JSON) is read by the tolerant
    decoder (``jsonparse.loads_storable``, the standard library's values where both read),
    which words the refusal of what it refuses too."""
    doc = typed(data, streams=streams)
    return doc if doc is not None else _tolerant(data)


def typed(data: bytes, *, streams: bool = True) -> dict[str, Any] | None:
    """An iperf3 document decoded by msgspec (JSON's values, as the tolerant decoder gives
    them), or None when msgspec does not read it as one. ``streams=False``: every top-level
    key whole, but of ``intervals`` (the client's, and the server's in
    ``server_output_json``) only each entry's ``sum`` and ``sum_bidir_reverse``: the
    per-stream entries — nine tenths of a ``-P 10`` file — are skipped unparsed."""
    if data.lstrip()[:1] != b"{":
        return None
    try:
        if streams:
            doc = _ANY.decode(data)
            return doc if isinstance(doc, dict) and "start" in doc else None
        out = _sums_only(data)
    except _REFUSED:
        return None
    return out if "start" in out else None


def _sums_only(data: bytes | msgspec.Raw, top: bool = True) -> dict[str, Any]:
    """A document (``top``; else its ``server_output_json``, whose own is kept whole) with its
    intervals' sums only, typed (:func:`~netfleet.iperf3json.typed_intervals`: no dict a sum, each
    field of its column's type) or else as JSON's objects: in one pass when it holds iperf3's
    own keys only and its sums read typed (a scan of the top level as raw parts, then of the
    intervals again, was a sixth of a file's CPU); else (a script's own keys beside them, kept
    whole; a sum not read typed) each top-level key's raw part decoded."""
    try:
        one = _DOCUMENT.decode(data)
    except msgspec.ValidationError:
        one = None
    intervals: Any = None if one is None else one.intervals
    if intervals is not msgspec.UNSET and intervals is not None:
        intervals = typed_intervals(intervals)
    if one is None or intervals is None:
        return {k: _part(k, raw, top) for k, raw in _TOP.decode(data).items()}
    out = {}
    for key in _DOCUMENT_KEYS:
        value = intervals if key == "intervals" else getattr(one, key)
        if value is msgspec.UNSET:
            continue
        if key == "server_output_json":
            value = _sums_only(value, False) if top else _ANY.decode(value)
        out[key] = value
    return out


_DOCUMENT_KEYS = _Document.__struct_fields__


def _part(key: str, raw: msgspec.Raw, top: bool) -> Any:
    if key == "server_output_json" and top:
        return _sums_only(raw, False)
    if key == "intervals":
        try:
            read = typed_intervals(_TYPED.decode(raw))
        except msgspec.ValidationError:
            read = None
        return read if read is not None else _sums(_SUMS.decode(raw))
    return _ANY.decode(raw)


def _sums(intervals: list[_Sums]) -> list[dict[str, Any]]:
    """Each interval as an object of the sums it holds (a ``sum`` alone, the common case,
    inline: a call an interval was a fifth of it)."""
    return [
        {"sum": iv.sum} if iv.sum_bidir_reverse is None and iv.sum is not None else _held(iv)
        for iv in intervals
    ]


def _held(iv: _Sums) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if iv.sum is not None:
        out["sum"] = iv.sum
    if iv.sum_bidir_reverse is not None:
        out["sum_bidir_reverse"] = iv.sum_bidir_reverse
    return out


def _tolerant(data: bytes) -> dict[str, Any]:
    from netfleet.jsonparse import Unstorable, loads_storable

    text = data.decode("utf-8", errors="strict")
    stripped = text.strip()
    if not stripped:
        raise ImportProblem("empty file")
    try:
        doc = loads_storable(stripped)
    except Unstorable as exc:
        raise ImportProblem(str(exc)) from None
    except json.JSONDecodeError as exc:
        lines = [ln for ln in stripped.splitlines() if ln.strip()]
        if len(lines) > 1 and lines[0].lstrip().startswith('{"event"'):
            return _from_stream(lines)
        if not stripped.endswith("}"):  # iperf3's document always ends with its "}"
            raise ImportProblem(
                f"truncated JSON: the file ends at byte {len(data)} in the middle of the "
                "document (iperf3 killed, or the copy was cut)"
            ) from exc
        raise ImportProblem(f"not JSON: {exc.msg} at line {exc.lineno} col {exc.colno}") from exc
    if not isinstance(doc, dict) or "start" not in doc:
        raise ImportProblem("not iperf3 JSON output (no 'start' object)")
    return doc


def _from_stream(lines: list[str]) -> dict[str, Any]:
    from netfleet.jsonparse import Unstorable, loads_storable

    doc: dict[str, Any] = {"intervals": []}
    for n, line in enumerate(lines, 1):
        try:
            ev = loads_storable(line)
        except Unstorable as exc:
            raise ImportProblem(f"--json-stream line {n}: {exc}") from None
        except json.JSONDecodeError as exc:
            raise ImportProblem(
                f"--json-stream line {n} is not JSON ({exc.msg}); truncated stream?"
            ) from exc
        if not isinstance(ev, dict):
            raise ImportProblem(f"--json-stream line {n} is not an event object")
        kind, data = ev.get("event"), ev.get("data")
        if kind == "interval":
            doc["intervals"].append(data)
        elif kind in ("start", "end", "error", "server_output_json"):
            doc[kind] = data
    if "start" not in doc:
        raise ImportProblem("--json-stream without a 'start' event")
    if "end" not in doc and "error" not in doc:
        raise ImportProblem("--json-stream ends before its 'end' event (truncated)")
    return doc


#: (field path, the JSON type it must have when present)
_SHAPE: tuple[tuple[tuple[str, ...], type], ...] = (
    (("start",), dict),
    (("start", "timestamp"), dict),
    (("start", "test_start"), dict),
    (("start", "connecting_to"), dict),
    (("start", "accepted_connection"), dict),
    (("end",), dict),
    (("end", "sum_received"), dict),
    (("end", "sum"), dict),
    (("intervals",), list),
    (("server_output_json",), dict),
)
_TYPE_NAMES: dict[type, str] = {dict: "an object", list: "a list"}
#: the latest plausible start (2100-01-01) and the longest plausible run (iperf3's -t is at
#: most a day; ten allow for -O and a slow end)
LAST_EPOCH = 4_102_444_800
LONGEST_RUN = 10 * 86_400


def checked_shape(doc: dict[str, Any]) -> dict[str, Any]:
    """Refuse a document whose objects are of the wrong type or whose times are not plausible
    numbers (NaN, infinite, negative, past 2100): each reason names the field."""
    if not _plain_shape(doc):
        _check_shape(doc)
    start = doc.get("start") or {}
    secs = (start.get("timestamp") or {}).get("timesecs")
    _plausible("start.timestamp.timesecs", secs, LAST_EPOCH, "a time")
    end = doc.get("end") or {}
    for key in ("sum_received", "sum"):
        _plausible(f"end.{key}.end", (end.get(key) or {}).get("end"), LONGEST_RUN, "a duration")
    duration = (start.get("test_start") or {}).get("duration")
    _plausible("start.test_start.duration", duration, LONGEST_RUN, "a duration")
    _check_rates(doc, "")
    server = doc.get("server_output_json")
    if isinstance(server, dict):
        _check_rates(server, "server_output_json.")
    return doc


def _check_shape(doc: dict[str, Any]) -> None:
    for path, kind in _SHAPE:
        node: Any = doc
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        if node is not None and not isinstance(node, kind):
            raise ImportProblem(
                f"{'.'.join(path)} is {type(node).__name__} {str(node)[:32]!r}, "
                f"not {_TYPE_NAMES[kind]}: not iperf3 output"
            )


def _plain_shape(doc: dict[str, Any]) -> bool:
    """:func:`_check_shape` finds nothing, surely (each of :data:`_SHAPE`'s fields absent,
    null or a plain dict or list): at once, without walking its paths; False: ask it."""
    start, end = doc.get("start"), doc.get("end")
    if type(start) is not dict or (end is not None and type(end) is not dict):
        return False
    for key in ("timestamp", "test_start", "connecting_to", "accepted_connection"):
        if (value := start.get(key)) is not None and type(value) is not dict:
            return False
    if end is not None:
        for key in ("sum_received", "sum"):
            if (value := end.get(key)) is not None and type(value) is not dict:
                return False
    intervals, server = doc.get("intervals"), doc.get("server_output_json")
    return (intervals is None or type(intervals) in (list, Typed)) and (
        server is None or type(server) is dict
    )


def _objects(intervals: list[Any]) -> list[dict[str, Any]]:
    """The intervals, each an object: one that is not (a hand-made file) as an empty one."""
    if _DICTS.issuperset(map(type, intervals)):  # (JSON's: at once)
        return intervals
    return [iv if isinstance(iv, dict) else {} for iv in intervals]


def _check_rates(doc: dict[str, Any], where: str) -> None:
    """Every interval's and end sum's ``bits_per_second`` is a rate a link can have: every
    interval part's rate at once when all are plain floats in range (the common case), else
    each one by :func:`check_rate`, which words the refusal of the first out of range."""
    intervals = doc.get("intervals") or []
    if type(intervals) is Typed:  # (its sums' rates read already)
        rates = intervals.fields["bits_per_second"]
    else:
        rates = sum_fields(_parts(intervals))("bits_per_second")
    if not _FLOATS.issuperset(map(type, rates)) or (
        rates and not (min(rates) >= 0.0 and max(rates) <= MAX_RATE)
    ):
        _word_rates(intervals, where)
    end = doc.get("end")
    if isinstance(end, dict):
        for key, part in end.items():
            if key.startswith("sum") and isinstance(part, dict):
                check_rate(f"{where}end.{key}.bits_per_second", part.get("bits_per_second"))


def _parts(intervals: list[Any]) -> list[dict[str, Any]]:
    """The interval parts (each interval's sum and streams) that are JSON objects."""
    parts: list[Any]
    if _DICTS.issuperset(map(type, intervals)) and not any(
        map(contains, intervals, repeat("streams"))
    ):  # (sums only: at once)
        parts = list(map(dict.get, intervals, repeat("sum")))
    else:
        parts = []
        for iv in intervals:
            if isinstance(iv, dict):
                parts.append(iv.get("sum"))
                streams = iv.get("streams")
                if isinstance(streams, list):
                    parts += streams
    if not _DICTS.issuperset(map(type, parts)):
        parts = [p for p in parts if isinstance(p, dict)]
    return parts


def _word_rates(intervals: list[Any], where: str) -> None:
    """:func:`check_rate` of each interval part, in order (the first refused raises)."""
    if type(intervals) is Typed:
        for i, part in enumerate(intervals.sums):
            check_rate(f"{where}intervals[{i}].sum.bits_per_second", part.bits_per_second)
        return
    for i, iv in enumerate(intervals):
        if not isinstance(iv, dict):
            continue
        parts = [iv.get("sum")]
        streams = iv.get("streams")
        if isinstance(streams, list):
            parts += streams
        for n, part in enumerate(parts):
            if isinstance(part, dict):
                name = "sum" if n == 0 else f"streams[{n - 1}]"
                check_rate(f"{where}intervals[{i}].{name}.bits_per_second",
                           part.get("bits_per_second"))  # fmt: skip


def check_rate(field: str, value: Any) -> None:
    """Refuse a ``bits_per_second`` no link can carry (:func:`netfleet.units.plausible_rate`)."""
    if value is not None and not plausible_rate(value):
        raise ImportProblem(
            f"{field} = {str(value)[:32]!r} is not a rate a link can carry "
            f"(0 to {MAX_RATE:.0e} bit/s)"
        )


def _plausible(field: str, value: Any, most: float, what: str) -> None:
    if value is None:
        return
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or (isinstance(value, float) and not math.isfinite(value))
        or not 0 <= value <= most  # (an int beyond a float's range compared as it is)
    ):
        raise ImportProblem(
            f"{field} = {str(value)[:32]!r} is not {what} in seconds (0 to {most:,})"
        )


def _num(value: Any) -> float | None:
    kind = type(value)
    if kind is float:
        return value
    if kind is int:
        return float(value)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


_FLOATS = frozenset({float})
_NUMBERS = frozenset({float, int})
_DICTS = frozenset({dict})


def _numbers(values: list[Any], name: str, field: Callable[[int], str]) -> list[Any]:
    """One field of the interval sums, ``name``, as numbers (JSON's floats as they are; ints as
    floats; anything else None); an int beyond a float's range is refused, named by ``field``
    of its position."""
    kinds = set(map(type, values))
    if kinds <= _FLOATS:
        return values
    number: Callable[[Any], float | None] = float if kinds <= _NUMBERS else _num
    try:
        return list(map(number, values))  # (JSON's ints: at once)
    except OverflowError:
        for k, value in enumerate(values):  # (the first one refused: worded)
            try:
                number(value)
            except OverflowError:
                raise ImportProblem(
                    f"{field(k)}.{name} is an integer of {len(str(value).lstrip('-'))} digits, "
                    "beyond a float's range (±1.8e308): iperf3 never writes one (a damaged "
                    "or hand-made file: correct the value, or leave the file out)"
                ) from None
        raise


def _side_flags(doc: dict[str, Any], side: str, path: str = "") -> list[dict[str, Any]]:
    """The checks of one side's interval sums (``path``: where ``doc`` is in the file), a
    column at a time: each rule tested over every interval at once, a flag's words made only
    for the intervals it flags."""
    intervals = doc.get("intervals") or []
    read = intervals if type(intervals) is Typed else None  # (each holds its sum, read)
    found = (
        read.sums if read is not None else list(map(dict.get, _objects(intervals), repeat("sum")))
    )
    at = list(range(len(found)))
    sums = found
    if read is None and not _DICTS.issuperset(map(type, found)):  # a missing sum: skipped
        keep = [isinstance(s, dict) for s in found]
        at, sums = list(compress(at, keep)), list(compress(found, keep))

    def field(k: int) -> str:
        return f"{path}intervals[{at[k]}].sum"

    column = read.fields.__getitem__ if read is not None else sum_fields(sums)

    def numbers(name: str) -> list[Any]:  # (a typed sum's times are floats and its bytes
        values = column(name)  # int64s already, as the checks read them: as they are)
        typed = read is not None and name != AS_WRITTEN
        return values if typed else _numbers(values, name, field)

    start, end, secs = map(numbers, ("start", "end", "seconds"))
    if None in start or None in end or None in secs:  # an interval without its times: skipped
        keep = [a is not None and b is not None and c is not None
                for a, b, c in zip(start, end, secs, strict=True)]  # fmt: skip
        at, sums = list(compress(at, keep)), list(compress(sums, keep))
        start, end, secs = (list(compress(c, keep)) for c in (start, end, secs))
        column = sum_fields(sums)
    if not sums:
        return []
    nbytes, bps = numbers("bytes"), numbers("bits_per_second")
    omitted = list(map(bool, column("omitted")))
    # seconds ≠ end − start (none when each is end − start exactly: at once)
    timing = [False] * len(sums)
    if list(map(sub, end, start)) != secs:
        timing = [abs((b - a) - c) > max(TOLERANCE * c, 1e-3)
                  for a, b, c in zip(start, end, secs, strict=True)]  # fmt: skip
    # a gap to the previous interval (-O: the clock restarts after the omitted part; none
    # when each starts where the previous ended: at once)
    gaps = [False] * len(sums)
    if start[1:] != end[:-1]:
        later = zip(start[1:], secs[1:], end, omitted, omitted[1:], strict=False)
        gaps = [False] + [
            not (was and not now) and abs(a - prev) > max(1e-3, 0.01 * c)
            for a, c, prev, was, now in later
        ]
    rated = rates_off(nbytes, secs, bps, TOLERANCE)
    flags: list[dict[str, Any]] = []
    if True in timing or True in gaps or True in rated:  # (else no interval to word)
        flagged = (k for k, f in enumerate(zip(timing, gaps, rated, strict=True)) if any(f))
        for k in flagged:
            i = at[k]
            where = {"side": side, "interval": i}
            if timing[k]:
                flags.append({"side": side, "interval": i, "field": "seconds",
                              "detail": f"{secs[k]} ≠ end−start"})  # fmt: skip
            if gaps[k]:
                detail = f"starts at {start[k]}, the previous interval ended at {end[k - 1]}"
                flags.append({"side": side, "interval": i, "field": "start", "detail": detail})
            if rated[k] and (flag := rate_flag(where, nbytes[k], secs[k], bps[k], TOLERANCE)):
                flags.append(flag)
    spans, timed = at, secs
    if True in omitted:
        counted = [not o for o in omitted]
        spans, timed = list(compress(at, counted)), list(compress(secs, counted))
    return flags + long_interval_flags(timed, lambda k: {"side": side, "interval": spans[k]})


def check_intervals(doc: dict[str, Any], side: str = "client") -> list[dict[str, Any]]:
    """Interval sums whose numbers don't add up (``seconds`` vs ``end − start``, rate vs bytes,
    gaps between intervals, an interval much longer than the others), for this side and the
    server's JSON it carries: listed, never averaged away."""
    flags = _side_flags(doc, side)
    server = doc.get("server_output_json")
    if isinstance(server, dict):
        flags += _side_flags(server, "server", "server_output_json.")
    return flags


def build_iperf3_envelope(
    path: Path,
    data: bytes,
    plain: bytes,
    *,
    campaign: str,
    labels: dict[str, Any],
    found: list[str],
    epoch_label: str | None,
    side: str,
    mtime: float | None,
) -> Envelope:
    return iperf3_envelope(
        path,
        data,
        decode(plain),
        campaign=campaign,
        labels=labels,
        found=found,
        epoch_label=epoch_label,
        side=side,
        mtime=mtime,
    )


def iperf3_envelope(
    path: Path, data: bytes, doc: dict[str, Any], *, campaign: str, **options: Any
) -> Envelope:
    """An iperf3 document (decoded and shape-checked: :func:`decode`, or import by reference's
    selective decoder followed by :func:`checked_shape`) → its imported envelope (the model,
    validated). ``options``: :func:`iperf3_fields`' keywords."""
    run_id, fields = iperf3_fields(path, data, doc, **options)
    return imported_envelope(run_id, campaign, **fields)


#: ``start.test_start``'s keys an imported run's ``params`` keeps, by their name in the spec's
#: vocabulary (:func:`netfleet.engines.params.base.spec_params`' renaming, spelled out here so
#: that reading a document loads no engine; tests/test_import_reference.py holds them equal)
_PARAMS = {"protocol": "protocol", "num_streams": "parallel", "duration": "duration",
           "omit": "omit"}  # fmt: skip


def imported_params(test: dict[str, Any]) -> dict[str, Any]:
    """An imported run's ``params`` from its ``start.test_start``: ``spec_params`` of its
    protocol, stream count, duration and omit (a ``num_streams`` of null is dropped), and the
    pacing (``-b``, iperf3's ``target_bitrate``) as the spec's ``bitrate`` when there was one."""
    out: dict[str, Any] = {}
    for key, name in _PARAMS.items():
        if key in test and (name == key or test[key] is not None):
            out[name] = test[key]
    pace = test.get("target_bitrate")  # -b: the run measured its pacing (issue 36)
    if isinstance(pace, int | float) and not isinstance(pace, bool) and pace > 0:
        out["bitrate"] = f"{pace:.0f}bit"
    return out


def iperf3_fields(
    path: Path | str,
    data: bytes,
    doc: dict[str, Any],
    *,
    labels: dict[str, Any],
    found: list[str],
    epoch_label: str | None,
    side: str,
    mtime: float | None,
    digest: str | None = None,
    keep_bytes: bool = True,
) -> tuple[str, dict[str, Any]]:
    """The run id and the envelope's fields of an iperf3 document (JSON's values; ``client``,
    ``server`` and ``engine`` as dicts): :func:`iperf3_envelope` validates them as the model,
    import by reference reads them as they are (:func:`~netfleet.store.import_base.plain_envelope`).
    The interval checks: :func:`check_intervals` of ``doc`` (an import by reference's ``doc``
    holds the intervals' sums only: the checks read nothing else).
    ``digest``, ``keep_bytes``: as :func:`~netfleet.store.import_base.provenance`'s."""
    labels, own_labels = merge_file_labels(doc, labels, found)
    start = doc.get("start") or {}
    inferred = ["run_key", "test", "repeat", "sequence", "client", "server"]
    server_side = "accepted_connection" in start and "connecting_to" not in start
    if side != "auto" and (side == "server") != server_side:
        raise ImportProblem(
            f"--side {side}, but this is iperf3's {'server' if server_side else 'client'} "
            "output (start." + ("accepted_connection" if server_side else "connecting_to") + ")"
        )
    secs = (start.get("timestamp") or {}).get("timesecs")
    if not isinstance(secs, int | float):
        if epoch_label is not None and str(epoch_label).isdigit():
            secs = int(epoch_label)
        elif mtime is not None:  # e.g. an error output printed before the test started
            secs = mtime
        else:
            raise ImportProblem(
                "no start time: neither start.timestamp.timesecs nor an {epoch} in the path"
            )
        inferred.append("started_at")
    test = start.get("test_start") or {}
    duration = test.get("duration")
    end = doc.get("end") or {}
    ended = (end.get("sum_received") or end.get("sum") or {}).get("end")
    elapsed = float(ended) if isinstance(ended, int | float) else float(duration or 0)
    reverse = bool(test.get("reverse"))
    direction = "bidir" if test.get("bidir") else direction_of(reverse == server_side)
    version = str(start.get("version", "iperf3 (unknown version)"))
    error = doc.get("error")
    side_name = "server" if server_side else "client"
    found_flags = check_intervals(doc, side_name)
    run_id, notes = provenance(
        path, data, inferred, found, found_flags, digest=digest, keep_bytes=keep_bytes
    )
    if own_labels:
        notes["imported"]["file_labels"] = own_labels
    result: dict[str, Any] = doc
    if server_side:  # catalogued as the server's output (side = server), no client output
        result = {"start": start, "server_output_json": doc}
        if error:
            result["error"] = error
        notes["imported"]["layout"] = "server-side output kept as result.server_output_json"
    peer = (start.get("connecting_to") or {}).get("host") or ""
    accepted = (start.get("accepted_connection") or {}).get("host") or ""
    return run_id, dict(
        status="failed" if error else "ok",
        reason=str(error) if error else None,
        direction=direction,
        subject=side_name,
        params=imported_params(test),
        labels=labels,
        client={"name": "client", "kind": "imported", "address": accepted if server_side else ""},
        server={"name": "server", "kind": "imported", "address": peer},
        engine={"name": "iperf3", "version": version.removeprefix("iperf "), "argv": []},
        started_at=stamp(float(secs)),
        ended_at=stamp(float(secs) + elapsed),
        duration_s=elapsed,
        result=result,
        notes=notes,
    )
