"""The files an import names: files, folders walked recursively, quoted globs — listed without
opening any file and without loading the readers (a no-op import by reference lists and stats
only)."""

from __future__ import annotations

import glob as globmod
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from netfleet.errors import InputError

SUFFIXES = (".json", ".json.gz", ".jsonl", ".jsonl.gz", ".csv", ".csv.gz", ".txt", ".txt.gz")


def expand_sources(sources: Iterable[str], follow_links: bool = False) -> Iterator[Path]:
    """Files named, found under folders, or matched by globs; a source matching nothing is an
    input error. Links and special files (FIFOs, devices) found are listed too — :func:`prepare`
    refuses them with the reason — and a linked folder is walked only with ``follow_links``."""
    for src in sources:
        path = Path(src)
        if path.is_dir():
            found = sorted(_walk(path, follow_links))
        elif path.exists() or path.is_symlink():
            found = [path]
        else:
            found = sorted(Path(p) for p in globmod.glob(src, recursive=True) if not _is_dir(p))
        if not found:
            raise InputError(
                f"{src}: no such file, folder or matching glob",
                hint="pass iperf3 JSON or iperf 2 output (.json .csv .txt, .gz), folders or globs",
            )
        yield from found


def _is_dir(path: str) -> bool:
    return os.path.isdir(path) and not os.path.islink(path)


def _walk(top: Path, follow_links: bool) -> Iterator[Path]:
    """The importable names under ``top``, and the links to folders not followed."""
    for folder, dirs, files in os.walk(top, followlinks=follow_links):
        here = Path(folder)
        yield from (here / f for f in files if f.endswith(SUFFIXES))
        if not follow_links:
            yield from (here / d for d in dirs if (here / d).is_symlink())
