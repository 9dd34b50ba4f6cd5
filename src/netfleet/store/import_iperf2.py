"""iperf 2 output → an imported ``iperf2`` envelope: ``-y C`` CSV or the human-readable text
(``-e`` enhanced or plain), client or server side.

* Side: the text says it ("Client connecting to" / "Server listening on"); CSV does not (both
  ends print the same address order), so it comes from ``--side``, else from the file name
  (``server`` in it), else client — listed as inferred.
* ``-R``: the text's connection line says ``(reverse)``; CSV does not show it, so a CSV run's
  ``direction`` is inferred (not reversed).
* Start time: CSV's first time stamp (iperf2's local time, taken as UTC); ``-e`` prints
  ``on 2026-11-23 16:24:07 (UTC)``; plain text has none (``{epoch}`` in the path, else the file's
  modification time). Anything but an explicit UTC stamp is listed as inferred.
* Checks: each stream line's rate against bytes × 8 / (end − start) (1 % for CSV plus its 0.1 s
  time resolution, 2 % for text, whose numbers iperf2 rounds to 3 significant digits) and
  intervals much longer than usual.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from statistics import median
from typing import Any

from netfleet.engines.iperf2_csv import CsvLine, parse_csv, parse_text, split_finals
from netfleet.store.envelope import EngineRecord, Envelope, HostRecord
from netfleet.store.import_base import (
    TOLERANCE,
    ImportProblem,
    direction_of,
    imported_envelope,
    long_interval_flags,
    provenance,
    rate_flag,
    stamp,
)
from netfleet.units import MAX_RATE, plausible_rate

#: tolerance of the rate check on text lines (3 significant digits on both numbers)
TEXT_TOLERANCE = 0.02
_REVERSE = re.compile(r"^\[\s*\d+\] local .* connected with .*\(reverse\)", re.MULTILINE)
_ON = re.compile(r" on (\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}) \(([^)]+)\)")


def _interval_of(lines: list[CsvLine]) -> float:
    """The report interval: the usual span of the lines after the first (a final line starts at
    0, so it never counts), else the shortest span."""
    later = [x.end - x.start for x in lines if x.start > 0 and x.end > x.start]
    spans = later or [x.end - x.start for x in lines if x.end > x.start]
    usual = median(later) if later else (min(spans) if spans else 1.0)
    return round(usual, 2) or usual  # 1.0000 and 0.9988 s lines are a 1 s report interval


def iperf2_flags(
    lines: list[CsvLine], interval: float, tolerance: float, resolution: float
) -> list[dict[str, Any]]:
    """Stream lines whose numbers don't add up, and intervals much longer than usual."""
    intervals, finals = split_finals(lines, interval)
    flags: list[dict[str, Any]] = []
    for n, x in enumerate(intervals + finals):
        where = {"line": n, "stream": x.stream, "span": f"{x.start:g}-{x.end:g}"}
        flag = rate_flag(where, x.bytes, x.end - x.start, x.bps, tolerance, resolution)
        if flag:
            flags.append(flag)
    spanned = intervals[:-1] if len(intervals) > 1 else intervals

    def place(k: int) -> dict[str, Any]:
        x = spanned[k]
        return {"line": k, "stream": x.stream, "span": f"{x.start:g}-{x.end:g}"}

    return flags + long_interval_flags([x.end - x.start for x in spanned], place)


def _side(text: str, side: str, path: Path) -> tuple[str, bool]:
    """(side, inferred?)"""
    said = (
        "server"
        if "Server listening on" in text
        else "client"
        if "Client connecting to" in text
        else None
    )
    if said is not None:
        if side not in ("auto", said):
            raise ImportProblem(f"--side {side}, but this is iperf2's {said} output")
        return said, False
    if side != "auto":
        return side, False
    return ("server" if "server" in path.name.lower() else "client"), True


