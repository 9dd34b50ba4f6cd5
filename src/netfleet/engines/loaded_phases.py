"""Latency under load, the numbers: the probe's samples split into phases, and per phase the RTT
percentiles, the inflation over idle, loss and the load's throughput.

Pure functions of a stored ``latency-under-load`` result (``engines/loaded_latency.py`` writes
it), so the summary and the catalog rows can always be re-derived from the raw output:

* :func:`samples` — one :class:`Sample` per probe packet from irtt's JSON (``round_trips``: send
  time, RTT and the one-way delays, lost up or down) or ping's ``-D`` lines (RTT only; a missing
  ``icmp_seq`` is a loss);
* :func:`phase_stats` — per phase (``idle`` then the loaded ones): p50/p90/p99/max RTT, the
  one-way medians, inflation = p50 (p99) − idle **p50** (a robust baseline: a noisy idle p99
  would make the tail's inflation small or negative), never below 0, responsiveness in round
  trips per minute (:func:`rpm`), loss, the load's received rates up and down and whether they
  reached ``reach`` × the link's rate (else a warning: the phase's latency reads too good because
  the queue was not filled). An idle phase that was not idle (p90 far above p50, or a loaded
  phase's p50 far below it) carries a warning.

Responsiveness (:func:`rpm`) follows the IETF IPPM draft "Responsiveness under Working
Conditions" (draft-ietf-ippm-responsiveness) and Apple's networkQuality: 60 s over the
single-sided trimmed mean of the round trips (the slowest 5 % left out, TMP = 95 %). The
draft's Responsiveness averages two figures: *foreign* probes (new connections beside the load:
TCP and TLS handshakes, an HTTP GET) and *self* probes (requests on the load's own
connections). netfleet's probe (irtt's UDP packets, or ping) is a foreign probe on a flow of its
own; iperf3's load connections carry no probes, so the figure is the draft's foreign
responsiveness only, measured with UDP/ICMP round trips, over each phase's window (after
``settle``) rather than the draft's last moving-average intervals. Behind a flow-queuing AQM
(fq_codel, cake) foreign probes skip the load's queue and read better than self probes would;
the lab has none (this kernel has no fq_codel).

Times are seconds since netfleet started the probe (``probe_started``, netfleet's wall clock):
the phases' from netfleet's clock, the samples' from the probe's own time stamps (the client
host's wall clock). Where the two clocks disagree (the first packet before the start or more
than 5 s after it) the samples count from the probe's first packet instead, off by its start-up
(a handshake, milliseconds); every phase also leaves ``settle`` seconds out at its start, while
TCP fills the queue.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

NS_PER_US = 1000.0
#: ``ping -D``: ``[1764100000.123456] 64 bytes from …: icmp_seq=3 ttl=64 time=0.051 ms``
PING_REPLY = re.compile(r"^\[(\d+\.\d+)\] .*?icmp_seq=(\d+) .*?time=([\d.]+) ms", re.MULTILINE)
PING_SENT = re.compile(r"(\d+) packets transmitted")
#: a probe's first packet later than this after netfleet started it means the clocks disagree
CLOCK_SLACK_S = 5.0
#: responsiveness: the share of round trips kept by the single-sided trimmed mean (the draft's
#: TMP, 95 %: the slowest 5 % are left out)
RPM_TRIM = 0.95


@dataclass(frozen=True)
class Sample:
    """One probe packet: when it was sent (s since the probe's first packet), its round trip and
    one-way delays in µs (``None`` when lost or unknown), and whether it was lost."""

    t: float
    rtt_us: float | None
    send_us: float | None = None
    receive_us: float | None = None
    lost: bool = False


def _delay_us(delay: Mapping[str, Any], key: str) -> float | None:
    value = delay.get(key)
    return float(value) / NS_PER_US if isinstance(value, int | float) else None


def _origin(first: float, started: float | None) -> float:
    """Where a probe's time 0 is, in its own epoch seconds: when netfleet started it (same
    clock as the phases) if the client's clock agrees with netfleet's within
    :data:`CLOCK_SLACK_S`, else its first packet."""
    if started is not None and 0 <= first - started <= CLOCK_SLACK_S:
        return started
    return first


def irtt_samples(doc: Mapping[str, Any], started: float | None = None) -> list[Sample]:
    """irtt's ``round_trips`` → samples (send time from the client's wall clock, seconds since
    ``started`` — netfleet's wall clock when it started the probe — or the first packet)."""
    trips = doc.get("round_trips")
    if not isinstance(trips, list):
        return []
    first: float | None = None
    out: list[Sample] = []
    for rt in trips:
        if not isinstance(rt, dict):
            continue
        send = rt.get("timestamps", {}).get("client", {}).get("send", {}).get("wall")
        if not isinstance(send, int | float):
            continue
        first = _origin(send / 1e9, started) * 1e9 if first is None else first
        raw = rt.get("delay")
        delay: Mapping[str, Any] = raw if isinstance(raw, dict) else {}
        lost = rt.get("lost", "false") != "false"
        rtt = None if lost else _delay_us(delay, "rtt")
        out.append(
            Sample(
                (send - first) / 1e9,
                rtt,
                _delay_us(delay, "send"),
                _delay_us(delay, "receive"),
                lost or rtt is None,
            )
        )
    return out


