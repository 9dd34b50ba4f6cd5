"""Writing a report's files: whole or not at all, readable as the umask allows. Both renderers
(:mod:`netfleet.report.html`, :mod:`netfleet.report.markdown`) write through it."""

from __future__ import annotations

import os
from pathlib import Path

from netfleet.durable import fsync_dir, write_temp


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through :mod:`netfleet.durable` (temp file, fsync, rename):
    never half-written; readable as the umask allows (a report is for sharing, not 0600)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = write_temp(path.parent, data, prefix=f".{path.name}.")
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)
