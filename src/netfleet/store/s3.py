"""An S3 results root: the same Hive layout as a local root, under ``s3://bucket/prefix/``.

* Write = one ``PutObject`` per result (S3 makes a whole object visible or none: atomic), with a
  Content-MD5 so a body damaged in transit is refused by the server instead of stored.
* A result is first spooled to a local directory (atomic write, fsync) and removed from the
  spool only after the PUT succeeded: if the upload fails (endpoint down, credentials expired)
  the completed result is not lost — ``flush_pending`` (run at the start of every ``run``, hence
  ``--resume``) uploads it again.
* The campaign journal stays local too, under the same state directory (S3 has no append):
  ``$NETFLEET_S3_STATE`` or ``$XDG_STATE_HOME/netfleet`` or ``~/.local/state/netfleet``, then
  ``s3/<bucket>/<prefix>/``.
* Credentials come only from boto3's standard chain via :func:`netfleet.aws.client`.
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import io
import os
import secrets
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from netfleet import aws
from netfleet.durable import atomic_write, checked_dir, open_in, refused
from netfleet.errors import StoreError, StoreUnreachable

if TYPE_CHECKING:
    from netfleet.store.envelope import Envelope

SPOOL_DIR = "pending-uploads"
#: S3 error codes about one object, not about the endpoint, the bucket or the credentials
#: (``PreconditionFailed``: the object changed since it was listed, an ``If-Match`` read)
_OBJECT_FAULTS = frozenset({"NoSuchKey", "404", "InvalidObjectState", "PreconditionFailed", "412"})
RAW_GLOB = "d=*/campaign=*/*.json.gz"


@dataclass(frozen=True, order=True)
class S3Object:
    """A raw result in S3: sorts and prints as its URL; ``name`` is the file name."""

    url: str

    @property
    def name(self) -> str:
        return self.url.rsplit("/", 1)[-1]

    def __str__(self) -> str:
        return self.url


def state_home() -> Path:
    explicit = os.environ.get("NETFLEET_S3_STATE")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_STATE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".local" / "state") / "netfleet"


def matches(rel: str, pattern: str) -> bool:
    """``pattern`` matched segment by segment (``*`` never crosses a ``/``, as in Path.glob)."""
    parts, pats = rel.split("/"), pattern.split("/")
    return len(parts) == len(pats) and all(
        fnmatch.fnmatchcase(p, q) for p, q in zip(parts, pats, strict=True)
    )


def object_fault(exc: Exception) -> bool:
    """Whether a failed S3 call failed for one object (gone, never there, changed since it was
    listed), not for the endpoint, the bucket or the credentials: the other objects may still
    be read."""
    code = str((getattr(exc, "response", None) or {}).get("Error", {}).get("Code", ""))
    return code in _OBJECT_FAULTS


def _aws_error(exc: Exception) -> bool:
    try:
        from botocore.exceptions import BotoCoreError, ClientError
    except ImportError:  # pragma: no cover - boto3 is a dependency
        return False
    return isinstance(exc, BotoCoreError | ClientError)


@dataclass(frozen=True)
class S3Root:
    bucket: str
    prefix: str = ""  # "" or "a/b/" (always ends with "/")
    _client: list[Any] = field(default_factory=list, compare=False, repr=False)
    #: keys under each ``d=…/campaign=…/`` prefix :meth:`has` listed (one listing a prefix)
    _listed: dict[str, set[str]] = field(default_factory=dict, compare=False, repr=False)

    @property
    def url(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}"

    @property
    def state_dir(self) -> Path:
        """Local directory for this root's journal and upload spool."""
        return state_home() / "s3" / self.bucket / self.prefix.strip("/")

    @property
    def journal_root(self) -> Path:
        return self.state_dir

    @property
    def client(self) -> Any:
        if not self._client:
            self._client.append(aws.client("s3"))
        return self._client[0]

    def _fail(self, what: str, exc: Exception) -> StoreError:
        """The error of a failed S3 call: :class:`StoreUnreachable` unless the object itself
        is the problem (gone, or never there): then the other objects may still be read."""
        kind = StoreError if object_fault(exc) else StoreUnreachable
        return kind(
            f"{self.url}: {what} failed ({type(exc).__name__}: {exc})",
            hint="check AWS_ENDPOINT_URL, the credentials (boto3's standard chain) and the "
            "bucket; completed results stay spooled and are uploaded by the next run/--resume",
        )

    def write(self, envelope: Envelope) -> str:
        from netfleet.store.rawfile import encode

        return self.write_encoded(*encode(envelope))

    def write_encoded(self, rel: str, data: bytes) -> str:
        """Store what :func:`netfleet.store.root.encode` made: spooled locally, then uploaded."""
        *dirs, name = rel.split("/")
        spooled = checked_dir(self.state_dir, SPOOL_DIR, *dirs) / name
        atomic_write(spooled, data)
        self._upload(rel, data)
        spooled.unlink(missing_ok=True)
        return self.url + rel

    def has(self, rel: str) -> bool:
        """Whether an object is stored at ``rel``: its ``d=…/campaign=…/`` prefix is listed
        once (not one request per file of an import)."""
        prefix = rel.rsplit("/", 1)[0] + "/"
        if prefix not in self._listed:
            keys: set[str] = set()
            try:
                pages = self.client.get_paginator("list_objects_v2").paginate(
                    Bucket=self.bucket, Prefix=self.prefix + prefix
                )
                for page in pages:
                    keys.update(obj["Key"][len(self.prefix) :] for obj in page.get("Contents", []))
            except Exception as exc:
                if _aws_error(exc):
                    raise self._fail("listing", exc) from exc
                raise
            self._listed[prefix] = keys
        return rel in self._listed[prefix]

    def write_encoded_many(self, items: Sequence[tuple[str, bytes]]) -> list[str]:
        """Store many at once: one after the other (each PUT is atomic by itself). A failure
        is a :class:`PartlyWritten` that lists those already uploaded."""
        done: list[str] = []
        for rel, data in items:
            try:
                done.append(self.write_encoded(rel, data))
            except StoreError as exc:
                raise PartlyWritten(exc.message, hint=exc.hint, written=done) from exc
        return done

    def _upload(self, rel: str, data: bytes) -> None:
        md5 = base64.b64encode(hashlib.md5(data, usedforsecurity=False).digest()).decode()
        try:
            self.client.put_object(
                Bucket=self.bucket,
                Key=self.prefix + rel,
                Body=data,
                ContentMD5=md5,
                ContentType="application/json",
                ContentEncoding="gzip",
            )
        except Exception as exc:
            if _aws_error(exc):
                raise self._fail(f"upload of {rel}", exc) from exc
            raise

    def pending(self) -> list[Path]:
        spool = self.state_dir / SPOOL_DIR
        if not spool.is_dir():
            return []
        return sorted(p for p in spool.glob(RAW_GLOB) if not p.name.startswith(".tmp-"))

    def flush_pending(self) -> list[str]:
        """Upload every spooled result (left by a failed upload); returns their relative keys."""
        spool = self.state_dir / SPOOL_DIR
        done = []
        for path in self.pending():
            rel = path.relative_to(spool).as_posix()
            with os.fdopen(open_in(spool, rel, os.O_RDONLY | os.O_NONBLOCK), "rb") as fh:
                if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                    raise refused(path, spool, "not a regular file")
                data = fh.read()
            self._upload(rel, data)
            path.unlink()
            done.append(rel)
        return done

    def check_access(self) -> None:
        """Write, read back and delete a probe object, and list the prefix: each of
        s3:PutObject, s3:GetObject, s3:DeleteObject and s3:ListBucket is proved (or refused,
        naming the action) before a campaign acquires anything billable."""
        key = f"{self.prefix}.netfleet-probe-{secrets.token_hex(8)}"
        steps = [
            ("s3:PutObject", lambda: self.client.put_object(Bucket=self.bucket, Key=key, Body=b"")),
            ("s3:GetObject", lambda: self.client.get_object(Bucket=self.bucket, Key=key)),
            ("s3:DeleteObject", lambda: self.client.delete_object(Bucket=self.bucket, Key=key)),
            (
                "s3:ListBucket",
                lambda: self.client.list_objects_v2(
                    Bucket=self.bucket, Prefix=self.prefix, MaxKeys=1
                ),
            ),
        ]
        for action, call in steps:
            try:
                call()
            except Exception as exc:
                if not _aws_error(exc):
                    raise
                raise StoreError(
                    f"{self.url}: {action} failed before the campaign started "
                    f"({type(exc).__name__}: {exc})",
                    hint=f"allow {action} on the bucket (docs/iam-policy.json, statements "
                    "ResultsRoot/ResultsRootList) or choose another results root; nothing was "
                    "launched",
                ) from exc

    def _objects(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """Each object's key relative to the root, and its listing (size, ETag ...)."""
        try:
            pages = self.client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=self.prefix + "d="
            )
            for page in pages:
                for obj in page.get("Contents", []):
                    yield obj["Key"][len(self.prefix) :], obj
        except Exception as exc:
            if _aws_error(exc):
                raise self._fail("listing", exc) from exc
            raise

    def glob(self, pattern: str) -> list[S3Object]:
        return sorted(S3Object(self.url + k) for k, _ in self._objects() if matches(k, pattern))

    def listed(self) -> list[tuple[str, int, str]]:
        """Every raw result object as (URL, size, ETag), in :meth:`files`' order: one listing,
        no object read (what the catalog's load loop compares with its manifest)."""
        return sorted(
            (self.url + k, int(o["Size"]), str(o.get("ETag", "")).strip('"'))
            for k, o in self._objects()
            if matches(k, RAW_GLOB)
        )

    def files(self) -> Iterator[S3Object]:
        """Every raw result object, in a stable order (only whole objects exist in S3)."""
        return iter(self.glob(RAW_GLOB))

    def read(self, ref: Any) -> dict[str, Any]:
        url = str(ref)
        if not url.startswith(self.url):
            raise StoreError(f"{url}: not under {self.url}")
        key = self.prefix + url[len(self.url) :]
        try:
            body = self.client.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        except Exception as exc:
            if _aws_error(exc):
                raise self._fail(f"reading {key}", exc) from exc
            raise
        from netfleet.store.rawfile import decode_raw

        return decode_raw(io.BytesIO(body), url)


class PartlyWritten(StoreUnreachable):
    """A group upload stopped: ``written`` were uploaded, the failed one is spooled."""

    def __init__(self, message: str, *, hint: str | None, written: list[str]) -> None:
        super().__init__(message, hint=hint)
        self.written = written


def parse_s3_url(text: str) -> S3Root:
    rest = text[len("s3://") :]
    bucket, _, prefix = rest.partition("/")
    if not bucket:
        raise StoreError(f"results root {text!r}: no bucket", hint="use s3://BUCKET/PREFIX")
    prefix = prefix.strip("/")
    if any(part in ("", ".", "..") for part in prefix.split("/")) and prefix:
        raise StoreError(
            f"results root {text!r}: the prefix has an empty, '.' or '..' segment",
            hint="use s3://BUCKET/a/b",
        )
    return S3Root(bucket, prefix + "/" if prefix else "")
