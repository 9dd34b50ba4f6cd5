"""The campaign journal: an append-only record of what a campaign did, so it can resume.

One JSON object per line in ``RESULTS/.netfleet/journal/<campaign>.jsonl`` (a hidden directory:
Athena, Spark and the catalog never read it). Each record is written with a single ``write`` on
an ``O_APPEND`` descriptor and fsynced before netfleet goes on, so a ``kill -9`` loses at most
the record being written; a torn last line is ignored on reading. One controller at a time: the
file is locked (``flock``) while a campaign runs, and the lock dies with its process.

Records (``event``):

- ``session`` — a ``netfleet run`` began (``mode``: ``fresh`` forgets earlier outcomes,
  ``resume`` continues them).
- ``run_started`` / ``run_finished`` — a run began / ended with ``status``, ``run_id``, the
  result file, and the processes confirmed stopped (``stopped``: ``[[host, pid], …]``).
- ``process`` — a process was started: ``host``, ``pid``, ``argv``, ``role``, ``run_key``,
  ``identity`` (local kinds) and ``proof``: HMAC-SHA256 keyed by the process's random launch
  token (in its environment only, never on disk) over this journal's real path, the host and
  the PID — checked against ``/proc/PID/environ`` before a stray is ever signalled. Until a
  ``run_finished`` or ``stray`` record closes it, it may still run on its host.
- ``stray`` — a process left running was checked: ``outcome`` ``killed``, ``gone``,
  ``replaced`` (the PID now runs something else), ``survived`` or ``unreachable`` (the last
  two keep it open, to check again next time).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import hmac
import json
import os
import socket
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from netfleet.durable import fsync_dir
from netfleet.errors import StoreError
from netfleet.journalfile import Records, open_regular, read_journal

JOURNAL_DIR = Path(".netfleet") / "journal"
#: stray outcomes after which the process is known not to be ours any more
CLOSING = frozenset({"killed", "gone", "replaced", "unverified"})


@dataclass(frozen=True)
class ProcessRecord:
    host: str
    pid: int
    argv: list[str]
    role: str
    run_key: str
    #: who the process is (start time in clock ticks, boot id, network namespace), read from
    #: /proc right after launch; None when it was never recorded (then it is never signalled)
    identity: dict[str, str] | None = None
    #: :func:`launch_proof` of the token netfleet put in the process's environment
    proof: str | None = None


def launch_proof(token: str, journal: Path, host: str, pid: int) -> str:
    """What the journal keeps of a launch token: a keyed digest bound to this journal, host and
    PID. It does not reveal the token (which only root and the process's owner can read, in
    ``/proc/PID/environ``), and a record copied into another journal, or naming another PID,
    does not verify."""
    where = f"{os.path.realpath(journal)}\0{host}\0{pid}".encode()
    return hmac.new(token.encode(), where, hashlib.sha256).hexdigest()


@dataclass
class History:
    """What the journal says. Outcomes and attempts count from the latest fresh session;
    open processes from every session (a stray is a stray whoever left it)."""

    outcomes: dict[str, str] = field(default_factory=dict)
    attempts: Counter[str] = field(default_factory=Counter)
    unfinished: set[str] = field(default_factory=set)
    #: when each run last started (ISO 8601 UTC, as netfleet's envelopes write it)
    started_at: dict[str, str] = field(default_factory=dict)
    open_processes: dict[tuple[str, int], ProcessRecord] = field(default_factory=dict)
    sessions: int = 0
    #: when each host last carried test traffic (ISO 8601 UTC: the end of its latest run), and
    #: the hosts of runs still going — a credit bucket drains while they run
    last_traffic: dict[str, str] = field(default_factory=dict)
    hosts_of_run: dict[str, set[str]] = field(default_factory=dict)
    #: what reading the journal skipped (malformed, oversized or too deeply nested records)
    skipped: str | None = None

    def apply(self, rec: dict[str, Any]) -> None:
        event = rec.get("event")
        key = rec.get("run_key", "")
        if event == "session":
            self.sessions += 1
            if rec.get("mode") == "fresh":
                self.outcomes.clear()
                self.attempts.clear()
                self.unfinished.clear()
        elif event == "run_started":
            self.attempts[key] += 1
            self.unfinished.add(key)
            self.started_at[key] = str(rec.get("at", ""))
        elif event == "run_finished":
            stopped = [(str(host), int(pid)) for host, pid in rec.get("stopped", [])]
            self.outcomes[key] = str(rec.get("status"))
            self.unfinished.discard(key)
            for host in self.hosts_of_run.pop(key, set()):
                self.last_traffic[host] = str(rec.get("at", ""))
            for at in stopped:  # checked before anything is applied: a bad record applies not
                self.open_processes.pop(at, None)
        elif event == "process":
            proc = ProcessRecord(
                str(rec["host"]), int(rec["pid"]), list(rec["argv"]), str(rec["role"]), key
            )
            if isinstance(rec.get("identity"), dict):
                ident = {str(k): str(v) for k, v in rec["identity"].items()}
                proc = replace(proc, identity=ident)
            if isinstance(rec.get("proof"), str):
                proc = replace(proc, proof=rec["proof"])
            self.open_processes[(proc.host, proc.pid)] = proc
            self.hosts_of_run.setdefault(key, set()).add(proc.host)
            self.last_traffic[proc.host] = str(rec.get("at", ""))
        elif event == "process_identity":
            at = (str(rec["host"]), int(rec["pid"]))
            known = self.open_processes.get(at)
            if known is not None and isinstance(rec.get("identity"), dict):
                ident = {str(k): str(v) for k, v in rec["identity"].items()}
                self.open_processes[at] = replace(known, identity=ident)
        elif event == "stray" and rec.get("outcome") in CLOSING:
            self.open_processes.pop((str(rec["host"]), int(rec["pid"])), None)

    def busy(self, host: str) -> bool:
        """A run with a process on ``host`` has started and not finished (a fresh session
        forgets the unfinished runs of earlier ones)."""
        return any(
            host in hosts and key in self.unfinished for key, hosts in self.hosts_of_run.items()
        )

    def last_traffic_at(self, host: str) -> datetime | None:
        """When ``host`` last carried test traffic, as far as this journal knows."""
        text = self.last_traffic.get(host)
        if not text:
            return None
        try:
            return datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            return None


#: the most campaign journals :func:`recent_traffic` reads (the most recently written first)
RECENT_JOURNALS = 200


@dataclass(frozen=True)
class Traffic:
    """When a host last carried test traffic, and in which campaign (its journal's name)."""

    at: datetime
    campaign: str


def recent_traffic(results_root: Path, skip: str | None = None) -> dict[str, Traffic]:
    """When each host (by its name in the specs) last carried test traffic, over every campaign
    journal under ``results_root`` (the :data:`RECENT_JOURNALS` most recently written; a
    journal that cannot be read adds nothing), ``skip`` (a campaign's name) left out. What
    ``plan`` and ``run`` judge a burstable host's refill from."""
    folder = results_root / JOURNAL_DIR
    if not folder.is_dir():
        return {}
    _check_inside(folder / "x.jsonl")
    found: list[tuple[float, Path]] = []
    for path in folder.glob("*.jsonl"):
        with contextlib.suppress(OSError):
            if path.stem != skip and not path.is_symlink() and path.is_file():
                found.append((path.stat().st_mtime, path))
    latest: dict[str, Traffic] = {}
    for _, path in sorted(found, reverse=True)[:RECENT_JOURNALS]:
        try:
            history = read_history(path)
        except (StoreError, OSError):
            continue
        for host in history.last_traffic:
            at = history.last_traffic_at(host)
            if at is not None and (host not in latest or latest[host].at < at):
                latest[host] = Traffic(at, path.stem)
    return latest


def journal_path(results_root: Path, campaign: str) -> Path:
    return results_root / JOURNAL_DIR / f"{campaign}.jsonl"


def read_records(path: Path) -> list[dict[str, Any]]:
    """Every readable record (:func:`netfleet.journalfile.read_journal`: a regular file only,
    bounded in size and depth; a torn or malformed line is skipped)."""
    _check_inside(path)
    return read_journal(path).records


def read_history(path: Path) -> History:
    """The journal replayed; what was skipped is said in ``History.skipped``."""
    _check_inside(path)
    got = read_journal(path)
    history = History()
    bad = list(got.skipped)
    for number, rec in zip(got.lines, got.records, strict=True):
        try:
            history.apply(rec)
        except (KeyError, TypeError, ValueError, OverflowError):
            bad.append((number, "not a record netfleet writes"))  # a forged one: no instruction
    history.skipped = Records(skipped=sorted(bad)).summary(path)
    return history


def _check_inside(path: Path) -> None:
    """The journal's directory is the results root's own ``.netfleet/journal``, not a symbolic
    link out of it (root would otherwise append to, or read, a file elsewhere)."""
    top = path.parent.parent.parent
    expected = os.path.join(os.path.realpath(top), *JOURNAL_DIR.parts)
    if path.parent.exists() and os.path.realpath(path.parent) != expected:
        raise StoreError(
            f"{path.parent} is a symbolic link out of the results root: refused",
            hint="remove the link; netfleet keeps its journal inside the results root",
        )


class Journal:
    """The open, locked journal of one campaign. Use as a context manager."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self.history = History()

    def __enter__(self) -> Journal:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> None:
        """Lock and read an existing journal. A campaign without one gets it at its first
        record: a run that stops in preflight writes nothing at all."""
        self.history = History()
        if self.path.exists():
            self._open_locked(create=False)
            self.history = read_history(self.path)

    def _open_locked(self, *, create: bool) -> None:
        try:
            if create:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            _check_inside(self.path)
            flags = os.O_WRONLY | os.O_APPEND | (os.O_CREAT if create else 0)
            fd = open_regular(self.path, flags, 0o644)
        except OSError as exc:
            raise StoreError(
                f"cannot open the campaign journal {self.path}: {exc.strerror}",
                hint="check that the results root is writable",
            ) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise StoreError(
                f"another netfleet is running this campaign (journal {self.path} is locked)",
                hint="wait for it to finish, or stop it (Ctrl-C) before running again",
            ) from None
        self._fd = fd
        if create:
            fsync_dir(self.path.parent)
        size = os.fstat(fd).st_size
        if size:
            last = open_regular(self.path, os.O_RDONLY)
            try:
                torn = os.pread(last, 1, size - 1) != b"\n"
            finally:
                os.close(last)
            if torn:  # a torn last record: start ours on a line of its own
                os.write(fd, b"\n")

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)  # also releases the lock
            self._fd = None

    def append(self, event: str, **fields: Any) -> None:
        """Write one record durably (one write, then fsync) and apply it to ``history``."""
        if self._fd is None:
            self._open_locked(create=True)
        assert self._fd is not None
        rec = {"event": event, "at": _now(), **fields}
        line = json.dumps(rec, separators=(",", ":"), default=str).encode() + b"\n"
        try:
            os.write(self._fd, line)
            os.fsync(self._fd)
        except OSError as exc:
            raise StoreError(
                f"cannot write the campaign journal {self.path}: {exc.strerror}",
                hint="free some disk space; completed results are safe",
            ) from exc
        self.history.apply(rec)

    # ----------------------------------------------------------------------------------- events
    def session(self, mode: str, planned: int, todo: int) -> None:
        self.append(
            "session",
            mode=mode,
            planned=planned,
            todo=todo,
            controller={"host": socket.gethostname(), "pid": os.getpid()},
        )

    def run_started(self, run_key: str, sequence: int) -> None:
        self.append("run_started", run_key=run_key, sequence=sequence)

    def process(
        self,
        run_key: str,
        host: str,
        pid: int,
        argv: list[str],
        role: str,
        identity: dict[str, str] | None = None,
        token: str | None = None,
    ) -> None:
        """A process was started; ``token`` is its launch token (only its digest is written)."""
        extra: dict[str, Any] = {"identity": identity} if identity else {}
        if token:
            extra["proof"] = launch_proof(token, self.path, host, pid)
        self.append("process", run_key=run_key, host=host, pid=pid, argv=argv, role=role, **extra)

    def process_identity(self, host: str, pid: int, identity: dict[str, str]) -> None:
        """Who the process ``pid`` on ``host`` is: checked again before it is ever signalled."""
        self.append("process_identity", host=host, pid=pid, identity=identity)

    def run_finished(
        self,
        run_key: str,
        status: str,
        run_id: str,
        path: str | None,
        stopped: list[tuple[str, int]],
    ) -> None:
        self.append(
            "run_finished",
            run_key=run_key,
            status=status,
            run_id=run_id,
            path=path,
            stopped=[[h, p] for h, p in stopped],
        )

    def stray(self, proc: ProcessRecord, outcome: str, detail: str | None = None) -> None:
        self.append(
            "stray",
            host=proc.host,
            pid=proc.pid,
            run_key=proc.run_key,
            outcome=outcome,
            detail=detail,
        )


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
