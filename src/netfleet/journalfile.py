"""Reading an append-only JSON-lines journal that someone else may have written.

The run journal lives in the results root and the cloud intent journal in the state directory;
either may be writable by others (a shared directory). What is read back is a claim, so:

- the file is opened with ``O_NOFOLLOW | O_NONBLOCK`` and must be a regular file (``fstat``):
  a FIFO, a device or a directory cannot make netfleet block or read forever, a link cannot
  make it read a file elsewhere;
- it may hold at most :data:`MAX_JOURNAL_BYTES`;
- a record longer than :data:`MAX_RECORD_BYTES`, nested deeper than :data:`MAX_DEPTH`, not
  JSON or not an object is skipped — counted with its line number and the reason — and never
  stops the records after it (the parser's own ``RecursionError`` on a line nested 100,000
  deep is caught; the depth of what parsed is measured without recursion).

Other files netfleet reads back from such places follow the same rules through
:mod:`netfleet.readback`.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netfleet.errors import StoreError
from netfleet.readback import MAX_DEPTH, deeper_than

#: a journal larger than this is refused (a run journal grows by about 1 KB per run)
MAX_JOURNAL_BYTES = 256 * 1024 * 1024
#: a longer line is no record netfleet wrote
MAX_RECORD_BYTES = 1024 * 1024


@dataclass
class Records:
    """The records of a journal, and the lines skipped (line number, reason)."""

    records: list[dict[str, Any]] = field(default_factory=list)
    #: the line number of each record
    lines: list[int] = field(default_factory=list)
    skipped: list[tuple[int, str]] = field(default_factory=list)

    def summary(self, path: Path) -> str | None:
        """One line saying what was skipped in ``path``, or None."""
        if not self.skipped:
            return None
        shown = ", ".join(f"line {n}: {why}" for n, why in self.skipped[:3])
        more = f" and {len(self.skipped) - 3} more" if len(self.skipped) > 3 else ""
        return f"skipped {len(self.skipped)} unreadable record(s) in {path} ({shown}{more})"


def open_regular(path: Path, flags: int, mode: int = 0o644) -> int:
    """An fd for ``path``, opened without following a link or blocking, and only if it is a
    regular file; StoreError naming it otherwise (FileNotFoundError passes through)."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    except FileNotFoundError:
        raise
    except OSError as exc:
        with contextlib.suppress(OSError):
            if not stat.S_ISREG(os.lstat(path).st_mode):  # a link (ELOOP), a FIFO (ENXIO), …
                raise _not_regular(path) from None
        raise StoreError(
            f"cannot open the journal {path}: {exc.strerror}",
            hint="check that netfleet may read and write it",
        ) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise _not_regular(path)
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    return fd


def _not_regular(path: Path) -> StoreError:
    return StoreError(
        f"the journal {path} is not a regular file: refused",
        hint="remove it (a symbolic link, FIFO, device or directory is never netfleet's journal)",
    )


def read_journal(path: Path) -> Records:
    """Every record of the journal at ``path`` (none if there is no file). StoreError if it is
    not a regular file or larger than :data:`MAX_JOURNAL_BYTES`."""
    try:
        fd = open_regular(path, os.O_RDONLY)
    except FileNotFoundError:
        return Records()
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(MAX_JOURNAL_BYTES + 1)
    if len(data) > MAX_JOURNAL_BYTES:
        raise StoreError(
            f"the journal {path} is larger than {MAX_JOURNAL_BYTES:,} bytes: refused",
            hint="it is not a journal netfleet wrote; move it away",
        )
    return parse_records(data)


def parse_records(data: bytes) -> Records:
    """The JSON objects of ``data``, one per line; a torn last line (a crash mid-write) or any
    other bad line is skipped with its reason."""
    out = Records()
    for number, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        if len(line) > MAX_RECORD_BYTES:
            out.skipped.append((number, f"longer than {MAX_RECORD_BYTES:,} bytes"))
            continue
        try:
            rec = json.loads(line)
        except RecursionError:
            why = f"nested more than {MAX_DEPTH} levels deep"
        except ValueError:
            why = "not JSON"
        else:
            if not isinstance(rec, dict):
                why = "not a JSON object"
            elif deeper_than(rec, MAX_DEPTH):
                why = f"nested more than {MAX_DEPTH} levels deep"
            else:
                out.records.append(rec)
                out.lines.append(number)
                continue
        out.skipped.append((number, why))
    return out
