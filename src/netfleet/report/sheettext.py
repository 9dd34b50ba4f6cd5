"""A cheat sheet drawn as a table, kept beside its catalog (issue 26): a no-op re-run prints the
text it drew last time without loading Rich, which costs a quarter of that re-run.

The text is kept by :func:`netfleet.catalog.sheetcache.cached_text` under a key holding
everything it depends on: the sheet itself (columns, rows, title, notes, decimals), stdout's
encoding, the environment Rich reads (colour, width, terminal kind) and the stat of Rich's own
drawing files and of the renderer (:mod:`netfleet.report.output`) — another version, another
environment, another answer draws again. Only for stdout that is not a terminal: the CLI's
console then has a fixed width (:mod:`netfleet.cli.console`); a terminal's width and colours
are Rich's to find out. Only text without control characters (newlines aside) is kept or read
back: a coloured sheet (``FORCE_COLOR``) is drawn every time, and bytes someone put in the
cache can never send control sequences on.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from pathlib import Path

from netfleet.tabular import Tabular

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (2.5 ms a command)
if TYPE_CHECKING:
    from typing import Any

#: what Rich reads from the environment when it draws (colour, width, terminal kind)
RICH_ENV = ("FORCE_COLOR", "NO_COLOR", "TERM", "COLORTERM", "TTY_COMPATIBLE",
            "TTY_INTERACTIVE", "COLUMNS", "LINES", "JUPYTER_COLUMNS", "JUPYTER_LINES")  # fmt: skip
#: control characters: C0 but newline, DEL, C1 (a kept text holds none)
_CONTROLS = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")
#: Rich's files that draw a table (their stat is in the key)
RICH_FILES = ("console.py", "table.py", "box.py", "text.py", "segment.py")


def drawn(where: Path | str, sheet: Tabular, draw: Callable[[Tabular], str]) -> str:
    """``draw(sheet)``, the text of the sheet as a table on stdout, read back when this
    catalog (``where``) drew the same sheet under the same conditions before."""
    import importlib.util

    from netfleet.catalog.sheetcache import cached_text

    rich = importlib.util.find_spec("rich")
    # the renderer's file, found as importing it would set its __file__, not imported
    renderer = importlib.util.find_spec("netfleet.report.output")
    files = [(renderer and renderer.origin) or ""]
    if rich is not None and rich.submodule_search_locations:
        top = next(iter(rich.submodule_search_locations))
        files += [os.path.join(top, name) for name in RICH_FILES]
    key = {
        "sheet": [sheet.columns, sheet.rows, sheet.title, sheet.notes, sheet.decimals],
        "encoding": getattr(sys.stdout, "encoding", None),
        "env": {name: os.environ.get(name) for name in RICH_ENV},
        "files": [_stamp(f) for f in files],
    }
    return cached_text(where, key, lambda: draw(sheet), keep=plain_text)


def plain_text(text: str) -> bool:
    """No control character but newlines: printed as it is, it cannot drive a terminal."""
    return _CONTROLS.search(text) is None


def _stamp(path: str) -> list[Any]:
    try:
        info = os.stat(path)
    except OSError:
        return [path, None]
    return [path, info.st_size, info.st_mtime_ns, info.st_ino]
