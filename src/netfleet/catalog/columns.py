"""The catalog's tables declared once: each column's name, its type and, for ``runs``, where its
value comes from in an envelope (an ingested one, or the one an import builds of a foreign
file). Every builder walks this: :func:`run_row` makes a ``runs`` row from it,
:mod:`netfleet.catalog.schemas` makes each table's Arrow schema from it, the batch writer and
the export read those schemas. Adding a ``runs`` column is one :class:`Column` in
:data:`RUNS` (and its line in docs/catalog.md).

The other tables' rows come from the engines' builders (``table_rows`` of each engine:
iperf3's in :mod:`netfleet.iperf3json`); their columns are declared here with the engine field
each is read from (``source``), so the writer and the readers agree on one list.

Light on purpose (no pyarrow, no pydantic): types are names, mapped to Arrow in
:mod:`netfleet.catalog.schemas`. Column meanings are documented in docs/catalog.md.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import UTC, date, datetime
from typing import Any, NamedTuple

from netfleet.values import as_bool, as_float, as_int, as_str, obj


class RowError(ValueError):
    """A raw envelope whose structure cannot be turned into rows."""


class Column(NamedTuple):
    """One column: its name, its type (``string``, ``int64``, ``float64``, ``bool``,
    ``date32``, ``timestamp``) and where its value comes from — for ``runs`` a function of the
    envelope (:class:`Envelope`), for the engines' tables the field it is read from."""

    name: str
    kind: str
    source: Callable[[Envelope], Any] | str = ""


class Envelope:
    """An envelope (its JSON form, upgraded to the current format) as the ``runs`` columns read
    it: its records looked up once."""

    __slots__ = ("client", "doc", "engine", "params", "result", "run_id", "server", "source",
                 "started", "state", "test_start")  # fmt: skip

    def __init__(self, doc: Mapping[str, Any], source: str) -> None:
        self.doc = doc
        self.source = source
        run_id = doc.get("run_id")
        if not isinstance(run_id, str) or not run_id:
            raise RowError("the envelope has no run_id")
        self.run_id = run_id
        self.params = obj(doc.get("params"))
        self.engine = obj(doc.get("engine"))
        self.client, self.server = obj(doc.get("client")), obj(doc.get("server"))
        self.state = obj(doc.get("state"))
        self.result = obj(doc.get("result"))
        self.test_start = obj(obj(self.result.get("start")).get("test_start"))
        self.started = _timestamp(doc.get("started_at"), "started_at")

    def get(self, key: str) -> Any:
        return self.doc.get(key)

    def param(self, key: str, reported: str) -> Any:
        """A resolved engine parameter, else what the engine reported in ``start.test_start``."""
        value = self.params.get(key)
        return value if value is not None else self.test_start.get(reported)

    def host(self, which: str, key: str) -> Any:
        """A host record's field (``client``/``server``)."""
        return obj(self.doc.get(which)).get(key)

    def fact(self, which: str, key: str) -> Any:
        """A host's fact (``facts``), else its state's (``state.client`` …)."""
        value = as_int(obj(obj(self.doc.get(which)).get("facts")).get(key))
        return value or as_int(obj(self.state.get(which)).get(key))

    def host_state(self, which: str, key: str) -> Any:
        return obj(self.state.get(which)).get(key)


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


def _protocol(env: Envelope) -> str | None:
    """From what the params hold: ``protocol`` (today's models), ``udp`` (older results), else
    what the engine reported."""
    protocol = as_str(env.params.get("protocol"))
    if protocol:
        return protocol.lower()
    udp = env.params.get("udp")
    if udp is not None:
        return "udp" if as_bool(udp) else "tcp"
    reported = as_str(env.test_start.get("protocol"))
    return reported.lower() if reported else None


def _reverse(env: Envelope) -> bool | None:
    """iperf3's ``--reverse`` (the server sends): an old ``reverse`` param, else derived from
    ``direction`` and the subject as the engine does, else what the engine reported."""
    params, subject = env.params, env.get("subject")
    if params.get("reverse") is not None:
        return as_bool(params.get("reverse"))
    direction = params.get("direction")
    if direction in ("out", "in") and subject in ("client", "server"):
        return (direction == "in") == (subject == "client")
    if direction == "bidir":
        return False
    return as_bool(env.test_start.get("reverse"))


def _bidir(env: Envelope) -> bool | None:
    if env.params.get("bidir") is not None:
        return as_bool(env.params.get("bidir"))
    direction = env.params.get("direction")
    return direction == "bidir" if isinstance(direction, str) else None


def _day(text: Any) -> date | None:
    """An ISO date, else None (a state written by hand may hold anything)."""
    try:
        return date.fromisoformat(text) if isinstance(text, str) else None
    except ValueError:
        return None


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


#: ``json.dumps(value, sort_keys=True, default=str)``, its encoder made once
_as_json = json_encoder(sort_keys=True, default=str)


