"""What every ``netfleet import`` format shares: the problem type, provenance (the file's bytes
kept untouched), the imported envelope, and the interval checks' common pieces."""

from __future__ import annotations

import base64
import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from statistics import median
from typing import Any

from netfleet import __version__
from netfleet.store.envelope import FORMAT_VERSION, Envelope

#: relative tolerance of the interval checks (iperf3 rounds to microseconds / float)
TOLERANCE = 0.01
#: an interval this many times longer than the run's usual one is flagged
LONG_INTERVAL = 1.5


class ImportProblem(Exception):
    """This file cannot be imported; the message is the reason (without the path)."""


def stamp(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def rate_flag(
    where: dict[str, Any],
    nbytes: float,
    secs: float,
    bps: float,
    tolerance: float,
    resolution: float = 0.0,
) -> dict[str, Any] | None:
    """A flag when the reported rate is not bytes × 8 / seconds, within ``tolerance`` plus what
    the printed times' ``resolution`` (half a last digit, in seconds) allows."""
    if secs <= 0:
        return None
    expect = nbytes * 8 / secs
    if abs(expect - bps) <= (tolerance + resolution / secs) * max(expect, bps, 1.0):
        return None
    return {
        **where,
        "field": "bits_per_second",
        "detail": f"{bps:.0f} ≠ bytes×8/seconds = {expect:.0f}",
    }


def long_interval_flags(
    spans: list[tuple[dict[str, Any], float]], what: str = "interval"
) -> list[dict[str, Any]]:
    """Intervals much longer than the run's usual one: their bytes may belong to a shorter span
    (a stalled report), so their rate is not comparable with the others'. Needs ≥ 3 intervals."""
    if len(spans) < 3:
        return []
    usual = median(secs for _, secs in spans)
    flags = []
    for where, secs in spans:
        if usual > 0 and secs > LONG_INTERVAL * usual:
            flags.append(
                {
                    **where,
                    "field": "seconds",
                    "detail": f"{secs:g} s is {secs / usual:.1f}× the run's usual {usual:g} s "
                    f"{what}: its rate is not comparable with the others'",
                }
            )
    return flags


def provenance(
    path: Path,
    data: bytes,
    inferred: list[str],
    found: list[str],
    flags: list[dict[str, Any]],
    *,
    digest: str | None = None,
    keep_bytes: bool = True,
    **extra: Any,
) -> tuple[str, dict[str, Any]]:
    """The run id (from the content hash) and ``notes`` keeping the file's bytes untouched
    (``keep_bytes=False``: not kept — an import by reference leaves them at their source;
    ``digest``: the bytes' SHA-256 when the caller has it)."""
    digest = digest or hashlib.sha256(data).hexdigest()
    imported: dict[str, Any] = {
        "from": str(path),
        "sha256": digest,
        "size": len(data),
        "inferred": inferred,
        "pattern_labels": found,
        "flags": flags,
        **extra,
    }
    if keep_bytes:
        try:
            original, encoding = data.decode("utf-8"), "utf-8"
        except UnicodeDecodeError:
            original, encoding = base64.b64encode(data).decode(), "base64"
        imported["original_encoding"] = encoding
        imported["original"] = original
    return f"import-{digest[:16]}", {"imported": imported}


#: ``json.dumps(value, sort_keys=True, separators=(",", ":"))``, its encoder made once
_compact_sorted = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode


def run_identity(digest: str, campaign: str, labels: dict[str, Any]) -> str:
    """An imported run's id: the file's content hash *and* what the user filed it under — the
    same file imported into two campaigns, or with other labels, is two runs; imported again
    as it was, the same run (a no-op)."""
    key = _compact_sorted([digest, campaign, labels])
    return "import-" + hashlib.sha256(key.encode()).hexdigest()[:16]


def imported_envelope(run_id: str, campaign: str, **fields: Any) -> Envelope:
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


def plain_envelope(run_id: str, campaign: str, **fields: Any) -> dict[str, Any]:
    """:func:`imported_envelope`'s envelope as the catalog's row makers read it (its JSON form:
    the defaults of :class:`~netfleet.store.envelope.Envelope`, ``HostRecord`` and
    ``EngineRecord`` filled in), made without validating a model: for import by reference,
    whose builder gives JSON's values already (tests/test_import_reference.py holds it equal to
    the model's dump over every captured output). ``client``, ``server``, ``engine``: dicts."""
    out: dict[str, Any] = {
        "netfleet_format": FORMAT_VERSION,
        "netfleet_version": __version__,
        "run_id": run_id,
        "run_key": run_id,
        "campaign": campaign,
        "test": "imported",
        "repeat": 0,
        "sequence": 0,
        "reason": None,
        "result": None,
        "stdout_text": None,
        "stderr_text": None,
        "notes": {},
        "outputs": {},
        "state": None,
        **fields,
    }
    out["client"] = {"labels": {}, "facts": {}, **out["client"]}
    out["server"] = {"labels": {}, "facts": {}, **out["server"]}
    out["engine"] = {"server_argv": [], "commands": [], **out["engine"]}
    return out


def direction_of(subject_sends: bool) -> str:
    """``direction`` is relative to the subject host: ``out`` when it sends."""
    return "out" if subject_sends else "in"
