"""``netfleet import``: iperf3 JSON produced outside netfleet → envelopes in a results root.

* Sources: files, folders (recursively: ``*.json``, ``*.json.gz``, ``*.jsonl``), globs; gzip is
  recognised by its magic bytes, not by the name.
* Accepted: iperf3 ``-J`` output (client or server side, with or without
  ``--get-server-output``) and ``--json-stream`` lines (``{"event": ..., "data": ...}``).
* The file's bytes are kept untouched inside the envelope (``notes.imported.original``: UTF-8
  text, or base64 when not UTF-8) with their SHA-256; ``notes.imported`` also says where the
  file came from and which envelope fields were inferred rather than recorded.
* Labels: ``--label k=v`` and/or a path pattern (``{name}`` = one path segment part; preset
  ``seed002`` = ``d={date}/{instance_type}-{epoch}.json.gz``).
* Intervals are checked (``seconds`` vs ``end - start``, ``bits_per_second`` vs
  ``bytes * 8 / seconds``); what doesn't add up is listed in ``notes.imported.flags`` (and the
  run is not made to look consistent).
* The run id is derived from the content hash, so re-importing the same file is a no-op.
"""

from __future__ import annotations

import base64
import glob as globmod
import gzip
import hashlib
import io
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from netfleet import __version__
from netfleet.errors import InputError
from netfleet.store.envelope import EngineRecord, Envelope, HostRecord

PRESETS = {"seed002": "d={date}/{instance_type}-{epoch}.json.gz"}
SUFFIXES = (".json", ".json.gz", ".jsonl", ".jsonl.gz", ".csv", ".csv.gz")
#: larger files are refused (memory: a file is decoded whole)
MAX_BYTES = 512 * 1024 * 1024
#: relative tolerance of the interval checks (iperf3 rounds to microseconds / float)
TOLERANCE = 0.01


class ImportProblem(Exception):
    """This file cannot be imported; the message is the reason (without the path)."""


@dataclass
class ImportReport:
    imported: list[str] = field(default_factory=list)
    bad: list[tuple[str, str]] = field(default_factory=list)
    flagged: list[tuple[str, int]] = field(default_factory=list)


def expand_sources(sources: Iterable[str]) -> Iterator[Path]:
    """Files named, found under folders, or matched by globs; a source matching nothing is an
    input error."""
    for src in sources:
        path = Path(src)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and p.name.endswith(SUFFIXES))
        elif path.is_file():
            found = [path]
        else:
            found = sorted(Path(p) for p in globmod.glob(src, recursive=True) if Path(p).is_file())
        if not found:
            raise InputError(
                f"{src}: no such file, folder or matching glob",
                hint="pass iperf3 JSON files (.json, .json.gz), folders or quoted globs",
            )
        yield from found


def pattern_regex(pattern: str) -> re.Pattern[str]:
    """``d={date}/{instance_type}-{epoch}.json.gz`` → a regex matched against the end of the
    path; each ``{name}`` matches within one path segment, without ``-`` greed across names."""
    pattern = PRESETS.get(pattern, pattern)
    out, pos = [], 0
    for m in re.finditer(r"\{([A-Za-z_][A-Za-z0-9_]*)\}", pattern):
        out.append(re.escape(pattern[pos : m.start()]))
        out.append(f"(?P<{m.group(1)}>[^/]+?)")
        pos = m.end()
    out.append(re.escape(pattern[pos:]))
    try:
        return re.compile("(?:^|/)" + "".join(out) + "$")
    except re.error as exc:
        raise InputError(
            f"--pattern {pattern!r}: {exc}", hint="use {name} placeholders, each name once"
        ) from exc


