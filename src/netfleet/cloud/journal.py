"""The intent journal: one JSON line per record, appended with one ``write`` and fsynced.

Before each create netfleet appends an ``intent`` record (kind, region, deterministic client
token); after the call returns it appends a ``created`` record with the id. A ``kill -9`` between
the two leaves an intent without an id: ``destroy`` then finds the resource by its tags (every
resource carries the campaign tag and its token), so nothing is lost. ``deleted`` records mark
what teardown removed. The file is never rewritten.

Reading trusts nothing (:mod:`netfleet.journalfile`): a regular file only (a FIFO cannot hang
``destroy`` or ``reap``), bounded in size and nesting; a bad record is skipped and reported on
stderr, and a journal that cannot be read at all is reported and read as empty — one bad
journal never stops ``reap`` from handling the others.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from netfleet.errors import InputError, StoreError
from netfleet.journalfile import read_journal
from netfleet.spec.cloud import CAMPAIGN_RE

#: a kind or a region as any cloud names it (a cloud's own rules narrow both)
_TOKEN = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")
#: a resource id as any cloud's may read (letters, digits and ``:/._-``; no space, no control)
_ID = re.compile(r"^[A-Za-z0-9/][A-Za-z0-9:/._-]{0,199}$")


class RecordRules:
    """What one cloud's journal records may hold; replay trusts nothing else (a record with
    another kind, a malformed region or id is skipped and counted). These rules accept a safe
    token of each: a cloud narrows them to its own kinds and formats (its :class:`Journal`
    subclass sets :attr:`Journal.rules`; AWS: ``netfleet.cloud.aws.journal``)."""

    def kind(self, kind: str) -> bool:
        return bool(_TOKEN.match(kind))

    def region(self, region: str) -> bool:
        return bool(_TOKEN.match(region))

    def resource_id(self, kind: str, rid: str) -> bool:
        return bool(_ID.match(rid))


log = logging.getLogger(__name__)
#: (path, what) already reported in this process: a journal is read several times per command
_REPORTED: set[tuple[str, str]] = set()

#: where intent journals, keys, known_hosts and refreshed prices live (``--state-dir`` wins)
CLOUD_DIR_ENV = "NETFLEET_CLOUD_DIR"


def default_root() -> Path:
    env = os.environ.get(CLOUD_DIR_ENV)
    return Path(env) if env else Path.home() / ".local" / "state" / "netfleet" / "cloud"


def check_campaign(name: str) -> str:
    if not CAMPAIGN_RE.match(name):
        raise InputError(
            f"campaign name {name!r} is not usable for cloud resources",
            hint="use 1-40 characters: a lowercase letter, then lowercase letters, digits or '-'",
        )
    return name


def client_token(campaign: str, kind: str, key: str) -> str:
    """Deterministic: the same campaign/step always sends the same token (AWS idempotency)."""
    return "nf-" + hashlib.sha256(f"{campaign}/{kind}/{key}".encode()).hexdigest()[:40]


@dataclass
class Resource:
    kind: str
    region: str
    token: str
    key: str
    id: str | None = None
    deleted: bool = False


@dataclass
class JournalState:
    campaign: str
    resources: list[Resource] = field(default_factory=list)
    bad_lines: int = 0
    #: why the journal could not be read at all (then it reads as empty)
    problem: str | None = None

    @property
    def regions(self) -> list[str]:
        return sorted({r.region for r in self.resources})

    def live(self) -> list[Resource]:
        return [r for r in self.resources if not r.deleted]


class Journal:
    """Append-only JSONL file ``<dir>/<campaign>/journal.jsonl``; replay keeps the records
    :attr:`rules` accepts."""

    rules: ClassVar[RecordRules] = RecordRules()

    def __init__(self, root: Path, campaign: str) -> None:
        self.campaign = check_campaign(campaign)
        self.dir = root / campaign
        self.path = self.dir / "journal.jsonl"

    def append(self, record: dict[str, Any]) -> None:
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        line = (json.dumps({"campaign": self.campaign, **record}, sort_keys=True) + "\n").encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)

    def intent(self, kind: str, region: str, key: str) -> str:
        """Record the create about to happen; its client token (distinct per region)."""
        token = client_token(self.campaign, kind, f"{region}/{key}")
        self.append({"op": "intent", "kind": kind, "region": region, "key": key, "token": token})
        return token

    def created(self, kind: str, region: str, key: str, rid: str) -> None:
        self.append({"op": "created", "kind": kind, "region": region, "key": key, "id": rid})

    def deleted(self, kind: str, region: str, rid: str) -> None:
        self.append({"op": "deleted", "kind": kind, "region": region, "id": rid})

    def exists(self) -> bool:
        return self.path.exists()

    def read(self) -> JournalState:
        """Replay the file; malformed or foreign lines are counted and ignored (never trusted)."""
        state = JournalState(self.campaign)
        try:
            got = read_journal(self.path)
        except StoreError as exc:
            state.problem = exc.message
            _report(self.path, f"{exc.message}; read as empty ({exc.hint})")
            return state
        state.bad_lines = len(got.skipped)
        by_key: dict[tuple[str, str, str], Resource] = {}
        for rec in got.records:
            try:
                ok = _replay(rec, self.campaign, self.rules, state, by_key)
            except (ValueError, KeyError, TypeError):
                ok = False
            if not ok:
                state.bad_lines += 1
        if state.bad_lines:
            _report(self.path, f"skipped {state.bad_lines} record(s) netfleet did not write")
        return state


def _replay(
    rec: dict[str, Any],
    campaign: str,
    rules: RecordRules,
    state: JournalState,
    by_key: dict[tuple[str, str, str], Resource],
) -> bool:
    """Apply one record to ``state``; False (or KeyError/TypeError/ValueError) if it is not one
    netfleet writes for this campaign."""
    op, kind, region = rec["op"], rec["kind"], rec["region"]
    if not (
        rec.get("campaign") == campaign
        and isinstance(kind, str)
        and rules.kind(kind)
        and isinstance(region, str)
        and rules.region(region)
    ):
        return False
    rid = rec.get("id")
    if rid is not None and not (isinstance(rid, str) and rules.resource_id(kind, rid)):
        return False
    if op == "intent":
        res = Resource(kind, region, str(rec["token"]), str(rec["key"]))
        by_key[(kind, region, res.key)] = res
        state.resources.append(res)
    elif op == "created":
        made = by_key.get((kind, region, str(rec["key"])))
        if made is not None:
            made.id = rid
    elif op == "deleted":
        for res in state.resources:
            if res.kind == kind and res.region == region and res.id == rid:
                res.deleted = True
    else:
        return False
    return True


def _report(path: Path, what: str) -> None:
    if (str(path), what) not in _REPORTED:
        _REPORTED.add((str(path), what))
        log.warning("cloud journal %s: %s", path, what)
