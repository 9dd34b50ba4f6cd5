"""An envelope's ``runs`` row and the rows of one run (:class:`RunRows`), apart from the
engine parsers of :mod:`netfleet.catalog.rows` (which re-exports them): import by reference
makes an iperf3 document's rows without loading the engine registry and pydantic.
Column meanings are documented in docs/catalog.md.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

from netfleet.iperf3json import fast_float, fast_int
from netfleet.values import as_bool, as_float, as_int, as_str, obj

Row = dict[str, Any]


class RowError(ValueError):
    """A raw envelope whose structure cannot be turned into rows."""


@dataclass
class RunRows:
    """The rows of one run, ready to append to the three tables."""

    run: Row
    intervals: list[Row] = field(default_factory=list)
    ends: list[Row] = field(default_factory=list)
    #: rows of the other tables (e.g. ``latency``), by table name
    extra: dict[str, list[Row]] = field(default_factory=dict)

    @property
    def run_id(self) -> str:
        return str(self.run["run_id"])

    def table(self, name: str) -> list[Row]:
        if name == "runs":
            return [self.run]
        if name in ("intervals", "ends"):
            return list(getattr(self, name))
        return self.extra.get(name, [])


def _timestamp(text: Any, what: str) -> datetime:
    """An ISO 8601 instant as a naive UTC datetime (the catalog stores UTC, see docs)."""
    if not isinstance(text, str):
        raise RowError(f"{what} must be an ISO 8601 string, not {type(text).__name__}")
    if len(text) == 27 and text[26] == "Z" and text[10] == "T":  # an import's stamp: UTC
        try:  # (its time without the Z, read as naive: a third of the time)
            naive = datetime.fromisoformat(text[:26])
        except ValueError:
            naive = None
        if naive is not None and naive.tzinfo is None:
            return naive
    try:
        moment = datetime.fromisoformat(text)
    except ValueError as exc:
        raise RowError(f"{what} {text!r} is not an ISO 8601 time") from exc
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment


def _param(params: Mapping[str, Any], test_start: Mapping[str, Any], key: str, alt: str) -> Any:
    """A resolved engine parameter, else what the engine reported in ``start.test_start``."""
    value = params.get(key)
    return value if value is not None else test_start.get(alt)


def _protocol(params: Mapping[str, Any], test_start: Mapping[str, Any]) -> str | None:
    """From what the params hold: ``protocol`` (today's models), ``udp`` (older results), else
    what the engine reported."""
    protocol = as_str(params.get("protocol"))
    if protocol:
        return protocol.lower()
    udp = params.get("udp")
    if udp is not None:
        return "udp" if as_bool(udp) else "tcp"
    reported = as_str(test_start.get("protocol"))
    return reported.lower() if reported else None


def _reverse(params: Mapping[str, Any], test_start: Mapping[str, Any], subject: Any) -> Any:
    """iperf3's ``--reverse`` (the server sends): an old ``reverse`` param, else derived from
    ``direction`` and the subject as the engine does, else what the engine reported."""
    if params.get("reverse") is not None:
        return as_bool(params.get("reverse"))
    direction = params.get("direction")
    if direction in ("out", "in") and subject in ("client", "server"):
        return (direction == "in") == (subject == "client")
    if direction == "bidir":
        return False
    return as_bool(test_start.get("reverse"))


def _bidir(params: Mapping[str, Any]) -> bool | None:
    if params.get("bidir") is not None:
        return as_bool(params.get("bidir"))
    direction = params.get("direction")
    return direction == "bidir" if isinstance(direction, str) else None


def json_encoder(**options: Any) -> Callable[[Any], str]:
    """``json.JSONEncoder(**options).encode``, its C encoder made once (``encode`` makes one
    per call: half the time of a small value's). For JSON's values (a cycle is not looked
    for: decoded JSON has none); a text value, or no C encoder, is ``encode``'s own."""
    from json import encoder as stdlib

    c_make_encoder = getattr(stdlib, "c_make_encoder", None)  # (not in the stubs)
    plain = json.JSONEncoder(**options)
    if c_make_encoder is None or plain.indent is not None:
        return plain.encode
    made = c_make_encoder(
        None,
        plain.default,
        stdlib.encode_basestring_ascii if plain.ensure_ascii else stdlib.encode_basestring,
        None,
        plain.key_separator,
        plain.item_separator,
        plain.sort_keys,
        plain.skipkeys,
        plain.allow_nan,
    )

    def encode(value: Any) -> str:
        if isinstance(value, str):
            return plain.encode(value)
        return "".join(made(value, 0))

    return encode


#: ``json.dumps(value, sort_keys=True, default=str)``, its encoder made once (json.dumps
#: makes one per call when given options: a tenth of the row's time)
_as_json = json_encoder(sort_keys=True, default=str)


def run_row(doc: Mapping[str, Any], source: str) -> Row:
    """The ``runs`` row of one envelope (already upgraded to the current format)."""
    run_id = doc.get("run_id")
    if not isinstance(run_id, str) or not run_id:
        raise RowError("the envelope has no run_id")
    params = obj(doc.get("params"))
    labels = obj(doc.get("labels"))
    engine = obj(doc.get("engine"))
    client, server = obj(doc.get("client")), obj(doc.get("server"))
    cfacts, sfacts = obj(client.get("facts")), obj(server.get("facts"))
    state = obj(doc.get("state"))
    cstate, sstate = obj(state.get("client")), obj(state.get("server"))
    result = obj(doc.get("result"))
    test_start = obj(obj(result.get("start")).get("test_start"))
    started = _timestamp(doc.get("started_at"), "started_at")
    ended = _timestamp(doc.get("ended_at"), "ended_at")
    day: date = started.date()
    return {
        "run_id": run_id,
        "run_key": as_str(doc.get("run_key")),
        "campaign": as_str(doc.get("campaign")),
        "test": as_str(doc.get("test")),
        "repeat": as_int(doc.get("repeat")),
        "sequence": as_int(doc.get("sequence")),
        "status": as_str(doc.get("status")),
        "reason": as_str(doc.get("reason")),
        "error": as_str(result.get("error")),
        "direction": as_str(doc.get("direction")),
        "subject": as_str(doc.get("subject")),
        "d": day,
        "started_at": started,
        "ended_at": ended,
        "duration_s": as_float(doc.get("duration_s")),
        "engine": as_str(engine.get("name")),
        "engine_version": as_str(engine.get("version")),
        "netfleet_version": as_str(doc.get("netfleet_version")),
        "client": as_str(client.get("name")),
        "client_kind": as_str(client.get("kind")),
        "client_address": as_str(client.get("address")),
        "server": as_str(server.get("name")),
        "server_kind": as_str(server.get("kind")),
        "server_address": as_str(server.get("address")),
        "protocol": _protocol(params, test_start),
        "parallel": as_int(_param(params, test_start, "parallel", "num_streams")),
        "reverse": _reverse(params, test_start, doc.get("subject")),
        "bidir": _bidir(params),
        "duration": as_float(_param(params, test_start, "duration", "duration")),
        "omit": as_float(_param(params, test_start, "omit", "omit")),
        "interval": as_float(params.get("interval")),
        "client_mtu": as_int(cfacts.get("mtu")) or as_int(cstate.get("mtu")),
        "server_mtu": as_int(sfacts.get("mtu")) or as_int(sstate.get("mtu")),
        "client_cpus": as_int(cfacts.get("cpus")),
        "server_cpus": as_int(sfacts.get("cpus")),
        "params": _as_json(params),
        "labels": _as_json(labels),
        "notes": _as_json(catalog_notes(doc.get("notes"))),
        "source": source,
        "client_zone_id": as_str(cstate.get("zone_id")),
        "server_zone_id": as_str(sstate.get("zone_id")),
        "client_ena_express": as_bool(cstate.get("ena_express")),
        "server_ena_express": as_bool(sstate.get("ena_express")),
        "client_bandwidth_weighting": as_str(cstate.get("bandwidth_weighting")),
        "server_bandwidth_weighting": as_str(sstate.get("bandwidth_weighting")),
        "rules_as_of": _day(state.get("rules_as_of")),
        "state": _as_json(state) if state else None,
    }


#: the ``params`` an imported iperf3 run may hold (``import_iperf3.imported_params``)
_IMPORTED_PARAMS = frozenset({"protocol", "parallel", "duration", "omit"})


#: the ``runs`` columns :func:`imported_run_values` gives, in its order
IMPORTED_FILLED = ("run_id", "run_key", "campaign", "repeat", "sequence", "status", "reason",
                   "error", "direction", "subject", "d", "started_at", "ended_at", "duration_s",
                   "engine", "engine_version", "netfleet_version", "client", "client_kind",
                   "client_address", "server", "server_kind", "server_address", "protocol",
                   "parallel", "reverse", "duration", "omit", "params", "labels", "notes",
                   "source")  # fmt: skip
#: the ``runs`` columns every imported iperf3 document's envelope holds the same (no state,
#: no host facts, no interval or bidir param, the test's name)
IMPORTED_SAME: dict[str, Any] = {
    "test": "imported",
    **dict.fromkeys(("bidir", "interval", "client_mtu", "server_mtu", "client_cpus",
                     "server_cpus", "client_zone_id", "server_zone_id", "client_ena_express",
                     "server_ena_express", "client_bandwidth_weighting",
                     "server_bandwidth_weighting", "rules_as_of", "state")),
}  # fmt: skip


def imported_run_row(doc: Mapping[str, Any], source: str) -> Row:
    """:func:`run_row` of an imported iperf3 document's envelope made without the model
    (``import_base.plain_envelope``; import by reference's workers make thousands): the same
    row, the columns every such envelope holds the same (:data:`IMPORTED_SAME`) not looked up
    one by one; any other envelope is :func:`run_row`'s."""
    values = imported_run_values(doc, source)
    if values is None:
        return run_row(doc, source)
    row = dict(IMPORTED_SAME)
    row.update(zip(IMPORTED_FILLED, values, strict=True))
    return row


def imported_run_values(doc: Mapping[str, Any], source: str) -> tuple[Any, ...] | None:
    """:func:`imported_run_row`'s values of :data:`IMPORTED_FILLED`, in its order (a task's
    ``runs`` rows as columns: :class:`ColumnRows`); None for an envelope that is not an
    imported document's (state, host facts, other params …: :func:`run_row`'s)."""
    params, client, server = doc.get("params"), doc.get("client"), doc.get("server")
    labels, engine = doc.get("labels"), doc.get("engine")
    if (
        doc.get("state") is not None
        or type(client) is not dict
        or type(server) is not dict
        or client.get("facts")
        or server.get("facts")
        or type(params) is not dict
        or not params.keys() <= _IMPORTED_PARAMS
        or type(labels) is not dict
        or type(engine) is not dict
        or doc.get("test") != "imported"
    ):
        return None
    run_id = doc.get("run_id")
    if not isinstance(run_id, str) or not run_id:
        raise RowError("the envelope has no run_id")
    result = obj(doc.get("result"))
    test_start = obj(obj(result.get("start")).get("test_start"))
    started = _timestamp(doc.get("started_at"), "started_at")
    ended = _timestamp(doc.get("ended_at"), "ended_at")
    return (
        run_id,
        as_str(doc.get("run_key")),
        as_str(doc.get("campaign")),
        fast_int(doc.get("repeat")),
        fast_int(doc.get("sequence")),
        as_str(doc.get("status")),
        as_str(doc.get("reason")),
        as_str(result.get("error")),
        as_str(doc.get("direction")),
        as_str(doc.get("subject")),
        started.date(),
        started,
        ended,
        fast_float(doc.get("duration_s")),
        as_str(engine.get("name")),
        as_str(engine.get("version")),
        as_str(doc.get("netfleet_version")),
        as_str(client.get("name")),
        as_str(client.get("kind")),
        as_str(client.get("address")),
        as_str(server.get("name")),
        as_str(server.get("kind")),
        as_str(server.get("address")),
        _protocol(params, test_start),
        fast_int(_param(params, test_start, "parallel", "num_streams")),
        _reverse(params, test_start, doc.get("subject")),
        fast_float(_param(params, test_start, "duration", "duration")),
        fast_float(_param(params, test_start, "omit", "omit")),
        _as_json(params),
        _as_json(labels),
        _as_json(catalog_notes(doc.get("notes"))),
        source,
    )


class ColumnRows:
    """One imported run's ``runs`` and ``ends`` rows as values in column order — ``run``:
    :func:`imported_run_values`, each of ``ends``:
    :func:`~netfleet.iperf3json.end_values` — for a task's rows made as columns (one Arrow
    batch per table for the task, :meth:`netfleet.catalog.ingestion._Batch.add_columns`);
    :meth:`rows` is the same run as :class:`RunRows`."""

    __slots__ = ("ends", "run")

    def __init__(self, run: tuple[Any, ...], ends: list[tuple[Any, ...]]) -> None:
        self.run = run
        self.ends = ends

    @property
    def run_id(self) -> str:
        return str(self.run[0])

    def rows(self) -> RunRows:
        from netfleet.iperf3json import END_COLUMNS

        run = dict(IMPORTED_SAME)
        run.update(zip(IMPORTED_FILLED, self.run, strict=True))
        ends = [dict(zip(END_COLUMNS, end, strict=True)) for end in self.ends]
        return RunRows(run, [], ends)


def _day(text: Any) -> date | None:
    """An ISO date, else None (a state written by hand may hold anything)."""
    try:
        return date.fromisoformat(text) if isinstance(text, str) else None
    except ValueError:
        return None


def catalog_notes(notes: Any) -> dict[str, Any]:
    """An envelope's notes as the catalog keeps them: an imported file's original bytes stay in
    the raw envelope only (its sha256 and size are kept), or they would outweigh every table."""
    out = dict(obj(notes))
    imported = obj(out.get("imported"))
    if "original" in imported:
        out["imported"] = {k: v for k, v in imported.items() if k != "original"}
    return out