def catalog_notes(notes: Any) -> dict[str, Any]:
    """An envelope's notes as the catalog keeps them: an imported file's original bytes stay in
    the raw envelope only (its sha256 and size are kept), or they would outweigh every table."""
    out = dict(obj(notes))
    imported = obj(out.get("imported"))
    if "original" in imported:
        out["imported"] = {k: v for k, v in imported.items() if k != "original"}
    return out


def _text(key: str) -> Callable[[Envelope], Any]:
    return lambda env: as_str(env.get(key))


def _host(which: str, key: str) -> Callable[[Envelope], Any]:
    return lambda env: as_str(env.host(which, key))


def _state(which: str, key: str, kind: Callable[[Any], Any]) -> Callable[[Envelope], Any]:
    return lambda env: kind(env.host_state(which, key))


#: ``runs``: one row per run, each value from the envelope
RUNS: tuple[Column, ...] = (
    Column("run_id", "string", lambda env: env.run_id),
    Column("run_key", "string", _text("run_key")),
    Column("campaign", "string", _text("campaign")),
    Column("test", "string", _text("test")),
    Column("repeat", "int64", lambda env: as_int(env.get("repeat"))),
    Column("sequence", "int64", lambda env: as_int(env.get("sequence"))),
    Column("status", "string", _text("status")),
    Column("reason", "string", _text("reason")),
    Column("error", "string", lambda env: as_str(env.result.get("error"))),
    Column("direction", "string", _text("direction")),
    Column("subject", "string", _text("subject")),
    Column("d", "date32", lambda env: env.started.date()),
    Column("started_at", "timestamp", lambda env: env.started),
    Column("ended_at", "timestamp", lambda env: _timestamp(env.get("ended_at"), "ended_at")),
    Column("duration_s", "float64", lambda env: as_float(env.get("duration_s"))),
    Column("engine", "string", lambda env: as_str(env.engine.get("name"))),
    Column("engine_version", "string", lambda env: as_str(env.engine.get("version"))),
    Column("netfleet_version", "string", _text("netfleet_version")),
    Column("client", "string", _host("client", "name")),
    Column("client_kind", "string", _host("client", "kind")),
    Column("client_address", "string", _host("client", "address")),
    Column("server", "string", _host("server", "name")),
    Column("server_kind", "string", _host("server", "kind")),
    Column("server_address", "string", _host("server", "address")),
    Column("protocol", "string", _protocol),
    Column("parallel", "int64", lambda env: as_int(env.param("parallel", "num_streams"))),
    Column("reverse", "bool", _reverse),
    Column("bidir", "bool", _bidir),
    Column("duration", "float64", lambda env: as_float(env.param("duration", "duration"))),
    Column("omit", "float64", lambda env: as_float(env.param("omit", "omit"))),
    Column("interval", "float64", lambda env: as_float(env.params.get("interval"))),
    Column("client_mtu", "int64", lambda env: env.fact("client", "mtu")),
    Column("server_mtu", "int64", lambda env: env.fact("server", "mtu")),
    Column("client_cpus", "int64", lambda env: as_int(obj(env.client.get("facts")).get("cpus"))),
    Column("server_cpus", "int64", lambda env: as_int(obj(env.server.get("facts")).get("cpus"))),
    Column("params", "string", lambda env: _as_json(env.params)),
    Column("labels", "string", lambda env: _as_json(obj(env.get("labels")))),
    Column("notes", "string", lambda env: _as_json(catalog_notes(env.get("notes")))),
    Column("source", "string", lambda env: env.source),
    # configuration state (envelope ``state``; NULL in results written before it)
    Column("client_zone_id", "string", _state("client", "zone_id", as_str)),
    Column("server_zone_id", "string", _state("server", "zone_id", as_str)),
    Column("client_ena_express", "bool", _state("client", "ena_express", as_bool)),
    Column("server_ena_express", "bool", _state("server", "ena_express", as_bool)),
    Column("client_bandwidth_weighting", "string", _state("client", "bandwidth_weighting", as_str)),
    Column("server_bandwidth_weighting", "string", _state("server", "bandwidth_weighting", as_str)),
    Column("rules_as_of", "date32", lambda env: _day(env.state.get("rules_as_of"))),
    Column("state", "string", lambda env: _as_json(env.state) if env.state else None),
)


def _engine(*columns: tuple[str, str], source: str) -> tuple[Column, ...]:
    return tuple(Column(name, kind, source) for name, kind in columns)


_S, _I, _F, _B = "string", "int64", "float64", "bool"

