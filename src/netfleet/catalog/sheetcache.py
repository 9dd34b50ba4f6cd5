"""Answers already given, kept beside a local catalog (``CATALOG/_sheets/``): the same question
over the same committed parts is read back instead of queried again (no DuckDB, no Parquet
read). docs/catalog.md ("Answers are kept, never stale") and docs/security.md say what a user
relies on.

Why a kept answer cannot be stale: committed parts are never rewritten
(:mod:`netfleet.catalog.layout`), so the key — every committed part's name, size and mtime, the
manifest's generation and stat, the question, the catalog format, netfleet's version and
:data:`CACHE_FORMAT` — changes with anything the answer depends on; and an answer is kept only
when the key is the same after the query as before it.

An entry (``sheet-<sha256 of the key>.json``, written atomically) is believed only when read
back as :func:`netfleet.readback.read_back` allows, written by this user and writable by nobody
else, naming itself inside, and of the shape ``load`` expects; only answers made of JSON's own
values are kept. At most :data:`KEEP` entries stay; only files of our own name pattern in a real
``_sheets`` directory (never a link) are deleted. S3 catalogs are not cached.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from netfleet import __version__
from netfleet.catalog.layout import CATALOG_FORMAT, TEMP_PREFIX, committed_parts
from netfleet.catalog.manifest import MANIFEST, current_generation
from netfleet.durable import atomic_write, checked_dir
from netfleet.errors import LinkRefused
from netfleet.readback import loads_back, read_back

if TYPE_CHECKING:
    from typing import Any, TypeVar

# the same SHA-256 as ``hashlib``'s, without loading OpenSSL (``_hashlib``: 2.5 ms of the no-op,
# issue 26): CPython's own module (``_sha256``; ``_sha2`` from 3.12), else ``hashlib``
try:
    from _sha256 import sha256
except ImportError:
    try:
        from _sha2 import sha256
    except ImportError:
        from hashlib import sha256

#: what is cached: an object of plain values whose ``__slots__`` name its fields (the cheat
#: sheet's ``CheatSheetData``)
if TYPE_CHECKING:  # (annotations' only)
    T = TypeVar("T")

#: bump when the cheat sheet's query or ``CheatSheetData`` changes meaning
CACHE_FORMAT = 5
SHEETS_DIR = "_sheets"
KEEP = 64
#: the most bytes of an entry read back (a sheet is kilobytes): a larger one is not ours
MAX_ENTRY_BYTES = 16 * 1024 * 1024
#: the names of the entries (:func:`prune`'s pattern, compiled when pruning)
_ENTRY = r"^sheet-[0-9a-f]{64}\.json$"
_PLAIN = (str, int, float, bool, type(None))


def cached(
    catalog_dir: Path,
    question: dict[str, Any],
    compute: Callable[[], T],
    load: Callable[[Any], T | None],
) -> T:
    """The answer to ``question`` over the catalog's committed parts: read back when this
    catalog answered it before, else ``compute()`` (and kept for next time). ``compute``
    returns an object of plain values whose ``__slots__`` name its fields; ``load`` turns a
    kept JSON document back into one, or None when the document is not of its shape (then it
    is computed again)."""
    key = _key_now(catalog_dir, question)
    if key is None:  # a part went away while listed: the query reports what is there
        return compute()
    folder = catalog_dir / SHEETS_DIR
    entry = folder / f"sheet-{key}.json"
    found = _read(entry, load) if _own_folder(folder) else None
    if found is not None:
        return found
    answer = compute()
    if _key_now(catalog_dir, question) == key:  # no batch committed while the query ran
        _write(folder, entry, answer)
    return answer


def _key_now(catalog_dir: Path, question: dict[str, Any]) -> str | None:
    """:func:`_key`, or None when a part went away while it was taken."""
    try:
        return _key(catalog_dir, question)
    except OSError:
        return None


def _own_folder(folder: Path) -> bool:
    """``_sheets`` is a real directory, not a link that would send reads, writes and deletes
    elsewhere."""
    try:
        return stat.S_ISDIR(os.lstat(folder).st_mode)
    except OSError:
        return False


def _key(catalog_dir: Path, question: dict[str, Any]) -> str:
    parts = []
    for table, paths in sorted(committed_parts(catalog_dir).items()):
        for path in paths:
            info = os.stat(path)
            parts.append([table, path.name, info.st_size, info.st_mtime_ns])
    manifest = os.lstat(catalog_dir / MANIFEST) if os.path.lexists(catalog_dir / MANIFEST) else None
    text = json.dumps(
        {
            "generation": current_generation(catalog_dir),
            "manifest": manifest and [manifest.st_size, manifest.st_mtime_ns, manifest.st_ino],
            "cache": CACHE_FORMAT,
            "catalog": CATALOG_FORMAT,
            "netfleet": __version__,
            "question": question,
            "parts": parts,
        },
        sort_keys=True,
        default=repr,
    )
    return sha256(text.encode()).hexdigest()


def _read(entry: Path, load: Callable[[Any], T | None]) -> T | None:
    try:
        doc = loads_back(read_back(entry, MAX_ENTRY_BYTES, own=True))
        if doc.pop("entry") != entry.name:  # one of ours, renamed: another question's
            return None
        return load(doc)
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def plain(value: Any) -> bool:
    """Made of JSON's plain values only (str, numbers, bool, None, lists, string-keyed dicts)."""
    if isinstance(value, (list, tuple)):
        return all(plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and plain(v) for k, v in value.items())
    return isinstance(value, _PLAIN)


def _write(folder: Path, entry: Path, answer: Any) -> None:
    """Keep the answer (when it is made of plain values); a catalog that cannot take it (read
    only, full) still gets its cheat sheet."""
    names = getattr(answer, "__slots__", None)
    if not names:  # its fields cannot be told
        return
    doc = {name: getattr(answer, name) for name in names}
    if not plain(doc):
        return
    try:
        import re

        checked_dir(folder.parent, folder.name)  # made, never a link (netfleet.durable)
        atomic_write(entry, json.dumps({**doc, "entry": entry.name}).encode(), prefix=TEMP_PREFIX)
        prune(folder, re.compile(_ENTRY).match, KEEP)
    except (OSError, LinkRefused):  # the answer stands without its cache entry
        return


def prune(folder: Path, ours: Callable[[str], Any], keep: int) -> None:
    """Delete the oldest entries beyond ``keep`` (only regular files whose name is ``ours``)."""
    entries = []
    with os.scandir(folder) as it:
        for e in it:
            if ours(e.name) and e.is_file(follow_symlinks=False):
                entries.append((e.stat(follow_symlinks=False).st_mtime_ns, e.name))
    for _, name in sorted(entries)[:-keep]:
        (folder / name).unlink(missing_ok=True)
