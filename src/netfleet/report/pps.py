"""``netfleet report pps``: every ``pps`` run — packets per second sent and delivered, loss, what
limited it, and the ENA allowance deltas the runner recorded around it (hosts with the
counters: ``pps_allowance_exceeded`` and the others), read from the raw results."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from netfleet.engines.pps import LOWER_BOUND
from netfleet.report.cheatsheet import Scale, scaled_runs
from netfleet.tabular import Tabular

#: the ENA counters a packet-rate run can drive (``bw_*`` are the bandwidth allowances)
ENA_PACKET_COUNTERS = (
    "pps_allowance_exceeded",
    "conntrack_allowance_exceeded",
    "linklocal_allowance_exceeded",
)

COLUMNS = [
    "run", "client", "server", "direction", "tool", "size_bytes", "streams", "offered_kpps",
    "sent_kpps", "arrived_kpps", "delivered_kpps", "loss_percent", "limit", "ena_deltas",
]  # fmt: skip

#: the columns a scaled lab's cloud figures divide (packets per second)
RATES = ("offered_kpps", "sent_kpps", "arrived_kpps", "delivered_kpps")

NOTES = [
    "kpps: thousands of UDP datagrams per second (payload size_bytes each): sent by the sender, "
    "arrived = reached the receiving host (delivered + its UDP socket-buffer drops, "
    "RcvbufErrors; empty where they could not be read), delivered = what the receiving tool "
    "counted less what it missed.",
    "limit: path = more than loss_ok % lost before the receiving host (the path or a policer: "
    "the ceiling is what arrived); receiver = the datagrams arrived but more than loss_ok % "
    "overflowed the tool's socket buffer (the receiver fell behind: the ceiling is at least "
    "what arrived); sender = the sender offered all it could (or less than asked) and nearly "
    "all arrived: the ceiling is at least what arrived; none = the offered rate was delivered.",
    "ena_deltas: growth of the ENA allowance counters during the run, per host (AWS ENA only; "
    "a positive pps_allowance_exceeded = the instance's packet-rate allowance, not the "
    "network).",
]


def _obj(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _k(value: Any) -> float | None:
    return float(value) / 1e3 if isinstance(value, int | float) else None


def ena_deltas(env: Mapping[str, Any]) -> str:
    """``a: pps_allowance_exceeded +12`` per host with the counters; "" where none."""
    deltas = _obj(_obj(env.get("notes")).get("ena_allowance_deltas"))
    words = []
    for host, counters in sorted(deltas.items()):
        found = _obj(counters)
        parts = [f"{k} +{found[k]}" for k in ENA_PACKET_COUNTERS if isinstance(found.get(k), int)]
        if parts:
            words.append(f"{host}: {', '.join(parts)}")
    return "; ".join(words)


def _label(labels: Mapping[str, Any], key: str) -> str | None:
    value = labels.get(key)
    return None if value is None else str(value)


def pps_table(envelopes: Iterable[Mapping[str, Any]], scale: Scale = "lab") -> Tabular:
    """One row per ``pps`` run (in the order given). ``scale``: a scaled lab's packet rates as
    measured (``lab``) or as the cloud figures they stand for (``cloud``: ÷ its ``lab_scale``)
    — but for a sender-limited run, whose rate is the lab machine's own."""
    rows: list[list[Any]] = []
    found: list[tuple[str, str | None, str | None]] = []
    sender: dict[int, str] = {}
    for env in envelopes:
        if _obj(env.get("engine")).get("name") != "pps":
            continue
        result = _obj(env.get("result"))
        s = _obj(result.get("summary"))
        rows.append([
            env.get("run_id"), _obj(env.get("client")).get("name"),
            _obj(env.get("server")).get("name"), env.get("direction"), result.get("chosen"),
            s.get("size_bytes"), s.get("streams"), _k(s.get("offered_pps")),
            _k(s.get("sent_pps")), _k(s.get("arrived_pps")), _k(s.get("delivered_pps")),
            s.get("loss_percent"),
            s.get("limit") or f"no counts ({env.get('status')})", ena_deltas(env),
        ])  # fmt: skip
        labels = _obj(env.get("labels"))
        rate = _label(labels, "lab_scale")
        if rate is not None and s.get("limit") in LOWER_BOUND:  # the lab machine's CPU
            sender[len(rows) - 1] = f"{s.get('limit')}-limited: no cloud figure"
        found.append((str(env.get("test")), rate, _label(labels, "lab_time_scale")))
    rows, columns, scaled = scaled_runs(rows, COLUMNS, RATES, found, scale, sender)
    notes = [*NOTES, *scaled] if rows else ["no pps runs"]
    if sender:
        notes.append(
            "flag 'sender-limited' or 'receiver-limited: no cloud figure': a scaled lab's run "
            "limited by its sender or receiver measured what the lab machine could send or "
            "read, not the scaled network, so it keeps the lab's figures (also with --scale "
            "cloud)."
        )
    return Tabular(columns, rows, title="Packets per second", notes=notes)
