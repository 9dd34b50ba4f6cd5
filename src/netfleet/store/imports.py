"""``netfleet import``: results produced outside netfleet → envelopes in a results root.

* Sources: files, folders (recursively: ``*.json``, ``*.json.gz``, ``*.jsonl``, ``*.csv``,
  ``*.txt``, ``.gz`` or not), globs; gzip is recognised by its magic bytes, not by the name.
* Accepted: what the engine registry's ``imports`` claim — iperf3 ``-J`` output (client or
  server side, with or without ``--get-server-output``) and ``--json-stream`` lines
  (:mod:`netfleet.store.import_iperf3`); iperf 2 ``-y C`` CSV and its ``-e``/plain text, client
  or server side (:mod:`netfleet.store.import_iperf2`); any engine's own format (its
  ``ImportFormat.read``, wrapped here by :func:`engine_envelope`).
* The file's bytes are kept untouched inside the envelope (``notes.imported.original``: UTF-8
  text, or base64 when not UTF-8) with their SHA-256; ``notes.imported`` also says where the
  file came from and which envelope fields were inferred rather than recorded.
* Labels: ``--label k=v`` and/or a path pattern (``{name}`` = one path segment part; preset
  ``seed002`` = ``d={date}/{instance_type}-{epoch}.json.gz``).
* Intervals are checked; what doesn't add up is listed in ``notes.imported.flags`` (and the
  run is not made to look consistent).
* The run id is derived from the content hash, the campaign and the labels, so re-importing the
  same file is a no-op and the same file filed under two campaigns is two runs.
* Hostile input (issue 23): a file is read only when it is a regular file, never through a link
  (unless ``follow_links``); it and its envelope must fit the raw-result limit ingest applies
  (:mod:`netfleet.store.limits`), checked before it is parsed; a malformed file is refused with
  its reason, the others imported.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import stat
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from netfleet.engines import ImportedRun, import_formats
from netfleet.engines.iperf3 import is_text_report
from netfleet.engines.params import spec_params
from netfleet.errors import InputError, StoreError, StoreUnreachable
from netfleet.store.envelope import EngineRecord, Envelope, HostRecord
from netfleet.store.import_base import (
    ImportProblem,
    imported_envelope,
    provenance,
    read_checked,
    run_identity,
    stamp,
)
from netfleet.store.import_iperf2 import build_iperf2_envelope
from netfleet.store.import_iperf3 import build_iperf3_envelope, check_intervals, decode
from netfleet.store.import_labels import labels_of
from netfleet.store.import_pairs import Pairing, pair_key
from netfleet.store.limits import max_raw_bytes, too_large
from netfleet.store.s3 import PartlyWritten
from netfleet.store.sources import (
    PRESETS,
    SIDES,
    SUFFIXES,
    Options,
    check_campaign,
    default_workers,
    expand_sources,
    parse_labels,
    pattern_regex,
)

if TYPE_CHECKING:
    from netfleet.store.root import RawStore

__all__ = [
    "PRESETS",
    "SIDES",
    "SUFFIXES",
    "ImportProblem",
    "check_campaign",
    "check_intervals",
    "decode",
    "default_workers",
    "expand_sources",
    "import_files",
    "parse_labels",
    "pattern_regex",
]


@dataclass
class ImportReport:
    imported: list[str] = field(default_factory=list)
    bad: list[tuple[str, str]] = field(default_factory=list)
    flagged: list[tuple[str, int]] = field(default_factory=list)
    #: (file, the file of this import it repeats): same bytes, campaign and labels, one run
    duplicates: list[tuple[str, str]] = field(default_factory=list)
    #: (file, run id): the same run an earlier import already wrote (same bytes, campaign and
    #: labels); not written again
    already: list[tuple[str, str]] = field(default_factory=list)
    #: (server file, client file) of one iperf3 TCP test, paired by its cookie: one run
    #: (:mod:`netfleet.store.import_pairs`)
    paired: list[tuple[str, str]] = field(default_factory=list)


def _plain(data: bytes) -> bytes:
    """The file's content, gunzipped when it is gzip; refused when it breaks the raw-result
    limit (:func:`netfleet.store.limits.too_large`, the one ``ingest`` applies): inflated at
    most one byte past it, counted before it is parsed."""
    out = data
    if data[:2] == b"\x1f\x8b":
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as fh:
                out = fh.read(max_raw_bytes() + 1)
        except (OSError, EOFError, zlib.error) as exc:
            raise ImportProblem(f"truncated or damaged gzip ({exc})") from exc
    why = too_large(out)
    if why:
        raise ImportProblem(why)
    return out


#: why iperf3's human-readable report is refused: it has no start time, no test parameters
#: (protocol, direction, streams for sure) and rounded numbers, so it cannot make the run an
#: iperf3 JSON file makes; never read as iperf 2's text, whose lines it resembles
IPERF3_TEXT = (
    "iperf3's text output, which netfleet does not import (it lacks the start time, the test "
    "parameters and exact byte counts): run iperf3 with -J (or --json-stream) and import that; "
    "for the server's side, run the client with -J --get-server-output"
)


def build_iperf3_file(path: Path, data: bytes, plain: bytes, **common: Any) -> Envelope:
    """An iperf3 file → its envelope: JSON is read, the text report refused with its reason."""
    if is_text_report(plain):
        raise ImportProblem(IPERF3_TEXT)
    return build_iperf3_envelope(path, data, plain, **common)


#: the engines whose files the store reads itself, with its interval checks (their
#: :class:`~netfleet.engines.ImportFormat` has no ``read``)
STORE_READERS: dict[str, Callable[..., Envelope]] = {
    "iperf3": build_iperf3_file,
    "iperf2": lambda path, data, plain, **common: build_iperf2_envelope(
        path, data, plain.decode("utf-8"), **common
    ),
}


def build_envelope(
    path: Path,
    data: bytes,
    *,
    campaign: str,
    labels: dict[str, str],
    pattern: re.Pattern[str] | None,
    side: str = "auto",
    mtime: float | None = None,
    plain: bytes | None = None,
) -> Envelope:
    """One file → its envelope, read by the engine whose format claims it most surely (the
    engine registry's ``imports``: iperf3 JSON, iperf 2 CSV/text, any engine that declares
    one). ``plain``: the file's content already inflated and checked against the limit."""
    all_labels, found, epoch_label = labels_of(path, labels, pattern)
    plain = _plain(data) if plain is None else plain
    common: dict[str, Any] = {
        "campaign": campaign,
        "labels": all_labels,
        "found": found,
        "epoch_label": epoch_label,
        "side": side,
        "mtime": mtime,
    }
    formats = import_formats()
    claims = {name: fmt.claims(plain) for name, fmt in formats.items()}
    best = max(claims.values(), default=0)
    if not best:
        raise ImportProblem(
            "not the output of a tool netfleet imports: "
            + "; ".join(fmt.title for fmt in formats.values())
        )
    name = next(n for n, c in claims.items() if c == best)
    read = formats[name].read
    if read is None:
        return STORE_READERS[name](path, data, plain, **common)
    return engine_envelope(name, read(plain, side), path, data, **common)