#: ``intervals``: one row per interval sum or stream (iperf3: ``intervals[].sum``,
#: ``sum_bidir_reverse`` and ``streams[]``, :func:`netfleet.iperf3json.interval_columns`)
INTERVALS = _engine(
    ("run_id", _S), ("side", _S), ("role", _S), ("flow", _S), ("kind", _S), ("stream_id", _I),
    ("idx", _I), ("start", _F), ("end", _F), ("seconds", _F), ("bytes", _I),
    ("bits_per_second", _F), ("retransmits", _I), ("snd_cwnd", _I), ("snd_wnd", _I),
    ("rtt", _I), ("rttvar", _I), ("pmtu", _I), ("packets", _I), ("lost_packets", _I),
    ("lost_percent", _F), ("jitter_ms", _F), ("omitted", _B),
    source="intervals[] (netfleet.iperf3json.interval_columns)",
)  # fmt: skip

#: ``ends``: one row per host document's ``end`` (:func:`netfleet.iperf3json.end_row`)
ENDS = _engine(
    ("run_id", _S), ("side", _S), ("error", _S), ("sum_sent_bytes", _I), ("sum_sent_bps", _F),
    ("sum_sent_seconds", _F), ("sum_sent_retransmits", _I), ("sum_received_bytes", _I),
    ("sum_received_bps", _F), ("sum_received_seconds", _F), ("sum_sent_bidir_reverse_bytes", _I),
    ("sum_sent_bidir_reverse_bps", _F), ("sum_sent_bidir_reverse_retransmits", _I),
    ("sum_received_bidir_reverse_bytes", _I), ("sum_received_bidir_reverse_bps", _F),
    ("host_total", _F), ("host_user", _F), ("host_system", _F), ("remote_total", _F),
    ("remote_user", _F), ("remote_system", _F), ("sender_tcp_congestion", _S),
    ("receiver_tcp_congestion", _S), ("jitter_ms", _F), ("lost_packets", _I), ("packets", _I),
    ("lost_percent", _F), ("out_of_order", _I), ("min_rtt", _I), ("mean_rtt", _I),
    ("max_rtt", _I), ("max_snd_cwnd", _I),
    source="end (netfleet.iperf3json.end_row)",
)  # fmt: skip

#: ``latency``: one row per request/response (sockperf, iperf2 bounceback), ping or irtt run
LATENCY = _engine(
    ("run_id", _S), ("tool", _S), ("kind", _S), ("full_round_trip", _B), ("size", _I),
    ("transactions", _I), ("transactions_per_s", _F), ("seconds", _F), ("sent", _I),
    ("received", _I), ("loss_percent", _F), ("mean_us", _F), ("stdev_us", _F), ("min_us", _F),
    ("max_us", _F), ("p50_us", _F), ("p90_us", _F), ("p99_us", _F), ("p999_us", _F),
    ("percentile_source", _S),
    source="the latency engines' table_rows",
)  # fmt: skip

#: ``latency_phases``: one row per phase of a ``latency-under-load`` run (idle, up, down, both)
LATENCY_PHASES = _engine(
    ("run_id", _S), ("probe", _S), ("phase", _S), ("start_s", _F), ("end_s", _F),
    ("samples", _I), ("lost", _I), ("loss_percent", _F), ("p50_us", _F), ("p90_us", _F),
    ("p99_us", _F), ("max_us", _F), ("mean_us", _F), ("rpm", _F), ("send_p50_us", _F),
    ("receive_p50_us", _F), ("inflation_p50_us", _F), ("inflation_p99_us", _F),
    ("inflation_send_us", _F), ("inflation_receive_us", _F), ("up_bps", _F), ("down_bps", _F),
    ("link_bps", _F), ("reached", _B), ("warning", _S),
    source="the loaded-latency engine's table_rows",
)  # fmt: skip

#: ``latency_samples``: one row per probe packet of a ``latency-under-load`` run
LATENCY_SAMPLES = _engine(
    ("run_id", _S), ("t", _F), ("phase", _S), ("rtt_us", _F), ("send_us", _F),
    ("receive_us", _F), ("lost", _B),
    source="the loaded-latency engine's table_rows",
)  # fmt: skip

#: table name → its columns, in the order parts are published (``runs`` last: it commits a
#: batch). Read at each use (the schemas, :func:`run_row`), so a column declared here at run
#: time is seen by every builder and writer
DECLARED: dict[str, tuple[Column, ...]] = {
    "intervals": INTERVALS,
    "ends": ENDS,
    "latency": LATENCY,
    "latency_phases": LATENCY_PHASES,
    "latency_samples": LATENCY_SAMPLES,
    "runs": RUNS,
}


def run_row(doc: Mapping[str, Any], source: str) -> dict[str, Any]:
    """The ``runs`` row of one envelope (already upgraded to the current format): each
    declared column's value (:data:`DECLARED`). Raises :class:`RowError` when the envelope
    has no run_id or its times are not ISO 8601."""
    env = Envelope(doc, source)
    return {column.name: column.source(env) for column in DECLARED["runs"]}  # type: ignore[operator]
