"""Raw results that wait un-ingested: the cheap check behind "N raw results under ROOT are not
in the catalog yet" (issue 9: silence is a warning).

Cheap: the raw files are *listed*, never opened — a raw file is named ``<run_id>.json.gz`` and
never changes once written, so its name is compared with the catalog's ``run_id`` column (read
from the committed runs parts alone). A file an earlier ingest rejected (not a netfleet result)
counts too: ``netfleet ingest`` names it and says why.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from netfleet.catalog.layout import committed_run_ids
from netfleet.errors import NetfleetError
from netfleet.plain import Frozen

if TYPE_CHECKING:
    from netfleet.store.root import RawStore

RAW_SUFFIX = ".json.gz"


class Pending(Frozen):
    """How many raw files under ``root`` have no run in the catalog (read-only)."""

    __slots__ = ("root", "count")  # noqa: RUF023

    root: str
    count: int

    def __init__(self, root: str, count: int) -> None:
        self._set(root, count)

    def note(self) -> str:
        files, are = ("raw result", "is") if self.count == 1 else ("raw results", "are")
        return (
            f"{self.count} {files} under {self.root} {are} not in the catalog yet (new, or "
            f"rejected by an earlier ingest): run `netfleet ingest -r {self.root}`"
        )


def _local_names(path: Path) -> list[str]:
    """The raw file names of a local root (``d=*/campaign=*/*.json.gz``, temp files left out),
    by scandir: no Path objects, no sorting — this runs before every listing."""
    names: list[str] = []
    for day in os.scandir(path):
        if not (day.name.startswith("d=") and day.is_dir(follow_symlinks=False)):
            continue
        for camp in os.scandir(day.path):
            if not (camp.name.startswith("campaign=") and camp.is_dir(follow_symlinks=False)):
                continue
            names += [
                f.name
                for f in os.scandir(camp.path)
                if f.name.endswith(RAW_SUFFIX) and not f.name.startswith(".")
            ]
    return names


def pending_raw(
    results: RawStore | str | os.PathLike[str], catalog_dir: str | os.PathLike[str]
) -> Pending | None:
    """The raw files under ``results`` whose run is not in the catalog at ``catalog_dir``;
    None when there are none, or when ``results`` is a local path that does not exist (nothing
    to say about a root that was never written)."""
    if isinstance(results, str | os.PathLike):
        text = os.fspath(results)
        if "://" not in text and not os.path.isdir(os.path.expanduser(text)):
            return None  # a root never written, told without loading the store (start-up)
    from netfleet.store.root import ResultsRoot, as_root

    try:
        root = as_root(results)  # the store loads no models to list a root (start-up)
        if isinstance(root, ResultsRoot) and not root.path.is_dir():
            return None
        names = (
            _local_names(root.path)
            if isinstance(root, ResultsRoot)
            else [str(ref).rsplit("/", 1)[-1] for ref in root.files()]
        )
        if not names:
            return None
        known = committed_run_ids(Path(catalog_dir)) if Path(catalog_dir).is_dir() else set()
    except (NetfleetError, OSError, ValueError):
        return None  # a hint must never break the answer it is attached to
    count = sum(name.removesuffix(RAW_SUFFIX) not in known for name in names)
    return Pending(root.url, count) if count else None


def pending_notes(
    results: RawStore | str | os.PathLike[str] | None, catalog_dir: str | os.PathLike[str]
) -> list[str]:
    """The note for a listing over the catalog: ``[]`` or one line naming the ingest to run."""
    if results is None:
        return []
    found = pending_raw(results, catalog_dir)
    return [found.note()] if found else []


def catalog_notes(
    results: RawStore | str | os.PathLike[str] | None, catalog_dir: str | os.PathLike[str]
) -> list[str]:
    """The notes of a report over the catalog's intervals: :func:`pending_notes`, and how
    many interval rows the ``intervals`` view leaves out for a rate no link can carry
    (:func:`netfleet.catalog.views.impossible_note`)."""
    from netfleet.catalog.views import impossible_note

    return impossible_note(catalog_dir) + pending_notes(results, catalog_dir)