def decode(data: bytes) -> dict[str, Any]:
    """iperf3 JSON (one document, or --json-stream lines) → the ``-J`` document shape."""
    data = _plain(data)
    text = data.decode("utf-8", errors="strict")
    stripped = text.strip()
    if not stripped:
        raise ImportProblem("empty file")
    try:
        doc = json.loads(stripped)
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
    doc: dict[str, Any] = {"intervals": []}
    for n, line in enumerate(lines, 1):
        try:
            ev = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ImportProblem(
                f"--json-stream line {n} is not JSON ({exc.msg}); truncated stream?"
            ) from exc
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


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def check_intervals(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Interval sums whose numbers don't add up: listed, never averaged away."""
    flags: list[dict[str, Any]] = []
    for i, iv in enumerate(doc.get("intervals") or []):
        s = iv.get("sum") if isinstance(iv, dict) else None
        if not isinstance(s, dict):
            continue
        start, end, secs = _num(s.get("start")), _num(s.get("end")), _num(s.get("seconds"))
        nbytes, bps = _num(s.get("bytes")), _num(s.get("bits_per_second"))
        if start is None or end is None or secs is None:
            continue
        if abs((end - start) - secs) > max(TOLERANCE * secs, 1e-3):
            flags.append({"interval": i, "field": "seconds", "detail": f"{secs} ≠ end−start"})
        if nbytes is not None and bps is not None and secs > 0:
            expect = nbytes * 8 / secs
            if abs(expect - bps) > TOLERANCE * max(expect, bps, 1.0):
                detail = f"{bps} ≠ bytes×8/seconds = {expect:.0f}"
                flags.append({"interval": i, "field": "bits_per_second", "detail": detail})
    return flags


def _stamp(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


IPERF2_CSV = re.compile(r"^\d{14}(?:\.\d+)?,[^,]*,\d+,[^,]*,\d+,-?\d+,[\d.]+-[\d.]+,\d+,\d+")


def _plain(data: bytes) -> bytes:
    """The file's content, gunzipped when it is gzip (at most :data:`MAX_BYTES` of it)."""
    if data[:2] != b"\x1f\x8b":
        return data
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as fh:
            out = fh.read(MAX_BYTES + 1)
    except (OSError, EOFError) as exc:
        raise ImportProblem(f"truncated or damaged gzip ({exc})") from exc
    if len(out) > MAX_BYTES:
        raise ImportProblem(f"expands to more than {MAX_BYTES} bytes once gunzipped")
    return out


def iperf2_csv_flags(text: str) -> list[dict[str, Any]]:
    """iperf2 ``-y C`` lines whose rate is not bytes × 8 / (end − start)."""
    flags: list[dict[str, Any]] = []
    for i, line in enumerate(ln for ln in text.splitlines() if IPERF2_CSV.match(ln)):
        f = line.split(",")
        start, end = (float(x) for x in f[6].split("-", 1))
        nbytes, bps = float(f[7]), float(f[8])
        secs = end - start
        if secs > 0:
            expect = nbytes * 8 / secs
            if abs(expect - bps) > TOLERANCE * max(expect, bps, 1.0):
                detail = f"{bps:.0f} ≠ bytes×8/seconds = {expect:.0f}"
                flags.append({"line": i, "field": "bits_per_second", "detail": detail})
    return flags


def _labels(
    path: Path, labels: dict[str, str], pattern: re.Pattern[str] | None
) -> tuple[dict[str, Any], list[str], str | None]:
    found: dict[str, str] = {}
    if pattern is not None:
        m = pattern.search(path.as_posix())
        if m is None:
            raise ImportProblem(f"the path does not match --pattern {pattern.pattern!r}")
        found = {k: v for k, v in m.groupdict().items() if v is not None}
    all_labels: dict[str, Any] = {**found, **labels}
    all_labels.pop("date", None)
    epoch = all_labels.pop("epoch", None)
    return all_labels, sorted(found), epoch


def _provenance(
    path: Path, data: bytes, inferred: list[str], found: list[str], flags: list[dict[str, Any]]
) -> tuple[str, dict[str, Any]]:
    digest = hashlib.sha256(data).hexdigest()
    try:
        original: str = data.decode("utf-8")
        encoding = "utf-8"
    except UnicodeDecodeError:
        original, encoding = base64.b64encode(data).decode(), "base64"
    return f"import-{digest[:16]}", {
        "imported": {
            "from": str(path),
            "sha256": digest,
            "size": len(data),
            "inferred": inferred,
            "pattern_labels": found,
            "flags": flags,
            "original_encoding": encoding,
            "original": original,
        }
    }


def _imported(run_id: str, campaign: str, **fields: Any) -> Envelope:
    """An imported run's envelope: one run of its own (no test, repeat or sequence recorded)."""
    return Envelope(
        netfleet_version=__version__,
        run_id=run_id,
        run_key=run_id,
        campaign=campaign,
        test="imported",
        repeat=0,
        sequence=0,
        **fields,
    )


def build_iperf2_envelope(
    path: Path, data: bytes, text: str, *, campaign: str, labels: dict[str, Any], found: list[str]
) -> Envelope:
    """iperf2 ``-y C`` (client side) → an iperf2 envelope; the time stamp of the first line is
    iperf2's local time, taken as UTC (listed as inferred)."""
    lines = [ln for ln in text.splitlines() if IPERF2_CSV.match(ln)]
    first = lines[0].split(",")
    started = datetime.strptime(first[0][:14], "%Y%m%d%H%M%S").replace(tzinfo=UTC)
    ends = [float(ln.split(",")[6].split("-", 1)[1]) for ln in lines]
    inferred = ["run_key", "test", "repeat", "sequence", "client", "server", "started_at"]
    run_id, notes = _provenance(path, data, inferred, found, iperf2_csv_flags(text))
    secs = max(ends)
    return _imported(
        run_id,
        campaign,
        status="ok",
        direction="out",
        subject="client",
        params={},
        labels=labels,
        client=HostRecord(name="client", kind="imported", address=first[1]),
        server=HostRecord(name="server", kind="imported", address=first[3]),
        engine=EngineRecord(name="iperf2", version="unknown", argv=[]),
        started_at=_stamp(started.timestamp()),
        ended_at=_stamp(started.timestamp() + secs),
        duration_s=secs,
        result={"client_output": text, "summary": {"reverse": False}},
        notes=notes,
    )


def build_envelope(
    path: Path,
    data: bytes,
    *,
    campaign: str,
    labels: dict[str, str],
    pattern: re.Pattern[str] | None,
) -> Envelope:
    all_labels, found, epoch_label = _labels(path, labels, pattern)
    plain = _plain(data)
    head = plain.lstrip()[:200].decode("utf-8", errors="replace")
    if IPERF2_CSV.match(head):
        text = plain.decode("utf-8")
        return build_iperf2_envelope(
            path, data, text, campaign=campaign, labels=all_labels, found=found
        )
    doc = decode(plain)
    start = doc.get("start") or {}
    inferred = ["run_key", "test", "repeat", "sequence", "client", "server"]
    secs = (start.get("timestamp") or {}).get("timesecs")
    if not isinstance(secs, int | float):
        if epoch_label is None or not str(epoch_label).isdigit():
            raise ImportProblem(
                "no start time: neither start.timestamp.timesecs nor an {epoch} in the path"
            )
        secs = int(epoch_label)
        inferred.append("started_at")
    test = start.get("test_start") or {}
    duration = test.get("duration")
    end = doc.get("end") or {}
    ended = (end.get("sum_received") or end.get("sum") or {}).get("end")
    elapsed = float(ended) if isinstance(ended, int | float) else float(duration or 0)
    server_side = "accepted_connection" in start and "connecting_to" not in start
    direction = "bidir" if test.get("bidir") else ("in" if test.get("reverse") else "out")
    version = str(start.get("version", "iperf3 (unknown version)"))
    status = "failed" if doc.get("error") else "ok"
    run_id, notes = _provenance(path, data, inferred, found, check_intervals(doc))
    peer = (start.get("connecting_to") or {}).get("host") or ""
    accepted = (start.get("accepted_connection") or {}).get("host") or ""
    return _imported(
        run_id,
        campaign,
        status=status,
        reason=str(doc["error"]) if doc.get("error") else None,
        direction=direction,
        subject="server" if server_side else "client",
        params={k: test[k] for k in ("protocol", "num_streams", "duration", "omit") if k in test},
        labels=all_labels,
        client=HostRecord(name="client", kind="imported", address=accepted if server_side else ""),
        server=HostRecord(name="server", kind="imported", address=peer),
        engine=EngineRecord(name="iperf3", version=version.removeprefix("iperf "), argv=[]),
        started_at=_stamp(float(secs)),
        ended_at=_stamp(float(secs) + elapsed),
        duration_s=elapsed,
        result=doc,
        notes=notes,
    )


def parse_labels(items: Iterable[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            raise InputError(f"--label {item!r}: expected key=value", hint="e.g. --label cloud=aws")
        out[key] = value
    return out


def import_files(
    sources: Iterable[str],
    root: Any,
    *,
    campaign: str = "imported",
    labels: Iterable[str] = (),
    pattern: str | None = None,
) -> ImportReport:
    """Import every source file into ``root`` (a :class:`netfleet.store.root.RawStore`). A file
    that cannot be imported is reported with its reason; the others are still imported."""
    fixed = parse_labels(labels)
    regex = pattern_regex(pattern) if pattern else None
    report = ImportReport()
    for path in expand_sources(sources):
        try:
            size = path.stat().st_size
            if size > MAX_BYTES:
                raise ImportProblem(
                    f"{size} bytes is more than the {MAX_BYTES} an iperf3 output can plausibly be"
                )
            data = path.read_bytes()
            env = build_envelope(path, data, campaign=campaign, labels=fixed, pattern=regex)
        except ImportProblem as exc:
            report.bad.append((str(path), str(exc)))
            continue
        except UnicodeDecodeError as exc:
            report.bad.append((str(path), f"not UTF-8 text ({exc.reason} at byte {exc.start})"))
            continue
        except OSError as exc:
            report.bad.append((str(path), f"unreadable ({exc.strerror or exc})"))
            continue
        report.imported.append(str(root.write(env)))
        flags = env.notes["imported"]["flags"]
        if flags:
            report.flagged.append((str(path), len(flags)))
    return report