def _start(
    text: str, csv: list[str], epoch_label: str | None, mtime: float | None
) -> tuple[float, bool]:
    """(epoch seconds, inferred?)"""
    m = _ON.search(text)
    if m is not None:
        when = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
        return when.timestamp(), m.group(2) != "UTC"
    if csv:
        when = datetime.strptime(csv[0].split(",", 1)[0][:14], "%Y%m%d%H%M%S").replace(tzinfo=UTC)
        return when.timestamp(), True
    if epoch_label is not None and str(epoch_label).isdigit():
        return float(epoch_label), True
    if mtime is not None:
        return mtime, True
    raise ImportProblem("no start time: iperf2's plain text has none and there is no {epoch}")


def _check_rates(csv: list[str], lines: list[CsvLine]) -> None:
    """Refuse a rate no link can carry (:func:`netfleet.units.plausible_rate`): NaN, infinite,
    negative or above :data:`~netfleet.units.MAX_RATE`. The CSV lines are read as written (the
    parser drops a non-finite line, which must not vanish here), the text lines as parsed."""
    for n, raw in enumerate(csv, start=1):
        fields = raw.strip().split(",")
        if len(fields) in (9, 14):
            try:
                value: object = float(fields[8])
            except ValueError:
                continue
            if not plausible_rate(value):
                _refuse(f"CSV line {n}: bits/s", fields[8])
    for x in lines:
        if not plausible_rate(x.bps):
            _refuse(f"the {x.start:g}-{x.end:g} s line of stream {x.stream}: bits/s", x.bps)


def _refuse(field: str, value: object) -> None:
    raise ImportProblem(
        f"{field} = {str(value)[:32]!r} is not a rate a link can carry (0 to {MAX_RATE:.0e} bit/s)"
    )


def build_iperf2_envelope(
    path: Path,
    data: bytes,
    text: str,
    *,
    campaign: str,
    labels: dict[str, Any],
    found: list[str],
    epoch_label: str | None,
    side: str,
    mtime: float | None,
) -> Envelope:
    csv_lines = parse_csv(text)
    lines = csv_lines or parse_text(text)
    if not lines:
        raise ImportProblem("no iperf2 interval lines (neither -y C CSV nor text reports)")
    csv = [ln for ln in text.splitlines() if ln.strip() and ln.strip()[0].isdigit() and "," in ln]
    _check_rates(csv if csv_lines else [], lines)
    subject, side_inferred = _side(text, side, path)
    started, start_inferred = _start(text, csv if csv_lines else [], epoch_label, mtime)
    interval = _interval_of(lines)
    udp = any(x.total is not None for x in lines) or "UDP port" in text
    inferred = ["run_key", "test", "repeat", "sequence", "client", "server"]
    inferred += ["direction"] * bool(csv_lines)
    inferred += ["subject"] * side_inferred + ["started_at"] * start_inferred + ["params.interval"]
    tolerance = TOLERANCE if csv_lines else TEXT_TOLERANCE
    run_id, notes = provenance(
        path,
        data,
        inferred,
        found,
        # CSV prints times to 0.1 s (a 2.0116 s final line says 0.0-2.0), text to 0.0001 s
        iperf2_flags(lines, interval, tolerance, 0.05 if csv_lines else 0.00005),
        format="iperf2 -y C" if csv_lines else "iperf2 text",
    )
    secs = max(x.end for x in lines)
    first = csv[0].split(",") if csv_lines and csv else None
    key = "server_output" if subject == "server" else "client_output"
    # -R: the text's connection line says "(reverse)"; CSV does not show it (inferred: not -R)
    reverse = bool(_REVERSE.search(text))
    return imported_envelope(
        run_id,
        campaign,
        status="ok",
        direction=direction_of((subject == "client") != reverse),
        subject=subject,
        params={"interval": interval, "protocol": "udp" if udp else "tcp"},
        labels=labels,
        client=HostRecord(name="client", kind="imported", address=first[1] if first else ""),
        server=HostRecord(name="server", kind="imported", address=first[3] if first else ""),
        engine=EngineRecord(name="iperf2", version="unknown", argv=[]),
        started_at=stamp(started),
        ended_at=stamp(started + secs),
        duration_s=secs,
        result={key: text, "summary": {"reverse": reverse}},
        notes=notes,
    )
