"""The files an import by reference names (issue 26): local files with their stat (one
``stat`` each, none opened), ``s3://`` objects with their size and ETag (one listing), and a
file's outcome (here, not beside the readers: the importing process handles them without
loading pydantic or the engines, which only its workers need)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

from netfleet.errors import InputError, StoreError, named
from netfleet.plain import Plain
from netfleet.store.sources import Options as Options  # (the import's; read by the loaders)

if TYPE_CHECKING:
    from typing import Any


class Read(Plain):
    """One file's outcome (:mod:`netfleet.catalog.reader`): its manifest row (``state`` ok or
    bad) and, when ok, its rows (:class:`~netfleet.catalog.build.RunRows`). Here, not in the
    reader's module: the importing process unpickles its workers' reads without loading the
    readers."""

    __slots__ = ("row", "rows")

    row: dict[str, Any]
    rows: Any

    def __init__(self, row: dict[str, Any], rows: Any = None) -> None:
        self.row = row
        self.rows = rows

    def __reduce__(self) -> tuple[type[Read], tuple[Any, ...]]:
        # a worker's read, to the importer (10,000: 13 ms, against 26 for a dataclass's)
        return (Read, (self.row, self.rows))


class Found(tuple[str, str, int | None, int | None, int | None, str | None]):
    """A source file found by listing: where, its stat (local) or listing (S3) — ``source``,
    ``path``, ``size``, ``mtime_ns``, ``inode``, ``etag``. (A tuple: a no-op import makes one
    per file, three times faster than a frozen dataclass's. Written out, not a ``NamedTuple``:
    under ``from __future__ import annotations`` that class compiles each field's annotation
    when defined, 1.3-1.8 ms of every import, the no-op's too; this one behaves as it did —
    fields, defaults, ``repr``, pickling.)"""

    __slots__ = ()

    def __new__(
        cls,
        source: str,
        path: str,
        size: int | None,
        mtime_ns: int | None = None,
        inode: int | None = None,
        etag: str | None = None,
    ) -> Found:
        return tuple.__new__(cls, (source, path, size, mtime_ns, inode, etag))

    def __getnewargs__(self) -> tuple[str, str, int | None, int | None, int | None, str | None]:
        return tuple(self)  # type: ignore[return-value]  # its six values

    def __repr__(self) -> str:
        names = ("source", "path", "size", "mtime_ns", "inode", "etag")
        return f"Found({', '.join(f'{n}={v!r}' for n, v in zip(names, self, strict=True))})"

    @property
    def source(self) -> str:
        return self[0]

    @property
    def path(self) -> str:
        return self[1]

    @property
    def size(self) -> int | None:
        return self[2]

    @property
    def mtime_ns(self) -> int | None:
        return self[3]

    @property
    def inode(self) -> int | None:
        return self[4]

    @property
    def etag(self) -> str | None:
        return self[5]


def listed(sources: list[str], follow_links: bool) -> list[Found]:
    """Every file of the sources, with its stat (one ``lstat`` each: no file is opened): the
    ``s3://`` sources' objects first, then the local files, each source's in path order."""
    found = [item for src in sources if src.startswith("s3://") for item in _s3_listed(src)]
    local = [src for src in sources if not src.startswith("s3://")]
    if local:
        found += _local_listed(local, follow_links)
    return found


def _local_listed(local: list[str], follow_links: bool) -> list[Found]:
    """:func:`listed` of local sources. The loop is the no-op import's: each ``Found`` made by
    ``tuple.__new__`` (its class call with defaults was a tenth of listing 10,000 files) into
    one list, paths checked for repeats only when more than one source could name a file
    twice (its caller, :func:`netfleet.catalog.register.register`, pauses the cycle
    collector meanwhile: the loop makes no cycles, only tuples; issue 26)."""
    from stat import S_ISREG

    from netfleet.store.sources import source_files

    out: list[Found] = []
    add, stat, make = out.append, os.stat, tuple.__new__
    seen: set[str] | None = set() if len(local) > 1 else None
    for src in local:
        for source in source_files(
            os.path.abspath(
                named(
                    "a source",
                    src,
                    hint="name a file, folder or glob (an empty one is the working directory)",
                )
            ),
            follow_links,
        ):
            if seen is not None:
                if source in seen:
                    continue
                seen.add(source)
            try:
                st = stat(source, follow_symlinks=follow_links)
            except OSError:
                add(Found(source, source, None))
                continue
            if S_ISREG(st.st_mode):
                add(make(Found, (source, source, st.st_size, st.st_mtime_ns, st.st_ino, None)))
            else:  # never opened at listing: refused when read
                add(Found(source, source, st.st_size))
    return out


def _s3_listed(url: str) -> Iterator[Found]:
    """The objects under an ``s3://bucket/prefix`` (size and ETag from the listing)."""
    from netfleet.store.sources import SUFFIXES

    bucket, key = s3_split(url)
    client = s3_client()
    count = 0
    try:
        pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=key)
        for page in pages:
            for obj in page.get("Contents", []):
                name = obj["Key"]
                if name != key and not name.endswith(SUFFIXES):
                    continue
                count += 1
                yield Found(
                    f"s3://{bucket}/{name}",
                    f"s3://{bucket}/{name}",
                    int(obj["Size"]),
                    etag=str(obj.get("ETag", "")).strip('"'),
                )
    except StoreError:
        raise
    except Exception as exc:
        raise StoreError(
            f"{url}: listing failed ({type(exc).__name__}: {exc})",
            hint="check AWS_ENDPOINT_URL, the credentials (boto3's standard chain) and the bucket",
        ) from exc
    if not count:
        raise InputError(f"{url}: no such object or prefix", hint="give s3://BUCKET/PREFIX")


def s3_split(url: str) -> tuple[str, str]:
    bucket, _, key = url.removeprefix("s3://").partition("/")
    if not bucket:
        raise InputError(f"{url!r}: no bucket", hint="use s3://BUCKET/PREFIX")
    return bucket, key


#: this process's S3 client and the endpoint it was made for, made by its first read (a
#: client costs ≈ 30 ms: one an object read cost as much as the GET); made again for another
#: endpoint, and as each load starts (:func:`forget_client`)
_CLIENT: list[Any] = []


def s3_client() -> Any:
    from netfleet import aws

    url = aws.endpoint_url("s3")
    if not _CLIENT or _CLIENT[0] != url:
        _CLIENT[:] = [url, aws.client("s3")]
    return _CLIENT[1]


def forget_client() -> None:
    """The next read makes its client afresh (the credentials may have changed since the last
    load of this process; a worker's process is new each load)."""
    _CLIENT.clear()