def ping_samples(text: str, interval: float, started: float | None = None) -> list[Sample]:
    """``ping -D`` output → samples; a sequence number without a reply is a lost packet. A
    reply's send time is its ``-D`` time stamp − its RTT (ping's timer slips under load, so
    ``seq × interval`` would not do); a lost packet's is the previous one's + ``interval``."""
    found = [(int(m[2]), float(m[1]), float(m[3])) for m in PING_REPLY.finditer(text)]
    sent_m = PING_SENT.search(text)
    sent = int(sent_m.group(1)) if sent_m else max((seq for seq, _, _ in found), default=0)
    if not found:
        return [Sample((seq - 1) * interval, None, lost=True) for seq in range(1, sent + 1)]
    seq0, stamp0, ms0 = found[0]
    origin = _origin(stamp0 - ms0 / 1000 - (seq0 - 1) * interval, started)
    sends = {seq: stamp - ms / 1000 - origin for seq, stamp, ms in found}
    rtts = {seq: ms * 1000 for seq, _, ms in found}
    out: list[Sample] = []
    t = sends[seq0] - seq0 * interval
    for seq in range(1, sent + 1):
        t = sends.get(seq, t + interval)
        out.append(Sample(t, rtts.get(seq), lost=seq not in rtts))
    return out


def samples(result: Mapping[str, Any], interval: float) -> list[Sample]:
    """The probe's samples of a stored result, whichever probe ran."""
    output = result.get("probe_output")
    started = result.get("probe_started")
    at = float(started) if isinstance(started, int | float) else None
    if result.get("probe") == "irtt" and isinstance(output, dict):
        return irtt_samples(output, at)
    if result.get("probe") == "ping" and isinstance(output, str):
        return ping_samples(output, interval, at)
    return []


def _pct(values: Sequence[float], p: float) -> float | None:
    """Linear-interpolated percentile (numpy's default), None for no values."""
    if not values:
        return None
    import numpy as np  # heavy: not at import (``netfleet --help`` loads the engines)

    return float(np.percentile(np.asarray(values, dtype=float), p))


def rpm(rtts_us: Sequence[float]) -> float | None:
    """Responsiveness in round trips per minute: 60 s over the trimmed mean of ``rtts_us`` (µs),
    the slowest ``1 − RPM_TRIM`` of them left out (the draft's single-sided trimmed mean; at
    least one kept). None without a round trip (or none above zero)."""
    if not rtts_us:
        return None
    kept = sorted(rtts_us)[: max(1, math.floor(len(rtts_us) * RPM_TRIM))]
    mean_us = sum(kept) / len(kept)
    return 60e6 / mean_us if mean_us > 0 else None


def _sub(a: float | None, b: float | None) -> float | None:
    return a - b if a is not None and b is not None else None


def load_rates(load: Mapping[str, Any] | None, phase: str) -> tuple[float | None, float | None]:
    """The load's goodput (receiver side, bit/s) up (client → server) and down from iperf3's JSON:
    ``up`` sends forward, ``down`` is ``-R`` (the client receives), ``both`` is ``--bidir``."""
    if not isinstance(load, Mapping):
        return None, None
    end = load.get("end")
    if not isinstance(end, Mapping):
        return None, None

    def bps(key: str) -> float | None:
        part = end.get(key)
        value = part.get("bits_per_second") if isinstance(part, Mapping) else None
        return float(value) if isinstance(value, int | float) else None

    forward = bps("sum_received")
    if phase == "up":
        return forward, None
    if phase == "down":
        return None, forward
    return forward, bps("sum_received_bidir_reverse")


def _warning(
    phase: str, up: float | None, down: float | None, link: float | None, reach: float
) -> tuple[bool | None, str | None]:
    """Did every loaded direction reach ``reach`` × the link's rate? With no link rate nobody can
    tell (None); a direction without a rate (the load failed) did not reach it."""
    if phase == "idle" or link is None:
        return None, None
    wanted = [(d, r) for d, r in (("up", up), ("down", down)) if phase in (d, "both")]
    short = [(d, r) for d, r in wanted if r is None or r < reach * link]
    if not short:
        return True, None
    words = ", ".join(
        f"{d} {'no rate' if r is None else f'{r / 1e6:.3g} Mbit/s'}" for d, r in short
    )
    return False, (
        f"the load did not fill the path ({words}; link {link / 1e6:.3g} Mbit/s, wanted "
        f"≥ {reach:.0%}): this phase's latency reads too good — more streams (parallel) or a "
        "faster load generator"
    )


