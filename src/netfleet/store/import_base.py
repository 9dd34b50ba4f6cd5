"""What every ``netfleet import`` format shares: the problem type, reading a file checked
(:func:`read_checked`), provenance (the file's bytes kept untouched), the imported envelope
(the model, or its JSON form without it: :func:`plain_envelope`), and the interval checks'
common pieces. Loads no model: pydantic is imported where an envelope model is made."""

from __future__ import annotations

import base64
import errno
import hashlib
import json
import os
import stat
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from itertools import repeat
from operator import mul, truediv
from pathlib import Path
from statistics import median
from typing import TYPE_CHECKING, Any, cast

from netfleet import __version__
from netfleet.store.limits import max_raw_bytes

if TYPE_CHECKING:  # the model (pydantic) is loaded where an envelope is made, not before
    from netfleet.store.envelope import Envelope

#: :data:`netfleet.store.envelope.FORMAT_VERSION`, for :func:`plain_envelope` without loading
#: the model's module (tests/test_import_reference.py holds the two envelopes equal)
FORMAT_VERSION = 1

#: relative tolerance of the interval checks (iperf3 rounds to microseconds / float)
TOLERANCE = 0.01
#: an interval this many times longer than the run's usual one is flagged
LONG_INTERVAL = 1.5


class ImportProblem(Exception):
    """This file cannot be imported; the message is the reason (without the path)."""


def stamp(epoch: float) -> str:
    """``%Y-%m-%dT%H:%M:%S.%fZ`` of the UTC time (by ``isoformat``: half ``strftime``'s time;
    ``strftime``'s own below year 1000, whose ``%Y`` it does not pad)."""
    moment = datetime.fromtimestamp(epoch, UTC).replace(tzinfo=None)
    if moment.year < 1000:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return moment.isoformat(timespec="microseconds") + "Z"


def rate_flag(
    where: dict[str, Any],
    nbytes: float,
    secs: float,
    bps: float,
    tolerance: float,
    resolution: float = 0.0,
) -> dict[str, Any] | None:
    """A flag when the reported rate is not bytes × 8 / seconds (:func:`rates_off`)."""
    if not rates_off([nbytes], [secs], [bps], tolerance, resolution)[0]:
        return None
    return {
        **where,
        "field": "bits_per_second",
        "detail": f"{bps:.0f} ≠ bytes×8/seconds = {nbytes * 8 / secs:.0f}",
    }


def rates_off(
    nbytes: Sequence[float | None],
    secs: Sequence[float],
    bps: Sequence[float | None],
    tolerance: float,
    resolution: float = 0.0,
) -> list[bool]:
    """Per interval, whether its reported rate is not bytes × 8 / seconds, within
    ``tolerance`` plus what the printed times' ``resolution`` (half a last digit, in seconds)
    allows (False without bytes, a rate or a positive duration). Every interval at once, by
    the ratio of the expected rate to the reported one, when each is surely within half the
    tolerance of 1, or at once when each is the expected rate exactly (iperf3's own: most
    files) — a few C calls a column; else each one."""
    if secs and None not in nbytes and None not in bps:
        sizes, rates = cast("Sequence[float]", nbytes), cast("Sequence[float]", bps)
        if min(secs) > 0 and min(rates) >= 1.0:
            expected = list(map(truediv, map(mul, sizes, repeat(8.0)), secs))
            if expected == rates:
                return [False] * len(secs)
            ratios = list(map(truediv, expected, rates))
            margin = tolerance / 2  # (|e − y| = y·|r − 1| ≤ y·tolerance/2: not off, surely)
            if min(ratios) >= 1.0 - margin and max(ratios) <= 1.0 + margin:
                return [False] * len(secs)
    return [
        x is not None
        and y is not None
        and c > 0
        and abs((e := x * 8 / c) - y) > (tolerance + resolution / c) * max(e, y, 1.0)
        for x, c, y in zip(nbytes, secs, bps, strict=True)
    ]


def long_interval_flags(
    secs: Sequence[float], where: Callable[[int], dict[str, Any]], what: str = "interval"
) -> list[dict[str, Any]]:
    """Intervals much longer than the run's usual one: their bytes may belong to a shorter span
    (a stalled report), so their rate is not comparable with the others'. Needs ≥ 3 intervals.
    ``secs``: each interval's span; ``where(k)``: the place of the k-th (made for a flagged
    one only: a dict per interval was a tenth of an import's interval checks)."""
    if len(secs) < 3:
        return []
    least = min(secs)
    if least > 0 and max(secs) <= LONG_INTERVAL * least:  # (the usual one is at least the least)
        return []
    usual = median(secs)
    if not usual > 0 or max(secs) <= LONG_INTERVAL * usual:
        return []
    flags = []
    for k, span in enumerate(secs):
        if span > LONG_INTERVAL * usual:
            flags.append(
                {
                    **where(k),
                    "field": "seconds",
                    "detail": f"{span:g} s is {span / usual:.1f}× the run's usual {usual:g} s "
                    f"{what}: its rate is not comparable with the others'",
                }
            )
    return flags


def provenance(
    path: Path | str,
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
    from netfleet.store.envelope import Envelope

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


def read_checked(
    path: Path | str,
    follow_links: bool,
    limit: int | None = None,
    listed: tuple[int, int, int] | None = None,
) -> tuple[bytes, os.stat_result]:
    """The file's bytes and its stat when opened: a regular file only, never through a link
    unless asked, never more than the raw-result limit (``limit``: it, read by the caller
    from the environment once for many files). ``listed``: the inode, size and mtime (ns) the
    listing saw — the file opened must be that one (``O_NOFOLLOW`` guards only the last
    component: a folder on the path swapped for a link after the listing would otherwise
    have root read a file elsewhere)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | (0 if follow_links else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ImportProblem(
                "a symbolic link: not followed (pass --follow-links to read through links)"
            ) from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            what = (
                "a folder"
                if stat.S_ISDIR(st.st_mode)
                else _KINDS.get(stat.S_IFMT(st.st_mode), "a special file")
            )
            raise ImportProblem(f"not a regular file ({what})")
        here = (st.st_ino, st.st_size, st.st_mtime_ns)
        if listed is not None and not follow_links and listed != here:
            raise ImportProblem(
                "not the file listed (changed, or a folder on its path replaced since): "
                "import it again"
            )
        limit = max_raw_bytes() if limit is None else limit
        if st.st_size > limit:
            raise ImportProblem(
                f"{st.st_size:,} bytes: more than {limit:,} (NETFLEET_MAX_RAW_BYTES)"
            )
        # its size and one byte more, by the descriptor (no file object: a third of the time
        # of a small file's read); a file grown since its stat is read on to the limit
        data = _read_up_to(fd, st.st_size + 1, st.st_size + 1)
        if len(data) > st.st_size:
            data += _read_up_to(fd, limit - len(data) + 1, _CHUNK)
        return data, st
    finally:
        os.close(fd)


#: bytes read at a time past a file's size (a read of the limit would allocate it first)
_CHUNK = 1 << 20


def _read_up_to(fd: int, most: int, chunk: int) -> bytes:
    """At most ``most`` bytes from ``fd``, ``chunk`` at a time: fewer only at its end."""
    parts = []
    got = 0
    while got < most:
        part = os.read(fd, min(most - got, chunk))
        if not part:
            break
        parts.append(part)
        got += len(part)
    return parts[0] if len(parts) == 1 else b"".join(parts)


_KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
}
