"""The process-wide Rich consoles. Piped output gets a wide console so tables are not cut."""

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console

from netfleet.cli.bars import bar_when_needed as bar_when_needed

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


def ask_at_terminal() -> Callable[[str], bool] | None:
    """A yes/no question for a person at the terminal (default no), or None when stdin is not
    a terminal — then only ``--yes`` confirms (a cloud launch on a real AWS endpoint)."""
    if not sys.stdin.isatty():
        return None
    import typer

    return lambda question: typer.confirm(question, default=False)