def engine_envelope(
    engine: str,
    run: ImportedRun,
    path: Path,
    data: bytes,
    *,
    campaign: str,
    labels: dict[str, Any],
    found: list[str],
    epoch_label: str | None,
    side: str,
    mtime: float | None,
) -> Envelope:
    """An engine's reading of one file, in an envelope with the file's bytes and provenance."""
    if side != "auto" and side != run.subject:
        raise ImportProblem(f"--side {side}, but this is the {run.subject}'s output")
    inferred = ["run_key", "test", "repeat", "sequence", "client", "server"]
    started = run.started_at
    if started is None:
        if epoch_label is not None and str(epoch_label).isdigit():
            started = float(epoch_label)
        elif mtime is not None:
            started = mtime
        else:
            raise ImportProblem("no start time in the file and no {epoch} in the path")
        inferred.append("started_at")
    run_id, notes = provenance(path, data, inferred, found, run.flags, format=engine)
    return imported_envelope(
        run_id,
        campaign,
        status=run.status,
        reason=run.reason,
        direction=run.direction,
        subject=run.subject,
        params=spec_params(run.params),
        labels=labels,
        client=HostRecord(name="client", kind="imported", address=run.client_address),
        server=HostRecord(name="server", kind="imported", address=run.server_address),
        engine=EngineRecord(name=engine, version=run.version, argv=[]),
        started_at=stamp(started),
        ended_at=stamp(started + run.duration_s),
        duration_s=run.duration_s,
        result=run.result,
        notes=notes,
    )


