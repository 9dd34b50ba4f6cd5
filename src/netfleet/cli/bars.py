"""A progress bar shown only when there is work: nothing of Rich is loaded until then (an import
that finds nothing changed prints no bar and loads no Rich)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (2.5 ms a command)
if TYPE_CHECKING:
    from typing import Any


@contextmanager
def bar_when_needed(label: str) -> Iterator[Callable[[int, int], None]]:
    """:func:`netfleet.cli.console.file_bar`, shown only once there is work left (``done <
    total``) and on stderr when it is a terminal: a command that usually has nothing to build
    (``sql``, ``export``) prints nothing extra, and piped stderr gets no bar's empty line."""
    from contextlib import ExitStack

    with ExitStack() as stack:
        shown: list[tuple[Any, Any]] = []  # (Progress, TaskID): rich.progress loaded if shown
        terminal = sys.stderr.isatty()

        def tick(done: int, total: int) -> None:
            if not shown and done < total and terminal:
                from rich.console import Console
                from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

                bar = stack.enter_context(
                    Progress(
                        TextColumn(label),
                        BarColumn(),
                        MofNCompleteColumn(),
                        console=Console(stderr=True, highlight=False),
                        transient=True,
                    )
                )
                shown.append((bar, bar.add_task(label, total=total)))
            if shown:
                bar, task = shown[0]
                bar.update(task, completed=done, total=total)

        yield tick