def phase_stats(
    result: Mapping[str, Any], interval: float, settle: float, reach: float
) -> list[dict[str, Any]]:
    """Per phase of a stored result: window, sample counts, loss, RTT p50/p90/p99/max/mean (µs),
    one-way medians, inflation over idle, load rates and the reach verdict."""
    all_samples = samples(result, interval)
    link = result.get("link_rate")
    link_bps = float(link) if isinstance(link, int | float) else None
    out: list[dict[str, Any]] = []
    idle: dict[str, Any] | None = None
    for phase in result.get("phases") or []:
        if not isinstance(phase, dict):
            continue
        name = str(phase.get("name"))
        start, end = phase.get("start_s"), phase.get("end_s")
        if not isinstance(start, int | float) or not isinstance(end, int | float):
            continue
        lo = start + settle
        window = [s for s in all_samples if lo <= s.t < end]
        rtts = [s.rtt_us for s in window if s.rtt_us is not None]
        sends = [s.send_us for s in window if s.send_us is not None and not s.lost]
        recvs = [s.receive_us for s in window if s.receive_us is not None and not s.lost]
        lost = sum(1 for s in window if s.lost)
        up, down = load_rates(phase.get("load"), name)
        reached, warning = _warning(name, up, down, link_bps, reach)
        row: dict[str, Any] = {
            "phase": name, "start_s": lo, "end_s": end, "samples": len(window), "lost": lost,
            "loss_percent": 100 * lost / len(window) if window else None,
            "p50_us": _pct(rtts, 50), "p90_us": _pct(rtts, 90), "p99_us": _pct(rtts, 99),
            "max_us": max(rtts) if rtts else None,
            "mean_us": sum(rtts) / len(rtts) if rtts else None, "rpm": rpm(rtts),
            "send_p50_us": _pct(sends, 50), "receive_p50_us": _pct(recvs, 50),
            "up_bps": up, "down_bps": down, "link_bps": link_bps, "reached": reached,
            "warning": warning or phase.get("load_error"),
        }  # fmt: skip
        if name == "idle":
            idle = row
            row["warning"] = _busy_idle(row) or row["warning"]
        base = idle or {}
        row["inflation_p50_us"] = _over(row["p50_us"], base.get("p50_us"))
        row["inflation_p99_us"] = _over(row["p99_us"], base.get("p50_us"))
        row["inflation_send_us"] = _over(row["send_p50_us"], base.get("send_p50_us"))
        row["inflation_receive_us"] = _over(row["receive_p50_us"], base.get("receive_p50_us"))
        below = _sub(base.get("p50_us"), row["p50_us"])
        if name != "idle" and below is not None and below > IDLE_SPREAD_US and idle is not None:
            why = (
                f"the idle phase was not idle: its p50 ({base['p50_us'] / 1000:.3g} ms) is "
                f"above this loaded phase's ({row['p50_us'] / 1000:.3g} ms)"
            )
            idle["warning"] = idle["warning"] or why
        out.append(row)
    return out


def _rpm_words(value: Any) -> str:
    return f" ({value:,.0f} RPM)" if isinstance(value, int | float) else ""


#: an idle phase whose p90 lies this far (µs) above its p50, and above twice it, carried other
#: traffic (a quiet path's p90 is within a few tens of µs of its p50)
IDLE_SPREAD_US = 1000.0


def _busy_idle(row: Mapping[str, Any]) -> str | None:
    """Why the idle phase was not idle, or None: its p90 far above its p50."""
    p50, p90, p99 = row.get("p50_us"), row.get("p90_us"), row.get("p99_us")
    if p50 is None or p90 is None or p99 is None or p90 - p50 <= max(IDLE_SPREAD_US, p50):
        return None
    return (
        f"the idle phase was not idle: p90 {p90 / 1000:.3g} ms, p99 {p99 / 1000:.3g} ms against "
        f"a p50 of {p50 / 1000:.3g} ms (other traffic on the path?): inflation is measured "
        "from the idle p50, and the phases' tails may include that traffic"
    )


def _over(value: float | None, baseline: float | None) -> float | None:
    """How far ``value`` lies above the idle baseline (its p50), never below 0: a loaded phase
    a little under the idle median is noise, not negative inflation (a much lower one flags
    the idle phase instead)."""
    diff = _sub(value, baseline)
    return None if diff is None else max(0.0, diff)


def one_line(phases: Sequence[Mapping[str, Any]]) -> str:
    """``idle p50 52 µs (1,150,000 RPM); up +98.1 ms (610 RPM); …`` (p50 inflation,
    responsiveness in round trips per minute)."""
    if not phases or phases[0].get("p50_us") is None:
        return "no round trips"
    busy = " (not idle)" if phases[0].get("warning") else ""
    words = [f"idle p50 {phases[0]['p50_us']:.0f} µs{busy}{_rpm_words(phases[0].get('rpm'))}"]
    for p in phases[1:]:
        inf = p.get("inflation_p50_us")
        text = "no samples" if inf is None else f"{inf / 1000:+.1f} ms{_rpm_words(p.get('rpm'))}"
        words.append(
            f"{p['phase']} {text}{' (load short of the link)' if p.get('warning') else ''}"
        )
    return "; ".join(words)