#: files at which an import spreads over worker processes (below, starting them costs more)
PARALLEL_MIN = 64


def run_of(rel: str) -> str:
    """The run id of a raw result's relative key (``…/<run_id>.json.gz``)."""
    return rel.rsplit("/", 1)[-1].removesuffix(".json.gz")


Progress = Callable[[int, int], None]


#: one file's outcome: (source, key, gzip bytes, interval flags, iperf3 pairing key) or
#: (source, why not)
Prepared = tuple[str, str, bytes, int, "tuple[str, str] | None"] | tuple[str, str]


def prepare(path: Path, opts: Options, listed: tuple[int, int, int] | None = None) -> Prepared:
    """Read, check and encode one file (the one ``listed``: its inode, size and mtime when it
    was listed): no side effects, so it can run in a worker process. Whatever the file holds,
    the outcome is its envelope or the reason it is refused."""
    from netfleet.store.rawfile import encode

    try:
        data, mtime = _read(path, opts.follow_links, listed)
        env = build_envelope(
            path,
            data,
            campaign=opts.campaign,
            labels=opts.labels,
            pattern=opts.pattern,
            side=opts.side,
            mtime=mtime,
        )
        run_id = run_identity(env.notes["imported"]["sha256"], env.campaign, env.labels)
        env = env.model_copy(update={"run_id": run_id, "run_key": run_id})
        rel, gz = encode(env, readable=True)
    except ImportProblem as exc:
        return (str(path), str(exc))
    except StoreError as exc:  # the envelope breaks the raw-result limit, or its path rules
        return (str(path), exc.message)
    except UnicodeDecodeError as exc:
        return (str(path), f"not UTF-8 text ({exc.reason} at byte {exc.start})")
    except OSError as exc:
        return (str(path), f"unreadable ({exc.strerror or exc})")
    except Exception as exc:  # a shape no check foresaw: this file only, never the folder
        return (str(path), f"cannot be imported ({type(exc).__name__}: {str(exc)[:200]})")
    return (str(path), rel, gz, len(env.notes["imported"]["flags"]), pair_key(env))


def _read(
    path: Path, follow_links: bool, listed: tuple[int, int, int] | None
) -> tuple[bytes, float]:
    """The file's bytes and mtime (:func:`read_checked`: the file ``listed``)."""
    data, st = read_checked(path, follow_links, listed=listed)
    return data, st.st_mtime


def _prepare_listed(opts: Options, path: Path, listed: tuple[int, int, int] | None) -> Prepared:
    return prepare(path, opts, listed)


