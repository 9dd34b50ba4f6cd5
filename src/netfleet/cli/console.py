"""The process-wide Rich consoles. Piped output gets a wide console so tables are not cut."""

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console

console = Console(highlight=False, width=None if sys.stdout.isatty() else 160)


@contextmanager
def file_bar(label: str) -> Iterator[Callable[[int, int], None]]:
    """A transient ``label [bar] done/total`` line; yields the ``progress(done, total)``
    callback that ``ingest`` and ``import`` call (the total is known only once they start)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    with Progress(
        TextColumn(label), BarColumn(), MofNCompleteColumn(), console=console, transient=True
    ) as progress:
        task = progress.add_task(label, total=None)

        def tick(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        yield tick
