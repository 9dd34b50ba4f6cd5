"""Raw results that wait un-ingested: the cheap check behind "N raw results under ROOT are not
in the catalog yet" (issue 9: silence is a warning).

Cheap: the raw files are *listed*, never opened — a raw file is named ``<run_id>.json.gz`` and
never changes once written, so its name is compared with the catalog's ``run_id`` column (read
from the committed runs parts alone). A file an earlier ingest rejected (not a netfleet result)
counts too: ``netfleet ingest`` names it and says why.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from netfleet.catalog.layout import committed_run_ids
from netfleet.errors import NetfleetError

if TYPE_CHECKING:
    from netfleet.store.root import RawStore

RAW_SUFFIX = ".json.gz"


@dataclass(frozen=True)
class Pending:
    """How many raw files under ``root`` have no run in the catalog."""

    root: str
    count: int

    def note(self) -> str:
        files, are = ("raw result", "is") if self.count == 1 else ("raw results", "are")
        return (
            f"{self.count} {files} under {self.root} {are} not in the catalog yet (new, or "
            f"rejected by an earlier ingest): run `netfleet ingest -r {self.root}`"
        )


def catalog_run_ids(catalog_dir: str | os.PathLike[str]) -> set[str]:
    """Every run_id of the committed batches (their ids files; runs parts only without one)."""
    return committed_run_ids(Path(catalog_dir))


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


def _local_path(results: RawStore | str | os.PathLike[str]) -> Path | None:
    """The directory of a local root given as a path (``file://`` URLs and opened roots go
    through the store)."""
    if isinstance(results, os.PathLike) or (isinstance(results, str) and "://" not in results):
        return Path(os.fspath(results)).expanduser()
    from netfleet.store.root import ResultsRoot

    return results.path if isinstance(results, ResultsRoot) else None


def pending_raw(
    results: RawStore | str | os.PathLike[str], catalog_dir: str | os.PathLike[str]
) -> Pending | None:
    """The raw files under ``results`` whose run is not in the catalog at ``catalog_dir``;
    None when there are none, or when ``results`` is a local path that does not exist (nothing
    to say about a root that was never written)."""
    try:
        local = _local_path(results)
        if local is not None:  # no store (nor its pydantic models) for a local root: start-up
            if not local.is_dir():
                return None
            where, names = str(local), _local_names(local)
        else:
            from netfleet.store.root import as_root

            root = as_root(results)
            where, names = root.url, [str(ref).rsplit("/", 1)[-1] for ref in root.files()]
        if not names:
            return None
        known = catalog_run_ids(catalog_dir) if Path(catalog_dir).is_dir() else set()
    except (NetfleetError, OSError, ValueError):
        return None  # a hint must never break the answer it is attached to
    count = sum(name.removesuffix(RAW_SUFFIX) not in known for name in names)
    return Pending(where, count) if count else None


def pending_notes(
    results: RawStore | str | os.PathLike[str] | None, catalog_dir: str | os.PathLike[str]
) -> list[str]:
    """The note for a listing over the catalog: ``[]`` or one line naming the ingest to run."""
    if results is None:
        return []
    found = pending_raw(results, catalog_dir)
    return [found.note()] if found else []