def _stamp(path: Path) -> tuple[int, int, int] | None:
    """A listed regular file's inode, size and mtime (ns); None for anything else (refused
    when read)."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns) if stat.S_ISREG(st.st_mode) else None


def _prepared(paths: list[Path], opts: Options, workers: int) -> Iterator[Prepared]:
    """Each file prepared, in order: in ``workers`` processes when there are enough files."""
    stamps = [_stamp(p) for p in paths]
    if workers < 2 or len(paths) < PARALLEL_MIN:
        yield from (prepare(p, opts, s) for p, s in zip(paths, stamps, strict=True))
        return
    from netfleet.workers import process_pool

    pool = process_pool(workers)
    try:
        yield from pool.map(partial(_prepare_listed, opts), paths, stamps, chunksize=8)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def import_files(
    sources: Iterable[str],
    root: RawStore,
    *,
    campaign: str = "imported",
    labels: Iterable[str] = (),
    pattern: str | None = None,
    side: str = "auto",
    progress: Progress | None = None,
    workers: int = 1,
    follow_links: bool = False,
    pair: bool = True,
) -> ImportReport:
    """Import every source file into ``root`` (a local or S3 results root). A file
    that cannot be imported is reported with its reason; the others are still imported.
    The client's and the server's iperf3 file of one TCP test are one run
    (:mod:`netfleet.store.import_pairs`; ``pair=False``: a run per file).

    With ``workers`` > 1 (``netfleet import`` passes one per CPU, at most 4), files are read,
    checked and compressed in that many processes (``forkserver``: a script calling this must
    guard its entry point with ``if __name__ == "__main__"``) and written by this one, in
    groups (:data:`GROUP_FILES` files, :data:`GROUP_BYTES`, :data:`GROUP_SECONDS` at most),
    each file atomically. An interrupted import (Ctrl-C, a failure) still writes the group it
    had prepared and keeps everything written; after a crash a file is either whole or absent;
    importing again duplicates nothing (a run id is the content hash with the campaign and the
    labels: :func:`~netfleet.store.import_base.run_identity`); files of this import that repeat
    an earlier one (same bytes, campaign and labels) are listed in ``duplicates``, written
    once; files whose run is already in ``root`` (an earlier import wrote it) are listed in
    ``already`` with its run id, not written again. Links and special files are refused
    unless ``follow_links``."""
    if side not in SIDES:
        raise InputError(f"--side {side!r}: expected one of {', '.join(SIDES)}")
    opts = Options(
        campaign=check_campaign(campaign),
        labels=parse_labels(labels),
        pattern=pattern_regex(pattern) if pattern else None,
        side=side,
        follow_links=follow_links,
    )
    paths = list(expand_sources(sources, follow_links))
    report = ImportReport()
    group = _Group(root, report)
    first: dict[str, str] = {}  # key → the file that made it

    def take(source: str, rel: str, gz: bytes, flags: int) -> None:
        if rel in first:
            report.duplicates.append((source, first[rel]))
        elif root.has(rel):
            first[rel] = source
            report.already.append((source, run_of(rel)))
        else:
            first[rel] = source
            group.add(source, rel, gz, flags)

    pairs = Pairing(take)  # an iperf3 test's client and server files: one run
    report.paired = pairs.paired
    try:
        try:
            for done, outcome in enumerate(_prepared(paths, opts, workers), start=1):
                if len(outcome) == 2:
                    report.bad.append(outcome)
                else:
                    pairs.add(outcome if pair else (*outcome[:4], None))
                if progress is not None:
                    progress(done, len(paths))
        except BaseException as exc:
            if not isinstance(exc, StoreError):  # Ctrl-C, a failure: the prepared are written
                pairs.release()
                group.flush()
            raise
        pairs.release()
        group.flush()
    except StoreError as exc:  # the store failed under us: say how far the import got
        kind = StoreUnreachable if isinstance(exc, StoreUnreachable) else StoreError
        raise kind(
            f"{exc.message} — import stopped: {len(report.imported)} of {len(paths)} file(s) "
            f"were imported before it, {len(report.bad)} refused",
            hint=(exc.hint or "")
            + "; then import the same sources again: files already imported are no-ops",
        ) from exc
    return report


#: an import writes its files in groups of at most this many files, bytes and seconds: one
#: ``syncfs`` pair per group (≈ 10 ms) instead of two ``fsync`` per file (2,000 seed-002 files
#: cost the writing process 4.1 s in fsync and 2.6 s in opening files and directories)
GROUP_FILES = 256
GROUP_BYTES = 32 * 1024 * 1024
GROUP_SECONDS = 2.0


@dataclass
class _Group:
    """Prepared files waiting to be written together (:meth:`RawStore.write_encoded_many`)."""

    root: RawStore
    report: ImportReport
    items: list[tuple[str, str, bytes, int]] = field(default_factory=list)
    size: int = 0
    since: float = 0.0

    def add(self, source: str, rel: str, gz: bytes, flags: int) -> None:
        if not self.items:
            self.since = time.monotonic()
        self.items.append((source, rel, gz, flags))
        self.size += len(gz)
        if (
            len(self.items) >= GROUP_FILES
            or self.size >= GROUP_BYTES
            or time.monotonic() - self.since >= GROUP_SECONDS
        ):
            self.flush()

    def flush(self) -> None:
        items, self.items, self.size = self.items, [], 0
        if not items:
            return
        try:
            written = self.root.write_encoded_many([(rel, gz) for _, rel, gz, _ in items])
        except PartlyWritten as exc:  # S3: those uploaded before the failure are imported
            self._record(items, exc.written)
            raise
        self._record(items, written)

    def _record(self, items: list[tuple[str, str, bytes, int]], written: list[Any]) -> None:
        for (source, _, _, flags), where in zip(items, written, strict=False):
            self.report.imported.append(str(where))
            if flags:
                self.report.flagged.append((source, flags))
